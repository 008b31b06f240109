"""How many pages go in one on-demand request: the smallest of the configured count, the API's limits and the token budget.

The estimates and the figures behind them: docs/module-notes.md "batchlane.ondemand.planner".
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
        """The page's text layer ("" for a scan), extracted on first use: the coverage check. Not for a page
        whose content read was cut short (past the scan bound, out of time): pypdf's extraction of such a
        page is unbounded (30 MB of operators: 10 s, then LimitReachedError), and it is not judged."""
        return text_layer(self.page.pdf_bytes) if self.page.estimate_known else ""


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
