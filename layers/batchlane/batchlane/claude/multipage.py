"""Several pages in one request, and splitting the answer back by page markers.

Only on-demand pages are grouped. A group of one page is built by
:func:`build_page_request`, byte-for-byte the request the batch lane captures, so its
prompt hash is the one primed results are matched on; groups of two or more use their
own instruction (and so their own hash) and are never batched.

The answer of a group is trusted only when it carries exactly one ``<!-- Page N -->``
marker per page, in page order, with nothing but whitespace before the first. Anything
else (a skipped, repeated, reordered or unknown marker, or a preamble) returns a
:class:`MarkerProblem` and the caller halves the group: a wrong split would put a
page's text under another page's marker, which is worse than one more request.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from batchlane.claude.request import ConverterConfig, PageRequest, build_page_request
from batchlane.domain.records import record_id

MULTI_PAGE_INSTRUCTION = (
    "Convert each of these PDF pages to Markdown, in the order given. Before each page's Markdown write "
    "its marker on a line of its own: <!-- Page N -->, where N is the number in the page's name "
    "(page-N). Write every marker exactly once, even for a page without text."
)

# Tolerant of spacing and case (a model may write "<!--page 7-->"), strict on the number.
_MARKER = re.compile(r"<!--\s*page\s+(\d+)\s*-->", re.IGNORECASE)


@dataclass(frozen=True)
class MarkerProblem:
    reason: str  # missing | repeated | out_of_order | unexpected | preamble


def build_pages_request(*, chunk_index: int, pages: Sequence[tuple[int, bytes]], config: ConverterConfig) -> PageRequest:
    """One request for ``pages`` ((page number, one-page PDF) in page order)."""
    if not pages:
        raise ValueError("a request needs at least one page")
    if len(pages) == 1:
        number, data = pages[0]
        return build_page_request(chunk_index=chunk_index, page_number=number, pdf_bytes=data, config=config)
    numbers = tuple(number for number, _ in pages)
    return PageRequest(
        record_id=f"{record_id(chunk_index, numbers[0])}-{numbers[-1]}",
        model_id=config.model_id,
        system=config.system,
        text=MULTI_PAGE_INSTRUCTION,
        max_tokens=config.max_tokens,
        temperature=config.temperature,
        documents=tuple((f"page-{number}", data) for number, data in pages),
        page_numbers=numbers,
        page_form=config.page_form,
    )


def split_by_markers(text: str, expected: Sequence[int]) -> dict[int, str] | MarkerProblem:
    """Each expected page's text, or why the answer cannot be trusted."""
    matches = list(_MARKER.finditer(text))
    numbers = [int(m.group(1)) for m in matches]
    if not matches or text[: matches[0].start()].strip():
        return MarkerProblem("preamble" if matches else "missing")
    if any(n not in expected for n in numbers):
        return MarkerProblem("unexpected")
    if len(set(numbers)) != len(numbers):
        return MarkerProblem("repeated")
    if len(numbers) != len(expected):
        return MarkerProblem("missing")
    if numbers != list(expected):
        return MarkerProblem("out_of_order")
    bounds = [m.end() for m in matches]
    starts = [m.start() for m in matches[1:]] + [len(text)]
    return {number: text[begin:end].strip() for number, begin, end in zip(numbers, bounds, starts, strict=True)}


def strip_own_marker(text: str, page_number: int) -> str:
    """A single-page answer may still open with its page's marker; the assembler adds its own."""
    match = _MARKER.match(text.lstrip())
    if match and int(match.group(1)) == page_number:
        return text.lstrip()[match.end() :].strip()
    return text
