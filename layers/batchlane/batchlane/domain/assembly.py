"""The document pass at Assemble: per-page Markdown → one document (docs/architecture.md "Assembly").

Two streaming passes over the pages in order, both pure: ``survey`` keeps only what the
page edges say (a few candidate lines a page: domain/furniture.py decides which are running
heads, feet and folios), then ``assemble_document`` yields the Markdown piece by piece, holding
back one block at a time so a paragraph, table or list cut by a page break is joined, the next
page's marker kept inline where the page turned: every page's text stays under its own marker.
Page text is made safe first (domain/safe_markdown.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from batchlane.domain.furniture import (
    Furniture,
    FurnitureSurvey,
    is_figure,
    strip_furniture,
)
from batchlane.domain.markdown import PageText, page_marker, render_page, truncated_marker
from batchlane.domain.safe_markdown import safe_markdown

MAX_REMEMBERED_HEADINGS = 10_000  # memory stays bounded on any document

_LIGATURES = {"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st"}
_DROPPED = {chr(c) for c in range(0x20) if c not in (0x09, 0x0A)} | {chr(0x7F), "\u00ad", "\ufffd"} | {chr(c) for c in range(0x80, 0xA0)}
_DROPPED |= {chr(c) for c in range(0xD800, 0xE000)}  # a lone surrogate (a JSON "\ud800" escape) is no character: UTF-8 cannot write it
_CLEAN_TABLE = str.maketrans({**_LIGATURES, "\t": " ", **{ch: None for ch in _DROPPED}})
_LINE_END_HYPHEN = re.compile(r"(?<=[^\W\d_])-\n(?=[a-zß-ÿ])")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_NUMBERED = re.compile(
    r"^(?:(?:chapter|appendix|section)\s+)?(\d{1,3}(?:\.\d{1,3})*)\.?(?=\s|$)|^(?:chapter|appendix)\s+[A-Z]\b|^[A-Z](\.\d{1,3})+(?=\s|$)", re.IGNORECASE
)
_LIST_ITEM = re.compile(r"^\s*(?:([-*+])|(\d+)[.)])\s+")
_TERMINAL = re.compile(r"[.!?…:;]['\"”’»)\]]*$")


def clean_text(text: str) -> str:
    """No C0/C1 control characters nor lone surrogates, ligatures spelled out, line-end hyphenation resolved; idempotent."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(_CLEAN_TABLE)
    return _LINE_END_HYPHEN.sub("", text) if "-\n" in text else text  # the scan is most of the pass's time


def page_blocks(markdown: str) -> list[str]:
    """A page's Markdown as blocks split at blank lines; a fenced code block stays one block."""
    blocks: list[str] = []
    current: list[str] = []
    fenced = False
    for line in markdown.strip().split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if not line.strip() and not fenced:
            if current:
                blocks.append("\n".join(current).strip("\n"))
                current = []
            continue
        current.append(line.rstrip())
    if current:
        blocks.append("\n".join(current).strip("\n"))
    return [b for b in blocks if b.strip()]


def page_text_blocks(markdown: str) -> list[str]:
    """A page's Markdown as the document pass reads it: cleaned, made safe, in blocks."""
    return page_blocks(safe_markdown(clean_text(markdown)))


def _kind(block: str) -> str:
    first = block.lstrip()
    if first.startswith("#") and _HEADING.match(first.split("\n", 1)[0]):
        return "heading"
    if first.startswith("|"):
        return "table"
    if first.startswith(("```", "~~~")):
        return "code"
    if first.startswith(("<", "&lt;")):  # a comment, or markup from the page made text (safe_markdown): never joined
        return "comment"
    if first.startswith(("![", "*[Figure", "$$", ">")):
        return "other"
    if _LIST_ITEM.match(first):
        return "list"
    return "paragraph"


def _is_figure(block: str) -> bool:
    return is_figure(block)


def survey(pages: Iterable[PageText]) -> Furniture:
    """Pass 1 over all pages: which edge lines are running heads, feet and folios (domain/furniture.py)."""
    seen = FurnitureSurvey()
    for page in pages:
        survey_page(seen, page)
    return seen.furniture()


def survey_page(seen: FurnitureSurvey, page: PageText) -> None:
    """One page into the survey: a failed or empty page says nothing about the edges."""
    if page.status == "failed" or not page.markdown.strip():
        return
    seen.add_blocks(page.page_number, page_text_blocks(page.markdown))


@dataclass
class Headings:
    """Heading levels across the document: numbering decides, else the level first seen; one ``#`` title, no level skipped."""

    title_seen: bool = False
    previous: int = 1
    first_levels: dict[str, int] = field(default_factory=dict)  # an unnumbered heading keeps the level it first had

    def level(self, block: str) -> str:
        match = _HEADING.match(block)
        if not match or "\n" in block:
            return block
        text = match.group(2)
        level = len(match.group(1))
        numbered = _NUMBERED.match(text)
        if numbered:  # 1 → ##, 1.1 → ###, "Chapter 3" / "Appendix B" → ##, B.1 → ###
            level = min(6, numbered.group(0).count(".", 0, len(numbered.group(0).rstrip("."))) + 2)
        elif text.lower() in self.first_levels:
            level = self.first_levels[text.lower()]  # "Exercises" at the level it had the first time
        else:
            if level == 1 and self.title_seen:
                level = 2  # the model saw one page: only the document's first title is ``#``
            level = min(level, self.previous + 1)
            if len(self.first_levels) < MAX_REMEMBERED_HEADINGS:
                self.first_levels[text.lower()] = level
        self.title_seen = self.title_seen or level == 1
        self.previous = level
        return f"{'#' * level} {text}"


@dataclass(frozen=True)
class Figure:
    """An image file of a page's figure, written beside the Markdown (``book.images/p12-1.png``)."""

    name: str  # p<page>-<k>.png
    width: int  # pixels
    height: int


_DESCRIPTION = re.compile(r"^\*\[Figure: (.+)\]\*$|^\*([^*\n].*[^*\n])\*$|^_([^_\n].*[^_\n])_$")


# The prompt asks for each figure's place on the page at the end of its description (claude/request.py):
# ``(region: left, top, right, bottom)`` as fractions of the page's width and height from its top left.
_REGION = re.compile(r"\s*\(region:\s*([0-9.]+)\s*,\s*([0-9.]+)\s*,\s*([0-9.]+)\s*,\s*([0-9.]+)\s*\)\s*\.?\s*$")
Region = tuple[float, float, float, float]  # left, top, right, bottom: fractions of the page, from its top left


def split_region(text: str) -> tuple[str, Region | None]:
    """A description without its region, and the region when it is a box inside the page (else None)."""
    match = _REGION.search(text)
    if not match:
        return text, None
    try:
        left, top, right, bottom = (float(v) for v in match.groups())
    except ValueError:
        return text, None
    rest = text[: match.start()].rstrip() or text
    if not (0.0 <= left < right <= 1.0 and 0.0 <= top < bottom <= 1.0):
        return rest, None
    return rest, (left, top, right, bottom)


def _described(blocks: list[str]) -> list[tuple[int, str, Region | None]]:
    out = []
    for index, block in enumerate(blocks):
        match = _DESCRIPTION.match(block.strip())
        if match:
            out.append((index, *split_region(next(g for g in match.groups() if g))))
    return out


def figure_descriptions(blocks: list[str]) -> list[tuple[int, str]]:
    """(block index, text) of each figure description the model wrote: an italic sentence alone, its region left out."""
    return [(index, text) for index, text, _ in _described(blocks)]


def figure_regions(blocks: list[str]) -> list[Region]:
    """The region of each figure description that gives one, in the page's order: where Assemble crops a drawing."""
    return [region for _, _, region in _described(blocks) if region is not None]


def link_figures(blocks: list[str], figures: list[Figure], folder: str, page_number: int) -> list[str]:
    """Each figure linked where the model described it, its description as alt text; the rest after the page."""
    if not figures:
        return blocks
    out = list(blocks)
    described = figure_descriptions(blocks)
    for (index, text), figure in zip(described, figures, strict=False):
        out[index] = f"![{_alt(text)}]({folder}/{figure.name})"
    out += [f"![Figure {k} of page {page_number}]({folder}/{f.name})" for k, f in enumerate(figures[len(described) :], start=len(described) + 1)]
    return out


def _alt(text: str) -> str:
    return text.replace("[", "(").replace("]", ")").strip()


def _cells(row: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]


def _is_separator(row: str) -> bool:
    return bool(re.fullmatch(r"\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?", row.strip()))


def _join_table(upper: str, marker: str, lower: str) -> str | None:
    """One table when the next page's table has the same columns (header repeated or not); the marker goes in the
    last cell of the page's last row, so the table stays one and the next page's rows stay under their marker."""
    top, bottom = upper.split("\n"), lower.split("\n")
    if len(top) < 2 or not _is_separator(top[1]) or len(_cells(top[0])) != len(_cells(bottom[0])):
        return None
    if len(bottom) >= 2 and _is_separator(bottom[1]):
        bottom = bottom[2:] if _cells(bottom[0]) == _cells(top[0]) else bottom[:1] + bottom[2:]
    if not bottom:
        return None  # only the header repeated: nothing of the next page to join
    row = len(top) - 1 if len(top) > 2 else 0  # the page's last row; its header when only that stood before the break
    last = top[row].rstrip()
    top[row] = f"{last[:-1].rstrip()} {marker} |" if last.endswith("|") and not last.endswith("\\|") else f"{last} {marker}"
    return "\n".join(top + bottom)


def _join_list(upper: str, marker: str, lower: str) -> str | None:
    """One list when the next page goes on with the same kind of items; the marker ends the page's last line."""
    items = [m for m in map(_LIST_ITEM.match, upper.split("\n")) if m]
    below = _LIST_ITEM.match(lower)
    if not items or not below or bool(items[-1].group(1)) != bool(below.group(1)):
        return None
    return f"{upper} {marker}\n{lower}"


def _join_paragraph(upper: str, marker: str, lower: str) -> str | None:
    """A sentence cut by the page break: one paragraph, the marker inline where the page turned."""
    if _TERMINAL.search(upper):
        return None
    head, _, tail = lower.partition(" ")
    if re.search(r"[^\W\d_]-$", upper) and head[:1].islower():
        return f"{upper[:-1]}{head} {marker} {tail}".rstrip()
    if not (lower[:1].islower() or upper[-1:].islower() or upper.endswith(",")):
        return None
    return f"{upper} {marker} {lower}"


def _join(upper: str, marker: str, lower: str) -> str | None:
    """The two blocks as one, the marker inside where the page turned; None when they are not one block cut in two."""
    kinds = (_kind(upper), _kind(lower))
    if kinds == ("paragraph", "paragraph"):
        return _join_paragraph(upper, marker, lower)
    if kinds == ("table", "table"):
        return _join_table(upper, marker, lower)
    if kinds == ("list", "list"):
        return _join_list(upper, marker, lower)
    if kinds == ("list", "paragraph") and "\n" not in lower:  # the list's last item runs on: its sentence goes on
        return _join_paragraph(upper, marker, lower)
    return None


class _Writer:
    """Blocks out as text pieces, one blank line between them."""

    def __init__(self) -> None:
        self.started = False

    def block(self, text: str) -> str:
        piece = f"\n\n{text}" if self.started else text
        self.started = True
        return piece


def _in_order(pages: Iterable[PageText], expected_pages: int) -> Iterator[PageText]:
    expected = 1
    for page in pages:
        if page.page_number != expected:
            raise ValueError(f"page {expected} has no result (got page {page.page_number})")
        expected += 1
        yield page
    if expected - 1 != expected_pages:
        raise ValueError(f"{expected_pages - expected + 1} page(s) have no result, first {expected}")


def assemble_document(
    pages: Iterable[PageText],
    furniture: Furniture,
    *,
    expected_pages: int,
    figures: Mapping[int, list[Figure]] | None = None,
    figure_folder: str = "images",
) -> Iterator[str]:
    """Pass 2: the document's Markdown, piece by piece; every page keeps its marker, in order, and its text after it.

    ``pages`` come in page order; a page missing or out of order is an error, never skipped.
    ``figures`` (page → its image files) are linked relative to the Markdown, under ``figure_folder``.
    """
    out = _Writer()
    headings = Headings()
    carry: str | None = None  # the last text block so far: the next page may continue it
    held: list[str] = []  # the figures after it on its own page: they follow it, or precede it when it is joined

    def flush() -> Iterator[str]:
        nonlocal carry
        if carry is not None:
            yield out.block(carry)
            carry = None
        for figure in held:
            yield out.block(figure)
        held.clear()

    for page in _in_order(pages, expected_pages):
        marker = page_marker(page.page_number)
        if page.status == "failed":
            yield from flush()
            yield out.block(render_page(page))
            continue
        kept, _ = strip_furniture(page_text_blocks(page.markdown), page.page_number, furniture)
        blocks = [headings.level(b) for b in kept]
        blocks = link_figures(blocks, (figures or {}).get(page.page_number, []), figure_folder, page.page_number)
        if page.status == "truncated":
            blocks.append(truncated_marker(page.page_number))
        joined = _join(carry, marker, blocks[0]) if carry is not None and blocks else None
        if joined:
            for figure in held:  # the previous page's figures stay on it: above the paragraph that runs on
                yield out.block(figure)
            held.clear()
            carry = joined
            blocks = blocks[1:]
        else:
            yield from flush()
            yield out.block(marker)
        if blocks:
            yield from flush()
            # Figures after the page's last text are held, so that text can still join the next page.
            last = len(blocks) - 1
            while last > 0 and _is_figure(blocks[last]):
                last -= 1
            for block in blocks[:last]:
                yield out.block(block)
            carry = blocks[last]
            held.extend(blocks[last + 1 :])
    yield from flush()
    yield "\n"


def raw_document(pages: Iterable[PageText], *, expected_pages: int) -> Iterator[str]:
    """``assembly: none``: the page-by-page output as it always was, text cleaned only."""
    out = _Writer()
    for page in _in_order(pages, expected_pages):
        yield out.block(render_page(PageText(page.page_number, page.status, safe_markdown(clean_text(page.markdown)), page.reason)))
    yield "\n"
