"""How many pages go in one on-demand request.

The count is the smallest of the configured ``pages_per_request``, the API's limit on
documents per request, and what fits in ``max_tokens`` at the pages' estimated output.
The estimate of a page comes from the size of its own text (characters / 4, plus 25% for
Markdown syntax); a page without text (a scan) counts ``output_tokens_per_page``. The
size is the character count of the strings its content stream shows (``Page.text_chars``,
read in the same pass as the blank check), not pypdf's text extraction: that costs ~3 ms
a page, and paying it while planning held back a chunk's requests (on a 1-vCPU Lambda,
and across every chunk of the offline stack's single process). The text layer itself
is only needed for the coverage check, after the answer: :attr:`PlannedPage.layer`
extracts it then, on first use, while other requests of the chunk wait on the model.
Groups are consecutive pages, filled greedily up to ``fill`` of max_tokens, so one
dense page does not force its neighbours into single requests, and a page estimated
above the budget on its own goes alone. A group also stays within the request size limit
(``domain.limits.MAX_REQUEST_BYTES``, the pages base64-encoded plus the prompt): five pages
of 4.5 MB would make a 30 MB body, so heavy pages go two or three to a request.

The group size also follows the requests that could start right now (:meth:`RequestPlan.for_chunk`):
a chunk of few pages under a quota with room sends them in smaller groups in parallel,
which finish sooner (a 5-page answer takes five times a page's generation time); under a
busy quota, nothing can start at once and groups stay full, saving the prompt repeated
in every request. The repeated prompt is ~2% of a page's input (a page costs 1,500-3,000
tokens, plus its image), so even single pages stay within a few percent of the input.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from batchlane.domain.limits import MAX_REQUEST_BYTES, REQUEST_OVERHEAD_BYTES, encoded_size
from batchlane.ondemand.coverage import text_layer
from batchlane.pdf.split import Page

CHARS_PER_TOKEN = 4
MARKDOWN_OVERHEAD = 1.25


@dataclass(frozen=True)
class PlannedPage:
    page: Page
    estimate: int  # output tokens expected for this page

    @property
    def number(self) -> int:
        return self.page.number

    @property
    def size(self) -> int:
        """Bytes this page adds to a request body (its PDF, base64-encoded)."""
        return encoded_size(len(self.page.pdf_bytes))

    @cached_property
    def layer(self) -> str:
        """The page's text layer ("" for a scan), extracted on first use: the coverage check."""
        return text_layer(self.page.pdf_bytes)


@dataclass(frozen=True)
class RequestPlan:
    pages_per_request: int = 5
    max_documents: int = 5
    max_tokens: int = 8192
    fill: float = 0.75
    default_estimate: int = 1200
    max_request_bytes: int = MAX_REQUEST_BYTES

    @classmethod
    def from_settings(cls, settings: Any) -> RequestPlan:
        return cls(
            pages_per_request=int(settings.batchlane_pages_per_request),
            max_documents=int(settings.batchlane_max_documents_per_request),
            max_tokens=int(settings.batchlane_max_tokens),
            fill=float(settings.batchlane_output_fill),
            default_estimate=int(settings.batchlane_output_tokens_per_page),
        )

    @property
    def page_limit(self) -> int:
        return max(1, min(self.pages_per_request, self.max_documents))

    def for_chunk(self, pages: int, free: int | None, *, concurrency: int, most_parallel: int) -> tuple[RequestPlan, int]:
        """This plan sized for a chunk of ``pages`` on-demand pages when ``free`` requests could
        start right now (None: unknown, pacing off), and how many units the chunk runs at once.

        Enough groups to use the free starts, up to ``most_parallel``: ceil(pages / starts)
        pages a group, never above the page limit. Nothing free, or unknown: full groups and
        ``concurrency`` units, as always.
        """
        starts = min(free, most_parallel) if free is not None else 0
        if pages < 1 or starts < 1:
            return self, concurrency
        size = min(self.page_limit, math.ceil(pages / starts))
        groups = math.ceil(pages / size)
        return replace(self, pages_per_request=size), max(concurrency, min(starts, groups))

    def estimate(self, text_chars: int) -> int:
        return math.ceil(text_chars * MARKDOWN_OVERHEAD / CHARS_PER_TOKEN) if text_chars else self.default_estimate

    def plan(self, page: Page) -> PlannedPage:
        return PlannedPage(page, self.estimate(page.text_chars))

    def groups(self, pages: Sequence[PlannedPage]) -> list[list[PlannedPage]]:
        builder = self.builder()
        groups = [group for item in pages if (group := builder.add(item))]
        last = builder.flush()
        return [*groups, last] if last else groups

    def builder(self) -> GroupBuilder:
        return GroupBuilder(page_limit=self.page_limit, budget=self.max_tokens * self.fill, byte_budget=self.max_request_bytes - REQUEST_OVERHEAD_BYTES)


@dataclass
class GroupBuilder:
    """Groups pages one at a time, so a chunk can send its first request while it is still
    planning the rest (the same groups as :meth:`RequestPlan.groups`, in the same order)."""

    page_limit: int
    budget: float
    byte_budget: int = MAX_REQUEST_BYTES - REQUEST_OVERHEAD_BYTES
    current: list[PlannedPage] = field(default_factory=list)
    used: int = 0
    used_bytes: int = 0

    def add(self, item: PlannedPage) -> list[PlannedPage] | None:
        """Add a page; returns the previous group when this page starts a new one."""
        full = None
        too_big = self.used_bytes + item.size > self.byte_budget
        if self.current and (len(self.current) >= self.page_limit or self.used + item.estimate > self.budget or too_big):
            full, self.current, self.used, self.used_bytes = self.current, [], 0, 0
        self.current.append(item)
        self.used += item.estimate
        self.used_bytes += item.size
        return full

    def flush(self) -> list[PlannedPage] | None:
        last, self.current, self.used, self.used_bytes = self.current, [], 0, 0
        return last or None
