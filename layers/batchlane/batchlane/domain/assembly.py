"""The document pass at Assemble: per-page Markdown → one document (docs/architecture.md "Assembly").

Two streaming passes over the pages in order, both pure: ``survey`` keeps only what the
page edges say (counts of short first/last lines, which number follows the page number),
then ``assemble_document`` yields the Markdown piece by piece, holding back one block at a
time so a paragraph, table or list cut by a page break is joined. Memory is bounded by
the edge-line counts, never by the document.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from batchlane.domain.markdown import PageText, page_marker, render_page, truncated_marker

EDGE_BLOCKS = 2  # how many blocks at each end of a page may be furniture
MAX_FURNITURE_CHARS = 80  # a running head or foot is one short line
MIN_REPEATS = 3  # a line is a running head once it stands at the edge of this many pages
MAX_REMEMBERED_HEADINGS = 10_000  # memory stays bounded on any document

_LIGATURES = {"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st"}
_DROPPED = {chr(c) for c in range(0x20) if c not in (0x09, 0x0A)} | {chr(0x7F), "\u00ad", "\ufffd"} | {chr(c) for c in range(0x80, 0xA0)}
_CLEAN_TABLE = str.maketrans({**_LIGATURES, "\t": " ", **{ch: None for ch in _DROPPED}})
_LINE_END_HYPHEN = re.compile(r"(?<=[^\W\d_])-\n(?=[a-zß-ÿ])")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_NUMBERED = re.compile(
    r"^(?:(?:chapter|appendix|section)\s+)?(\d{1,3}(?:\.\d{1,3})*)\.?(?=\s|$)|^(?:chapter|appendix)\s+[A-Z]\b|^[A-Z](\.\d{1,3})+(?=\s|$)", re.IGNORECASE
)
_EDGE_NUMBER = re.compile(r"^\D{0,3}?(\d{1,5})\b|\b(\d{1,5})\D{0,3}$")
_PAGE_WORDS = re.compile(r"\b(page|p\.|of|seite|pg\.?)\b|[-–—|·•()\[\]/]", re.IGNORECASE)
_LIST_ITEM = re.compile(r"^\s*(?:([-*+])|(\d+)[.)])\s+")
_TERMINAL = re.compile(r"[.!?…:;]['\"”’»)\]]*$")
_FIGURE_BLOCK = re.compile(r"^(?:\*\[Figure: .*\]\*|!\[[^\]]*\]\([^)]*\))$")
_COMMENT = re.compile(r"^<!--.*-->$", re.DOTALL)


def clean_text(text: str) -> str:
    """No C0/C1 control characters, ligatures spelled out, line-end hyphenation resolved; idempotent."""
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


def _kind(block: str) -> str:
    first = block.lstrip()
    if first.startswith("#") and _HEADING.match(first.split("\n", 1)[0]):
        return "heading"
    if first.startswith("|"):
        return "table"
    if first.startswith(("```", "~~~")):
        return "code"
    if first.startswith("<!--") or first.startswith("<"):
        return "comment"
    if first.startswith(("![", "*[Figure", "$$", ">")):
        return "other"
    if _LIST_ITEM.match(first):
        return "list"
    return "paragraph"


def _normalise(line: str) -> str:
    line = _HEADING.sub(r"\2", line.strip())
    return " ".join(line.strip("*_ ").lower().split())


def _edge_line(block: str) -> str | None:
    """The block as a furniture candidate: one short line of text, else None."""
    if "\n" in block or len(block) > MAX_FURNITURE_CHARS or _kind(block) not in ("heading", "paragraph"):
        return None
    return _normalise(block) or None


def _edge_number(line: str) -> int | None:
    match = _EDGE_NUMBER.search(line)
    if not match:
        return None
    return int(match.group(1) or match.group(2))


def _masked(line: str) -> str:
    return re.sub(r"\d+", "#", line)


def _is_figure(block: str) -> bool:
    return bool(_FIGURE_BLOCK.match(block.strip()))


def _text_positions(blocks: list[str]) -> list[int]:
    """Indices of the page's blocks that are not figures: a figure never counts as a page edge."""
    return [index for index, block in enumerate(blocks) if not _is_figure(block)]


def _edges(blocks: list[str]) -> list[str]:
    positions = _text_positions(blocks)
    picked = positions[:EDGE_BLOCKS] + positions[max(EDGE_BLOCKS, len(positions) - EDGE_BLOCKS) :]
    return [line for line in (_edge_line(blocks[i]) for i in picked) if line]


@dataclass
class Furniture:
    """What the survey found: exact running lines, numbered ones, and the page-number offset."""

    exact: frozenset[str] = frozenset()
    numbered: frozenset[str] = frozenset()
    offset: int | None = None
    decorations: frozenset[str] = frozenset()  # figure lines repeated on many pages: a logo, a rule

    def is_furniture(self, block: str, page_number: int) -> bool:
        line = _edge_line(block)
        if line is None:
            return False
        if line in self.exact:
            return True
        if self.offset is None or _kind(block) == "heading":
            return False  # a numbered heading ("section 12") is content; only plain lines carry folios
        number = _edge_number(line)
        if number is None or number - page_number != self.offset:
            return False
        rest = _PAGE_WORDS.sub(" ", re.sub(r"\d+", " ", line)).strip()
        return not rest or _masked(line) in self.numbered


@dataclass
class FurnitureSurvey:
    """Pass 1, a page at a time: counts of short edge lines and of edge numbers less the page number."""

    pages: int = 0
    exact: Counter[str] = field(default_factory=Counter)
    masked: Counter[str] = field(default_factory=Counter)
    offsets: Counter[int] = field(default_factory=Counter)
    figures: Counter[str] = field(default_factory=Counter)

    def add(self, page: PageText) -> None:
        if page.status == "failed" or not page.markdown.strip():
            return
        self.pages += 1
        blocks = page_blocks(clean_text(page.markdown))
        lines = set(_edges(blocks))
        self.figures.update({b.strip() for b in blocks if _is_figure(b)})
        self.exact.update(lines)
        self.masked.update({_masked(line) for line in lines if re.search(r"\d", line)})
        self.offsets.update({n - page.page_number for n in (_edge_number(line) for line in lines) if n is not None})

    def furniture(self) -> Furniture:
        if self.pages < MIN_REPEATS:
            return Furniture()
        offset, support = self.offsets.most_common(1)[0] if self.offsets else (None, 0)
        return Furniture(
            exact=frozenset(line for line, count in self.exact.items() if count >= MIN_REPEATS),
            numbered=frozenset(line for line, count in self.masked.items() if count >= MIN_REPEATS),
            offset=offset if support >= max(MIN_REPEATS, self.pages // 4) else None,
            decorations=frozenset(line for line, count in self.figures.items() if count >= MIN_REPEATS),
        )


def survey(pages: Iterable[PageText]) -> Furniture:
    """Pass 1 over all pages: which short lines repeat at page edges, which edge number is the folio."""
    seen = FurnitureSurvey()
    for page in pages:
        seen.add(page)
    return seen.furniture()


def strip_furniture(blocks: list[str], page_number: int, furniture: Furniture) -> list[str]:
    """Drop running heads, feet and folios from the page's edges; nothing else.

    A page of one block keeps it: a title page or a part page says the title once, by itself.
    """
    blocks = [b for b in blocks if b.strip() not in furniture.decorations]
    positions = _text_positions(blocks)
    if len(positions) < 2:
        return blocks
    dropped: set[int] = set()
    for edge in (positions[:EDGE_BLOCKS], positions[::-1][:EDGE_BLOCKS]):
        for index in edge:
            if index in dropped or not furniture.is_furniture(blocks[index], page_number):
                break
            dropped.add(index)
    return [b for i, b in enumerate(blocks) if i not in dropped]


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


# The prompt asks for each figure's place on the page at the end of its description (converter/request.py):
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


def _join_table(upper: str, lower: str) -> str | None:
    """One table when the next page's table has the same columns (header repeated or not)."""
    top, bottom = upper.split("\n"), lower.split("\n")
    if len(top) < 2 or not _is_separator(top[1]) or len(_cells(top[0])) != len(_cells(bottom[0])):
        return None
    if len(bottom) >= 2 and _is_separator(bottom[1]):
        bottom = bottom[2:] if _cells(bottom[0]) == _cells(top[0]) else bottom[:1] + bottom[2:]
    return "\n".join(top + bottom)


def _join_list(upper: str, lower: str) -> str | None:
    items = [m for m in map(_LIST_ITEM.match, upper.split("\n")) if m]
    below = _LIST_ITEM.match(lower)
    if not items or not below or bool(items[-1].group(1)) != bool(below.group(1)):
        return None
    return f"{upper}\n{lower}"


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


def _join(upper: str, marker: str, lower: str) -> tuple[str, bool] | None:
    """The joined block and whether the marker is already inside it."""
    kinds = (_kind(upper), _kind(lower))
    if kinds == ("paragraph", "paragraph"):
        joined = _join_paragraph(upper, marker, lower)
        return (joined, True) if joined else None
    if kinds == ("table", "table"):
        joined = _join_table(upper, lower)
        return (joined, False) if joined else None
    if kinds == ("list", "list"):
        joined = _join_list(upper, lower)
        return (joined, False) if joined else None
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
    """Pass 2: the document's Markdown, piece by piece; every page keeps its marker, in order.

    ``pages`` come in page order; a page missing or out of order is an error, never skipped.
    ``figures`` (page → its image files) are linked relative to the Markdown, under ``figure_folder``.
    """
    out = _Writer()
    headings = Headings()
    carry: str | None = None  # the last block so far: the next page may continue it
    after_carry: list[str] = []  # what follows the carry: figures after it, markers of pages that joined a table or list

    def flush() -> Iterator[str]:
        nonlocal carry
        if carry is not None:
            yield out.block(carry)
            carry = None
        for marker in after_carry:
            yield out.block(marker)
        after_carry.clear()

    for page in _in_order(pages, expected_pages):
        marker = page_marker(page.page_number)
        if page.status == "failed":
            yield from flush()
            yield out.block(render_page(page))
            continue
        blocks = [headings.level(b) for b in strip_furniture(page_blocks(clean_text(page.markdown)), page.page_number, furniture)]
        blocks = link_figures(blocks, (figures or {}).get(page.page_number, []), figure_folder, page.page_number)
        if page.status == "truncated":
            blocks.append(truncated_marker(page.page_number))
        joined = _join(carry, marker, blocks[0]) if carry is not None and blocks else None
        if joined:
            carry, inline = joined
            if not inline:
                after_carry.append(marker)
            blocks = blocks[1:]
        else:
            yield from flush()
            yield out.block(marker)
        if blocks:
            yield from flush()
            # Figures after the page's last text float below it, so that text can still join the next page.
            last = len(blocks) - 1
            while last > 0 and _is_figure(blocks[last]):
                last -= 1
            for block in blocks[:last]:
                yield out.block(block)
            carry = blocks[last]
            after_carry.extend(blocks[last + 1 :])
    yield from flush()
    yield "\n"


def raw_document(pages: Iterable[PageText], *, expected_pages: int) -> Iterator[str]:
    """``assembly: none``: the page-by-page output as it always was, text cleaned only."""
    out = _Writer()
    for page in _in_order(pages, expected_pages):
        yield out.block(render_page(PageText(page.page_number, page.status, clean_text(page.markdown), page.reason)))
    yield "\n"
