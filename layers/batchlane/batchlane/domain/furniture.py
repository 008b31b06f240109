"""Page furniture found by position and pattern: running heads, feet and folios (docs/architecture.md "Assembly").

A line is furniture when it stands at a page's top or bottom edge and either carries the page number (a folio:
a number whose offset from the page number recurs at the edges of nearby pages, so it follows the page
sequence; in a book sampled from a longer one, numbers that rise as a whole at least page for page, beside a running
title or alone on nearly every page)
with, beside it, nothing or a running title; or is the same short line at the same edge of nearby
pages (a running head without a number), unless what follows it repeats too (a repeated form). Content that
only repeats far apart (the title pages of a bound volume) is kept. A model may give a running head as a
heading, in bold, as a plain line, or glued to the first paragraph: each form is recognised, and in the glued
one only the head is cut. Two streamed passes: :class:`FurnitureSurvey` keeps a few candidates a page (bounded
by the document's pages, never its text), :meth:`FurnitureSurvey.furniture` decides, and
:func:`strip_furniture` applies the decision to a page, returning what it removed.
"""

from __future__ import annotations

import bisect
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise

EDGE_DEPTH = 2  # how many text blocks at each end of a page may be furniture
MAX_FURNITURE_CHARS = 80  # a running head or foot is one short line
MIN_REPEATS = 3  # pages a folio's offset, or a running line, must stand on
FOLIO_WINDOW = 5  # a folio's offset recurs within this many pages either side (a bound volume restarts it)
RUNNING_WINDOW = 2  # a running line recurs at the same edge within this many pages (odd and even pages alternate)
RISING_TITLE_WORDS = 3  # a sampled book's running title beside its rising folios: longer than "Definition 67"
RISING_SHARE = (9, 10)  # of a running title's numbers, the steps that rise: all but one in ten (a sample restarting)
MAX_TITLE_WORDS = 16  # the longest running title cut from a paragraph it was glued to
MAX_CHAPTER_WORDS = 4  # the longest title of an unnumbered chapter (Stichwortverzeichnis) cut beside its folio
CHAPTER_LOOKBACK = 40  # pages back to the page such a chapter opened on
MAX_REMEMBERED_TITLES = 20_000  # memory stays bounded on any document

_HEADING_MARK = re.compile(r"^#{1,6}\s+")
_EMPHASIS = re.compile(r"^[*_]{1,3}(.*?)[*_]{1,3}$")
_PAGE_OF = re.compile(r"\b(?:page|seite|p\.|pg\.?)\s*(\d{1,5})(?:\s*(?:of|von|/)\s*\d{1,5})?\b", re.IGNORECASE)
_FOLIO = r"(\d{1,5}|[ivxl]{1,7})"  # arabic, or lower-case roman (the front matter's i, ii, iii)
_BARE = re.compile(rf"^[\s\-–—(\[|·•]*{_FOLIO}[\s\-–—)\]|·•]*$")
_LEAD = re.compile(rf"^{_FOLIO}(?:\s*[|·•–—]\s*|\s+)(?=\S)")
_TRAIL = re.compile(rf"(?<=\S)(?:\s*[|·•–—]\s*|\s+){_FOLIO}$")
_ROMAN = {"i": 1, "v": 5, "x": 10, "l": 50}
ROMAN_BASE = 100_000  # roman folios are numbered apart from arabic ones: their offsets never mix
_SEPARATORS = re.compile(r"[\s.:;,|·•–—\-()\[\]*_#]+")
_FIGURE_BLOCK = re.compile(r"^(?:\*\[Figure: .*\]\*|!\[[^\]]*\]\([^)]*\))$")
_SECTION_NUMBER = re.compile(r"^\d{1,3}(?:\.\d{1,3})*\.?$|^[A-Z](?:\.\d{1,3})+\.?$")


def recurs_nearby(pages: list[int], count: int, window: int) -> bool:
    """``count`` of the sorted ``pages`` fall within ``window`` consecutive pages: something that runs through a
    stretch of the document (a running title, a logo), not what a bound volume repeats a whole book apart."""
    return any(pages[i + count - 1] - pages[i] < window for i in range(len(pages) - count + 1))


def is_figure(block: str) -> bool:
    return bool(_FIGURE_BLOCK.match(block.strip()))


def text_positions(blocks: list[str]) -> list[int]:
    """Indices of the page's blocks that are not figures: a figure never counts as a page edge."""
    return [index for index, block in enumerate(blocks) if not is_figure(block)]


def title_key(text: str) -> str:
    """A title as compared across pages and with headings: case, markup and punctuation left out."""
    return _SEPARATORS.sub(" ", _HEADING_MARK.sub("", text.strip())).strip().lower()


def _plain(line: str) -> tuple[str, bool]:
    """The line without heading marks and enclosing emphasis, and whether it was a heading."""
    line = line.strip()
    heading = bool(_HEADING_MARK.match(line))
    line = _HEADING_MARK.sub("", line).strip()
    while (match := _EMPHASIS.match(line)) and match.group(1).strip():
        line = match.group(1).strip()
    return line.strip("*_ "), heading


@dataclass(frozen=True, slots=True)
class Candidate:
    """One edge line of a page: what may be a running head, foot or folio."""

    edge: str  # top | bottom
    depth: int  # 0: the outermost text block, 1: the next one in
    form: str  # block (the whole block is this line), line (the block's first/last line), glued (a long one-line block)
    text: str  # the line as written (for ``glued``, the whole block)
    key: str  # title_key of the line
    number: int | None  # the edge number: a folio when its offset recurs
    side: str  # bare | lead | trail | page (``Page 3 of 9``) | "" (no number)
    title: str  # title_key of the line less its number
    heading: bool  # written as a heading
    inner: int  # hash of what follows it towards the page's middle (a repeated form repeats that too); 0: nothing


def folio_value(text: str) -> int | None:
    """An arabic number as itself, a lower-case roman one (``iv``) as ROMAN_BASE + its value; else None."""
    if text.isdigit():
        return int(text)
    if not text or any(ch not in _ROMAN for ch in text):
        return None
    values = [_ROMAN[ch] for ch in text]
    total = sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))
    return ROMAN_BASE + total if 0 < total < 90 else None


def _number(line: str) -> tuple[int | None, str, str]:
    """(number, side, the rest) of a plain line: a folio candidate at its start or end, or alone."""
    number, side, rest = _number_of(line)
    if number is None:
        return None, "", line
    return number, side, rest


def _number_of(line: str) -> tuple[int | None, str, str]:
    if match := _BARE.match(line):
        return folio_value(match.group(1)), "bare", ""
    match = _PAGE_OF.search(line)
    if match and (match.start() == 0 or match.end() == len(line)):  # "Page 3 of 9", "Report · page 3"; not one in a sentence
        return int(match.group(1)), "page", (line[: match.start()] + " " + line[match.end() :]).strip()
    if (match := _LEAD.match(line)) and folio_value(match.group(1)) is not None:
        return folio_value(match.group(1)), "lead", line[match.end() :]
    if (match := _TRAIL.search(line)) and folio_value(match.group(1)) is not None:
        return folio_value(match.group(1)), "trail", line[: match.start()]
    return None, "", line


def _candidate(edge: str, depth: int, block: str, inner: str) -> Candidate | None:
    lines = block.strip().split("\n")
    if len(lines) == 1 and len(block.strip()) <= MAX_FURNITURE_CHARS:
        form, line = "block", lines[0]
    elif len(lines) > 1:
        form, line = "line", lines[0] if edge == "top" else lines[-1]
        inner = title_key("\n".join(lines[1:3] if edge == "top" else lines[-3:-1]))[:MAX_FURNITURE_CHARS]
        if len(line.strip()) > MAX_FURNITURE_CHARS:
            return None
    else:
        form, line = "glued", _head_of(lines[0], edge)  # only the words a head could be: memory stays small
    if line.lstrip().startswith(("|", "```", "~~~", "<", ">", "$$", "- ", "* ", "+ ")) and form != "glued":
        return None  # a table row, code, a quote or a list item is content
    plain, heading = _plain(line)
    if not plain:
        return None
    number, side, rest = _number(plain)
    if edge == "top" and (side == "" or (form == "glued" and side not in ("lead", "bare"))):
        number, side, rest = _title_first(plain, number, side, rest)
    key, title = sys.intern(title_key(plain)), sys.intern(title_key(rest))  # a running head's are the same on every page
    return Candidate(edge, depth, form, line, key, number, side, title, heading, hash(inner[:MAX_FURNITURE_CHARS]) if inner else 0)


def _title_first(head: str, number: int | None, side: str, rest: str) -> tuple[int | None, str, str]:
    """A head glued to a paragraph with its number after the title (``CHAPTER 1. TITLE 2 the text …``): the first
    number after a run of capitals and section numbers; else what :func:`_number` found."""
    words = head.split()
    for index, word in enumerate(words[: MAX_TITLE_WORDS + 1]):
        if word.isdigit() and index > 0 and len(word) <= 5:
            return int(word), "inner", " ".join(words[:index])
        if not _in_title(word, index):
            break
    return number, side, rest


def _capital_word(word: str) -> bool:
    """A word of a running title in capitals (``METRISCHE``, ``RÄUME``), or a section number (``1.2.``)."""
    bare = word.strip("*_")
    letters = [ch for ch in bare if ch.isalpha()]
    if _SECTION_NUMBER.match(bare):
        return True
    return len(letters) >= 2 and all(ch.isupper() for ch in letters) and not any(ch in "()=<>[]{}" for ch in bare)


def _in_title(word: str, index: int) -> bool:
    """``word`` goes on a running title in capitals at position ``index``: a section number only opens one, or follows
    a word as ``CHAPTER 1.`` does; ``2.2`` inside one is the next heading's number (``… LOGIC 2.2 On the …``)."""
    if not _capital_word(word):
        return False
    bare = word.strip("*_")
    return not (index and _SECTION_NUMBER.match(bare) and not (bare.endswith(".") and "." not in bare[:-1]))


def _head_of(line: str, edge: str) -> str:
    """The end of a long line where a glued head or foot would be: its first (or last) few words."""
    words = line.split()
    return " ".join(words[: MAX_TITLE_WORDS + 1] if edge == "top" else words[-MAX_TITLE_WORDS - 1 :])


def page_candidates(blocks: list[str]) -> list[Candidate]:
    """The candidates of a page's blocks: its outermost text blocks at each edge (a page of one block: top only)."""
    positions = text_positions(blocks)
    out: list[Candidate] = []
    for edge, order in (("top", positions), ("bottom", positions[::-1])):
        if edge == "bottom" and len(positions) < 2:
            break
        for depth, index in enumerate(order[:EDGE_DEPTH]):
            following = order[depth + 1] if depth + 1 < len(order) else None
            inner = title_key(blocks[following][: 2 * MAX_FURNITURE_CHARS])[:MAX_FURNITURE_CHARS] if following is not None else ""
            candidate = _candidate(edge, depth, blocks[index], inner)
            if candidate is not None:
                out.append(candidate)
    return out


@dataclass(frozen=True)
class Removal:
    """What is cut from one edge block of a page: the whole block, its edge line, or the head glued to it."""

    edge: str
    depth: int
    cut: str  # block | line | prefix | suffix
    text: str  # exactly what is removed (checked again when applied)
    folio: bool = False  # it carries the page number: removed even when it is all the page has


@dataclass
class Furniture:
    """The decision: per page, what to remove from its edges; and the figure lines repeated on many pages."""

    removals: dict[int, tuple[Removal, ...]] = field(default_factory=dict)
    decorations: frozenset[str] = frozenset()  # figure lines repeated on many pages: a logo, a rule

    def of(self, page_number: int) -> tuple[Removal, ...]:
        return self.removals.get(page_number, ())


@dataclass
class FurnitureSurvey:
    """Pass 1, a page at a time: each page's edge candidates, the document's heading titles, repeated figure lines."""

    candidates: dict[int, list[Candidate]] = field(default_factory=dict)
    headings: set[str] = field(default_factory=set)
    figures: dict[str, list[int]] = field(default_factory=dict)  # a figure line → the pages it stands on

    def add_blocks(self, page_number: int, blocks: list[str]) -> None:
        for line in {b.strip() for b in blocks if is_figure(b)}:
            self.figures.setdefault(line, []).append(page_number)
        if len(self.headings) < MAX_REMEMBERED_TITLES:
            self.headings.update(title_key(b) for b in blocks if _HEADING_MARK.match(b) and "\n" not in b.strip())
        if found := page_candidates(blocks):
            self.candidates[page_number] = found

    def furniture(self) -> Furniture:
        return _Decider(self).decide()


class _Decider:
    """Pass 1's end: which candidates are furniture, from the whole document's edges."""

    def __init__(self, survey: FurnitureSurvey) -> None:
        self.candidates = survey.candidates
        # a logo or a rule: the same figure line on MIN_REPEATS pages of a few; a figure a bound volume repeats is not one
        self.decorations = frozenset(line for line, pages in survey.figures.items() if recurs_nearby(sorted(pages), MIN_REPEATS, 2 * MIN_REPEATS))
        self.offsets: dict[int, list[int]] = defaultdict(list)  # offset (number − page) → pages with it at an edge
        self.lines: dict[tuple[str, str], list[int]] = defaultdict(list)  # (edge, key) → pages with that whole line
        for page, found in sorted(self.candidates.items()):
            for offset in sorted({c.number - page for c in found if c.number is not None}):
                self.offsets[offset].append(page)
            numbered = {c.edge for c in found if c.depth == 0 and c.number is not None}
            for c in found:
                # a line counts where it stands at the edge, or right inside a line carrying a number (a foot above its folio)
                if c.form != "glued" and (c.depth == 0 or c.edge in numbered):
                    self.lines[(c.edge, c.key)].append(page)
        self.pages = sorted(self.candidates)  # the pages with text
        self.inner_counts: dict[tuple[str, str], Counter[int]] = {}
        self.rising = self._rising()
        self.titles = self._running_titles()
        numbered = {h for h in survey.headings if h[:1].isdigit()}
        self.known = self.titles | numbered  # what a glued head may be cut by
        self.headings = survey.headings  # a whole line's title may be any heading's ("111 Symbolverzeichnis")

    def _folio(self, page: int, candidate: Candidate) -> bool:
        """The candidate's number follows the page sequence: its offset from the page recurs on MIN_REPEATS pages close
        by, or, on a page without such a folio, it rises with the pages of a sampled book (:meth:`_rising`)."""
        return self._offset_folio(page, candidate) or (page, candidate.edge, candidate.depth) in self.rising

    def _offset_folio(self, page: int, candidate: Candidate) -> bool:
        if candidate.number is None:
            return False
        pages = self.offsets.get(candidate.number - page, [])
        near = bisect.bisect_right(pages, page + FOLIO_WINDOW) - bisect.bisect_left(pages, page - FOLIO_WINDOW)
        return near >= MIN_REPEATS

    def _rising(self) -> dict[tuple[int, str, int], Candidate]:
        """Folios of a book sampled from a longer one (docling's redp5110_sampled.pdf: 2, 4, 10, 11, 15 on pages 6-10), at
        page edges with no offset folio (``## Bemerkung 39`` may follow the pages by chance), keyed (page, edge, depth).
        A running title's numbers: the lines at one edge that open with the same RISING_TITLE_WORDS words beside a
        number, whose numbers rise by at least as much as the page does (a sample leaves pages out, never adds one) from
        each such line to the next nearly everywhere (all but one in ten: a restart), MIN_REPEATS of them within
        FOLIO_WINDOW. Then a number between two of those at the same edge that rises with both (a chapter's title seen
        once). The title tells a head from content that rises too (``Definition 67``, an equation's ``(12)``, a count);
        rising as a whole tells it from a repeated form's numbers."""
        numbered: dict[int, list[Candidate]] = defaultdict(list)  # page → its numbered lines at edges with no offset folio
        offset: dict[int, int] = {}  # page → its offset folio
        offset_pages: dict[str, list[int]] = defaultdict(list)  # edge → the pages with an offset folio there
        groups: dict[tuple[str, tuple[str, ...]], dict[int, Candidate]] = defaultdict(dict)
        for page, found in sorted(self.candidates.items()):
            offset_edges = {c.edge for c in found if self._offset_folio(page, c)}  # one folio an edge
            for c in found:
                if c.edge in offset_edges and c.number is not None and self._offset_folio(page, c):
                    offset.setdefault(page, c.number)
            for edge in sorted(offset_edges):
                offset_pages[edge].append(page)
            for c in sorted(found, key=lambda c: c.depth):
                if c.number is None or c.edge in offset_edges:
                    continue
                numbered[page].append(c)
                title = tuple(_beside(c)[:RISING_TITLE_WORDS])
                if len(title) == RISING_TITLE_WORDS:
                    groups[(c.edge, title)].setdefault(page, c)  # the outermost, once a page
                if self._capital_title(c):  # a section's title in capitals changes every few pages: one group
                    groups[(c.edge, ("",))].setdefault(page, c)
                if c.side == "bare" and c.depth == 0 and c.form == "block" and not any(ch in c.text for ch in "([#*"):
                    groups[(c.edge, ("#",))].setdefault(page, c)  # a number alone at the very edge: an equation's (12) is not one
        rising: dict[tuple[int, str, int], Candidate] = {}
        for (edge, title), group in groups.items():
            rising.update(_rising_run(sorted(group.items()), (self.pages, offset_pages[edge]) if title == ("#",) else None))
        folios = {page: c.number or 0 for (page, _, _), c in rising.items()} | offset
        rising.update(_between(sorted(folios.items()), {page: found for page, found in numbered.items() if page not in folios}))
        return rising

    def _running_titles(self) -> set[str]:
        """Titles written beside a folio on two pages close together: the running titles of this document."""
        seen: dict[str, list[int]] = defaultdict(list)
        for page, found in sorted(self.candidates.items()):
            titles = set()  # once a page: its block may be a candidate at both edges
            for c in found:
                if not self._folio(page, c):
                    continue
                if c.form != "glued" and c.title:
                    titles.add(c.title)
                elif c.form == "glued" and c.side == "lead":  # its title is the capitals after the number, as far as they go
                    words = _HEADING_MARK.sub("", c.text.strip()).split()[1 : MAX_TITLE_WORDS + 1]
                    run = next((i for i, w in enumerate(words) if not _in_title(w, i)), len(words))
                    if run:
                        titles.add(title_key(" ".join(words[:run])))
            for title in titles:
                seen[title].append(page)
        # beside a folio on two pages close together (a title repeated a whole book apart is the book's content)
        return {title for title, pages in seen.items() if recurs_nearby(pages, 2, 2 * FOLIO_WINDOW)} | self._glued_rising_titles()

    def _glued_rising_titles(self) -> set[str]:
        """A sampled book's running title in mixed case glued to the text after a rising folio (``20 Row and Column
        Access Control Support in IBM DB2 for i Table 3-2 lists …``): the most words a page's head shares with the heads
        of MIN_REPEATS - 1 other such pages within 2 × FOLIO_WINDOW (what one other page shares may run into the text)."""
        heads = [(page, [title_key(w) for w in _HEADING_MARK.sub("", c.text.strip()).split()[1 : MAX_TITLE_WORDS + 1]], c.text)
                 for (page, _, _), c in sorted(self.rising.items(), key=lambda r: r[0]) if c.form == "glued" and c.side == "lead" and c.edge == "top"]
        titles = set()
        for page, words, text in heads:
            shared = sorted((_common_words(words, other) for q, other, _ in heads if q != page and abs(q - page) <= 2 * FOLIO_WINDOW), reverse=True)
            if len(shared) >= MIN_REPEATS - 1 and shared[MIN_REPEATS - 2] >= RISING_TITLE_WORDS:
                titles.add(title_key(" ".join(_HEADING_MARK.sub("", text.strip()).split()[1 : 1 + shared[MIN_REPEATS - 2]])))
        return titles

    def _running_line(self, page: int, candidate: Candidate) -> bool:
        """The same short line at the same edge of MIN_REPEATS pages close by (the page's neighbourhood, odd and even
        pages alike), and not a repeated form (what follows it repeats too)."""
        if candidate.form == "glued":
            return False
        pages = self.lines.get((candidate.edge, candidate.key), [])
        if len(pages) < MIN_REPEATS:
            return False
        low, high = page - 2 * RUNNING_WINDOW, page + 2 * RUNNING_WINDOW
        around = pages[bisect.bisect_left(pages, low) : bisect.bisect_right(pages, high)]
        texts = self.pages[bisect.bisect_left(self.pages, low) : bisect.bisect_right(self.pages, high)]
        same = [q for q in around if (q - page) % 2 == 0]  # odd and even pages may carry different heads
        sides = sum(1 for q in texts if (q - page) % 2 == 0)
        # on MIN_REPEATS pages and 3 in 5 of those around it, or of its side's (a head on even pages only)
        if not any(len(on) >= MIN_REPEATS and len(on) * 5 >= of * 3 for on, of in ((around, len(texts)), (same, sides))):
            return False
        inner, count = self._inners(candidate.edge, candidate.key, pages).most_common(1)[0]
        return not (inner and count * 2 >= len(pages))

    def _inners(self, edge: str, key: str, pages: list[int]) -> Counter[int]:
        """What follows the line on each page it stands on (counted only for the few lines that repeat)."""
        cached = self.inner_counts.get((edge, key))
        if cached is None:
            cached = Counter(c.inner for q in pages for c in self.candidates.get(q, []) if (c.edge, c.key) == (edge, key) and c.form != "glued")
            self.inner_counts[(edge, key)] = cached
        return cached

    def _running_prefix(self, page: int, candidate: Candidate) -> Removal | None:
        """A head without a number glued to the paragraph (``Journal of Tests Vol. 7 the text …``): the longest run of
        words this page's edge block shares with the same edge of MIN_REPEATS pages close by (2 in 5 of them)."""
        mine = self._edge_words(candidate)
        low, high = page - 2 * RUNNING_WINDOW, page + 2 * RUNNING_WINDOW
        others: list[tuple[int, list[str], int]] = []  # (page, its edge words, how many it shares with mine)
        for q in range(low, high + 1):
            other = next((c for c in self.candidates.get(q, []) if q != page and c.edge == candidate.edge and c.depth == 0), None)
            if other is not None:
                words = self._edge_words(other)
                others.append((q, words, _common_words(mine, words)))
        shared = sorted((common for _, _, common in others), reverse=True)
        with_text = bisect.bisect_right(self.pages, high) - bisect.bisect_left(self.pages, low)
        needed = max(MIN_REPEATS - 1, -(-2 * with_text // 5) - 1)  # the other pages besides this one
        if len(shared) < needed or needed < 1:
            return None
        length = shared[needed - 1]
        words = mine[:length]
        if length < 2 or length >= len(mine) or sum(len(w) for w in words) < 6 or len(" ".join(words)) > MAX_FURNITURE_CHARS:
            return None
        if candidate.form == "line" and len(candidate.text.split()) <= length:
            return None
        sharing = [(q, words) for q, words, common in others if common >= length]
        if _folio_after(page, mine, length, sharing) >= needed or _rising_after(page, mine, length, sharing) >= needed:
            return self._partial(candidate, length + 1, prefix=candidate.edge == "top", folio=True)
        if candidate.form != "glued" and len(mine) == length + 1 and folio_value(mine[length]) is not None:
            return None  # a label and its value alone on a line (a form's "Customer account number 58213"): content
        return self._partial(candidate, length, prefix=candidate.edge == "top", folio=False)

    @staticmethod
    def _edge_words(candidate: Candidate) -> list[str]:
        """The candidate's words as compared across pages, from the page's edge inwards."""
        words = [title_key(w) for w in _HEADING_MARK.sub("", candidate.text.strip()).split()]
        return words if candidate.edge == "top" else words[::-1]

    def _shape(self, words: list[str]) -> str:
        """A running title's look, to tell one seen once from content: a section number, capitals, or its first word."""
        if not words:
            return ""
        first = words[0].strip("*_:.,")
        letters = [ch for ch in first if ch.isalpha()]
        if _SECTION_NUMBER.match(first + "."):
            return "number"
        if letters and all(ch.isupper() for ch in letters) and len(letters) >= 2:
            return "capitals"
        return first.lower()

    def _neighbours_shape(self, page: int, candidate: Candidate, shape: str) -> bool:
        """A page close by carries a running title of the same look, at the same edge, its number on the same side."""
        for q in (page - 2, page - 1, page + 1, page + 2):
            for other in self.candidates.get(q, []):
                if (other.edge, other.side) != (candidate.edge, candidate.side) or other.title not in self.titles or not self._folio(q, other):
                    continue
                if self._shape(_opening(other, self._title_words(other))) == shape:
                    return True
        return False

    def _capital_title(self, candidate: Candidate) -> bool:
        """Beside the number stands a running title in capitals, a section number before it or not (``1.2. METRISCHE
        RÄUME``, ``CHAPTER 3. TOPOLOGY``): all of the line's words, or the first of a glued block's."""
        words = _opening(candidate, self._title_words(candidate))
        run = next((i for i, w in enumerate(words) if not _in_title(w, i)), len(words))
        return any(ch.isalpha() for w in words[:run] for ch in w) and (run == len(words) or candidate.form == "glued")

    def _title_words(self, candidate: Candidate) -> list[str]:
        """The words beside the number, from the number inwards (reversed when the number ends the line)."""
        body = _HEADING_MARK.sub("", candidate.text.strip())
        if candidate.form == "line":
            body = body.split("\n")[0] if candidate.edge == "top" else body.split("\n")[-1]
        words = body.split()
        if candidate.side == "lead":
            return words[1:]
        if candidate.side == "trail":
            return words[:-1][::-1]
        return []

    def decide(self) -> Furniture:
        removals: dict[int, tuple[Removal, ...]] = {}
        for page, found in self.candidates.items():
            chosen = [r for edge in ("top", "bottom") for r in self._edge(page, [c for c in found if c.edge == edge])]
            chosen = self._one_folio(page, found, chosen)
            if chosen:
                removals[page] = tuple(chosen)
        return Furniture(removals, self.decorations)

    def _edge(self, page: int, found: list[Candidate]) -> list[Removal]:
        out: list[Removal] = []
        folio_seen = False
        for candidate in sorted(found, key=lambda c: c.depth):
            if candidate.depth != len(out):
                break  # only a line next to one already removed (or the outermost) is at the edge
            removal = None
            if not folio_seen and self._folio(page, candidate):
                removal = self._folio_cut(page, candidate)
                folio_seen = removal is not None
            if removal is None and self._running_line(page, candidate):
                removal = Removal(candidate.edge, candidate.depth, candidate.form, candidate.text)
            if removal is None and candidate.depth == 0:  # a head glued to the page's first line ("Database Parents:")
                removal = self._running_prefix(page, candidate)
            if removal is None:
                break
            out.append(removal)
            if removal.cut in ("prefix", "suffix"):
                break  # the head was cut from a paragraph: that paragraph is content
        return out

    def _folio_cut(self, page: int, candidate: Candidate) -> Removal | None:
        """What goes of a line carrying the page number: all of it when beside the number stands nothing or a running
        title; only the number and the title when content follows on the same line (a head glued to a paragraph)."""
        whole = Removal(candidate.edge, candidate.depth, candidate.form, candidate.text, folio=True)
        if candidate.side == "page" and candidate.form == "glued":  # "… the text ends. Page 2 of 6"
            body = _HEADING_MARK.sub("", candidate.text.strip())
            match = _PAGE_OF.search(body)
            top = candidate.edge == "top"
            if match is None or (match.start() != 0 if top else match.end() != len(body)):
                return None
            count = len((body[: match.end()] if top else body[match.start() :]).split())
            return self._partial(candidate, count, prefix=top)
        if candidate.side in ("bare", "page"):
            if candidate.form == "glued" or (candidate.title and candidate.title not in self.titles):
                return None
            return whole
        if candidate.side == "inner":  # "CHAPTER 1. TITLE 2 the text …": every word before the number is the title
            return self._partial(candidate, _inner_index(candidate.text.split()) + 1)
        words = self._title_words(candidate)
        if candidate.form != "glued" and (candidate.title in self.titles or candidate.title in self.known or candidate.title in self.headings):
            return whole
        title = self._glued_title(words[:MAX_TITLE_WORDS], reverse=candidate.side == "trail")
        if title == 0 and candidate.edge == "top" and candidate.side == "lead":
            title = self._chapter_title(page, words)
        if candidate.form != "glued" and title == len(words):
            return whole
        if title == 0:
            if candidate.form != "glued":
                shape = self._shape(_opening(candidate, words))
                return whole if shape and len(words) <= 8 and self._neighbours_shape(page, candidate, shape) else None
            if len(words) and not _bare_folio_glued(words[0], top=candidate.side == "lead"):
                return None  # a number alone at the start or end of a paragraph is the paragraph's ("42 students …")
        return self._partial(candidate, 1 + title)

    def _chapter_title(self, page: int, words: list[str]) -> int:
        """How many of ``words`` (right after a folio at the top) are the title of the unnumbered chapter they stand in
        (``113 Stichwortverzeichnis Homöomorphismengruppe, 10``): the words an earlier page without a top folio opened
        with, that page giving them as a heading or another page close by giving them after its folio too. Words of
        letters only, so ``Beweis:`` or ``Definition 17`` never count."""
        plain = [title_key(w) for w in words[:MAX_CHAPTER_WORDS]]
        run = next((k for k, w in enumerate(words[:MAX_CHAPTER_WORDS]) if not w.isalpha()), len(plain))
        if not run or not words[0][:1].isupper():
            return 0
        again = any(self._after_folio(q)[:run] == plain[:run] for q in range(page - 2 * RUNNING_WINDOW, page + 2 * RUNNING_WINDOW + 1) if q != page)
        for q in range(page - 1, page - CHAPTER_LOOKBACK - 1, -1):
            opening = next((c for c in self.candidates.get(q, []) if c.edge == "top" and c.depth == 0), None)
            if opening is None or self._folio(q, opening):
                continue
            opens = [title_key(w) for w in _plain(opening.text)[0].split()[:run]]
            length = _common_words(plain[:run], opens)
            if length and (again or (opening.heading and opening.form == "block" and length == len(opening.key.split()))):
                return length
        return 0

    def _after_folio(self, page: int) -> list[str]:
        """The words right after the folio at the top of ``page`` (as compared across pages), or none."""
        found = next((c for c in self.candidates.get(page, []) if c.edge == "top" and c.depth == 0 and c.side == "lead" and self._folio(page, c)), None)
        return [title_key(w) for w in self._title_words(found)[:MAX_CHAPTER_WORDS]] if found else []

    def _partial(self, candidate: Candidate, count: int, *, prefix: bool | None = None, folio: bool = True) -> Removal | None:
        """The first (lead) or last (trail) ``count`` words of the block: the folio and its running title."""
        lead = candidate.side in ("lead", "inner") if prefix is None else prefix
        if candidate.form == "line" and lead != (candidate.edge == "top"):
            return None  # a number on the inner side of an edge line: not where a head is cut from
        body = _HEADING_MARK.sub("", candidate.text.strip())
        if lead:
            match = re.match(rf"\s*(?:\S+\s+){{{count - 1}}}\S+", body)
            return Removal(candidate.edge, candidate.depth, "prefix", match.group(0).strip(), folio=folio) if match else None
        match = re.search(rf"\S+(?:\s+\S+){{{count - 1}}}\s*$", body)
        return Removal(candidate.edge, candidate.depth, "suffix", match.group(0).strip(), folio=folio) if match else None

    def _glued_title(self, words: list[str], *, reverse: bool) -> int:
        """How many of ``words`` (from the folio inwards) are the running title: the longest known title, else a run
        of capitals and section numbers (``1.2. METRISCHE RÄUME``), else none (only the folio is cut)."""

        def key(k: int) -> str:
            part = words[:k][::-1] if reverse else words[:k]
            return title_key(" ".join(part))

        known = max((k for k in range(1, len(words) + 1) if key(k) in self.known and any(ch.isalnum() for ch in words[k - 1])), default=0)
        if known:
            return known
        run = 0
        for word in words:
            if not _in_title(word, run):
                break
            run += 1
        return run if any(any(ch.isalpha() for ch in w) for w in words[:run]) else 0

    def _one_folio(self, page: int, found: list[Candidate], chosen: list[Removal]) -> list[Removal]:
        """Two bare folios on one page (a numbered heading at the top, the folio at the foot): the heading is content."""
        bare = [c for c in found if c.side == "bare" and any((r.edge, r.depth) == (c.edge, c.depth) for r in chosen)]
        if len(bare) == 2 and bare[0].heading != bare[1].heading:
            heading = next(c for c in bare if c.heading)
            return [r for r in chosen if (r.edge, r.depth) != (heading.edge, heading.depth) and not (r.edge == heading.edge and r.depth > heading.depth)]
        return chosen


def _opening(candidate: Candidate, words: list[str]) -> list[str]:
    """A running title's words from its start: a trailing folio's title words come from the number inwards."""
    return words[::-1] if candidate.side == "trail" else words


def _rising_run(members: list[tuple[int, Candidate]], bare: tuple[list[int], list[int]] | None = None) -> dict[tuple[int, str, int], Candidate]:
    """The lines of one running title (page, candidate; by page) that are folios: the title's numbers rise from line to
    line nearly everywhere (a restart aside), and MIN_REPEATS of its lines stand within FOLIO_WINDOW of the line.
    ``bare``: (the pages with text, those with an offset folio at this edge) when the lines have no title: with those,
    a folio must stand at the edge on 3 in 5 of the pages around the line, where a number that is content is rarer."""
    rises = [_rises(p, a.number or 0, q, b.number or 0) for (p, a), (q, b) in pairwise(members)]
    if len(members) < MIN_REPEATS or sum(rises) * RISING_SHARE[1] < RISING_SHARE[0] * len(rises):
        return {}
    pages = [page for page, _ in members]
    texts, with_folio = bare if bare else ([], [])
    folio_pages = sorted(set(pages) | set(with_folio))
    out = {}
    for page, c in members:
        near = bisect.bisect_right(pages, page + FOLIO_WINDOW) - bisect.bisect_left(pages, page - FOLIO_WINDOW)
        around = bisect.bisect_right(texts, page + FOLIO_WINDOW) - bisect.bisect_left(texts, page - FOLIO_WINDOW)
        folioed = bisect.bisect_right(folio_pages, page + FOLIO_WINDOW) - bisect.bisect_left(folio_pages, page - FOLIO_WINDOW)
        if near >= MIN_REPEATS and folioed * 5 >= around * 3:
            out[(page, c.edge, c.depth)] = c
    return out


def _between(folios: list[tuple[int, int]], numbered: dict[int, list[Candidate]]) -> dict[tuple[int, str, int], Candidate]:
    """On a page without a folio, between two pages with one (page, number; at any edge) within FOLIO_WINDOW, its
    outermost number at an edge that rises with both (a chapter's opening page with its folio alone at the foot)."""
    out: dict[tuple[int, str, int], Candidate] = {}
    pages = [p for p, _ in folios]
    for page, found in numbered.items():
        at = bisect.bisect_left(pages, page)
        if at == 0 or at == len(pages) or pages[at] == page:
            continue
        (before, low), (after, high) = folios[at - 1], folios[at]
        if page - before > FOLIO_WINDOW or after - page > FOLIO_WINDOW:
            continue
        fit = next((c for c in found if _rises(before, low, page, c.number or 0) and _rises(page, c.number or 0, after, high)), None)
        if fit is not None:
            out[(page, fit.edge, fit.depth)] = fit
    return out


def _rises(page: int, number: int, other_page: int, other: int) -> bool:
    """``other`` on ``other_page`` follows ``number`` on ``page`` as a folio of a sample does: by as many or more; an
    arabic folio follows any roman one (the front matter comes first)."""
    if (number >= ROMAN_BASE) != (other >= ROMAN_BASE):
        return (other_page > page) == (number >= ROMAN_BASE)
    return other - number >= other_page - page > 0 or number - other >= page - other_page > 0


def _beside(candidate: Candidate) -> list[str]:
    """The words beside a candidate's number, from the line's start (a glued head: its first words after the number)."""
    return [w for w in candidate.title.split() if w][:MAX_TITLE_WORDS]


def _inner_index(words: list[str]) -> int:
    """Where the number stands in a title-first glued head (:func:`_title_first`)."""
    return next((i for i, w in enumerate(words) if w.isdigit() and i > 0), 0)


def _folio_after(page: int, mine: list[str], length: int, others: list[tuple[int, list[str]]]) -> int:
    """How many of the ``others`` (page, edge words) sharing the head's ``length`` words carry, right after it, a number
    at the same offset from their page as the word after this page's head (``…, page 20``): a folio glued to the head."""
    number = folio_value(mine[length]) if length < len(mine) else None
    if number is None:
        return 0
    return sum(1 for q, words in others if length < len(words) and folio_value(words[length]) == number - page + q)


def _rising_after(page: int, mine: list[str], length: int, others: list[tuple[int, list[str]]]) -> int:
    """How many of the ``others`` carry a number right after the shared head, when those numbers and this page's rise
    with the page as a sampled book's folios do, every one of them (``© Copyright IBM Corp. 2014. All rights reserved.``
    then iii, xi, 1 on pages 2, 4, 5); 0 when any does not (a form's values: ``Customer account number 58213``)."""
    number = folio_value(mine[length]) if length < len(mine) else None
    if number is None:
        return 0
    after = sorted([(page, number)] + [(q, n) for q, words in others if length < len(words) and (n := folio_value(words[length])) is not None])
    if not all(_rises(p, a, q, b) for (p, a), (q, b) in pairwise(after)):
        return 0
    return len(after) - 1


def _common_words(a: list[str], b: list[str]) -> int:
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


def _bare_folio_glued(word: str, *, top: bool) -> bool:
    """A folio glued with no title: the next paragraph opens with a capital, or the last one had ended its sentence."""
    return word[:1].isupper() if top else word.rstrip("*_")[-1:] in ".!?:;)0123456789"


def survey_blocks(pages: Iterable[tuple[int, list[str]]]) -> Furniture:
    """Pass 1 over (page number, blocks) pairs: the decision for the whole document."""
    seen = FurnitureSurvey()
    for number, blocks in pages:
        seen.add_blocks(number, blocks)
    return seen.furniture()


def strip_furniture(blocks: list[str], page_number: int, furniture: Furniture) -> tuple[list[str], list[str]]:
    """The page's blocks without its furniture, and the lines removed (for pages.jsonl); nothing else is touched.

    A page of one text block keeps it unless only a head is cut from it: a title page says its title once, by itself.
    """
    removed = [b.strip() for b in blocks if b.strip() in furniture.decorations]
    blocks = [b for b in blocks if b.strip() not in furniture.decorations]
    positions = text_positions(blocks)
    changed: dict[int, str | None] = {}
    for removal in furniture.of(page_number):
        order = positions if removal.edge == "top" else positions[::-1]
        if removal.depth >= len(order):
            continue
        index = order[removal.depth]
        block = blocks[index] if index not in changed else changed[index]
        if block is None:
            continue
        rest = _apply(block, removal)
        if rest is None:
            continue  # the page is not what the survey saw: leave it
        if rest == "" and len(positions) < 2 and not removal.folio:
            continue
        changed[index] = rest or None
        removed.append(removal.text.strip())
    out = [changed.get(i, b) if i in changed else b for i, b in enumerate(blocks)]
    return [b for b in out if b], removed


def _apply(block: str, removal: Removal) -> str | None:
    """``block`` less what ``removal`` cuts, "" when all of it goes; None when the block no longer holds it."""
    stripped = block.strip()
    if removal.cut == "block":
        return "" if stripped.split("\n")[0] == removal.text or stripped == removal.text else None
    if removal.cut == "line":
        lines = stripped.split("\n")
        if removal.edge == "top" and lines[0] == removal.text:
            return "\n".join(lines[1:]).strip()
        if removal.edge == "bottom" and lines[-1] == removal.text:
            return "\n".join(lines[:-1]).strip()
        return None
    heading = _HEADING_MARK.match(stripped)
    marks = heading.group(0) if heading else ""
    body = stripped[len(marks) :]
    if removal.cut == "prefix":
        if not body.startswith(removal.text):
            return None
        rest = body[len(removal.text) :].strip()
        return f"{marks}{rest}" if rest else ""
    if not body.endswith(removal.text):
        return None
    rest = body[: -len(removal.text)].strip()
    return f"{marks}{rest}" if rest else ""
