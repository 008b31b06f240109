"""Properties of the document pass (issue 39), on books drawn at random with the furniture real books carry.

A drawn book has front matter, chapters opening without a head (their folio at the foot), running heads that carry
the folio and a running title (the chapter's on even pages, the section's on odd ones), in one of the forms a model
returns them: a heading, bold, a plain line, glued to the first paragraph (folio first or title first). Its body
words are unique, so each one can be found: paragraphs and lists run on across page breaks, and some pages hold,
mid-page, a line that reads exactly like their running head (content: it is not at an edge). Some pages fail.

* every body word appears exactly once, in order, and under its own page's marker;
* a line away from the edges is never removed, even when it reads like a running head;
* on a book whose heads repeat (every served page has served neighbours), no head and no folio is left;
* the pass is idempotent: surveying the pages it leaves finds nothing more to remove; safe_markdown twice is once.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from batchlane.domain.assembly import assemble_document, page_text_blocks, strip_furniture, survey
from batchlane.domain.markdown import PageText
from batchlane.domain.safe_markdown import safe_markdown

SECTIONS = ("ALPHA RULES", "BRAVO LINES", "CHARLIE EDGES", "DELTA FOLIOS", "ECHO TITLES", "FOXTROT PAGES")
FORMS = ("heading", "bold", "plain", "glued", "title-first")
SECTION = re.compile(r"<!-- Page (\d+)[^>]*-->")
BODY_WORD = re.compile(r"\bz[a-y]+\b")


def _head(form: str, folio: int, title: str) -> str:
    return {"heading": f"## {folio} {title}", "bold": f"**{folio} {title}**", "plain": f"{folio} {title}"}.get(form, f"{folio} {title}")


class Book:
    """A drawn book: its pages, each page's body words in order, and the decoy lines it holds mid-page."""

    def __init__(self) -> None:
        self.pages: list[PageText] = []
        self.words: dict[int, list[str]] = {}
        self.decoys: list[str] = []
        self.heads: list[str] = []
        self.folios: list[int] = []


@st.composite
def books(draw: st.DrawFn) -> Book:
    form = draw(st.sampled_from(FORMS))
    front = draw(st.integers(0, 3))
    count = front + draw(st.integers(3, 22))
    offset = draw(st.integers(-front, 4 - front))  # the first body page's folio is 1 to 5: no book prints page 0
    serial = iter(range(1, 100_000))

    def word() -> str:
        n, letters = next(serial), ""
        while n:
            n, r = divmod(n, 25)
            letters = chr(97 + r) + letters  # a..y: no 'z' inside, so every body word is z + letters
        return "z" + letters

    book = Book()
    chapter, section = 0, 0
    cut = False  # the previous page's last block runs on
    last_kind = "paragraph"
    for number in range(1, count + 1):
        blocks: list[str] = []
        words: list[str] = []
        failed = number > front and draw(st.integers(0, 11)) == 0
        opening = number > front and (number == front + 1 or draw(st.integers(0, 6)) == 0)
        folio = number + offset
        head = None
        if number > front and not opening:
            title = f"CHAPTER {chapter}. {SECTIONS[chapter % len(SECTIONS)]}" if number % 2 == 0 else f"{chapter}.{section}. {SECTIONS[(chapter + section) % len(SECTIONS)]}"
            head = _head(form, folio, title) if form != "title-first" else f"{title} {folio}"
        if opening:
            chapter, section = chapter + 1, 1
            heading = [word(), word()]
            blocks.append(f"## {chapter} {' '.join(heading)}")
            words += heading
            cut = False
        elif number > front and draw(st.integers(0, 3)) == 0:
            section += 1
        paragraphs = draw(st.integers(1, 3))
        for index in range(paragraphs):
            kind = last_kind if index == 0 and cut else draw(st.sampled_from(["paragraph", "paragraph", "list"]))
            text_words = [word() for _ in range(draw(st.integers(2, 7)))]
            runs_on = index == paragraphs - 1 and number < count and draw(st.booleans())
            if kind == "list":
                blocks.append("\n".join(f"- {w}" for w in text_words))
            else:
                blocks.append(" ".join(text_words) + ("" if runs_on else "."))
            words += text_words
            if index == 0 and paragraphs > 1 and head and draw(st.integers(0, 3)) == 0:
                decoy = head if form not in ("glued", "title-first") else head.replace("**", "")
                blocks.append(decoy)  # mid-page: between two paragraphs of this page
                if not failed:
                    book.decoys.append(decoy)
            last_kind = kind
            cut = runs_on
        if head and form in ("glued", "title-first") and not blocks[0].startswith(("## ", "- ")):
            blocks[0] = f"{head} {blocks[0]}"
        elif head:
            blocks.insert(0, head)
        if opening:
            blocks.append(str(folio))
        if head:
            book.heads.append(head)
        if number > front:
            book.folios.append(folio)
        book.pages.append(PageText(number, "failed" if failed else "converted", "\n\n".join(blocks), "throttled" if failed else None))
        book.words[number] = [] if failed else words
        if failed:
            cut = False
    return book


def _document(book: Book) -> str:
    return "".join(assemble_document(book.pages, survey(book.pages), expected_pages=len(book.pages)))


def _sections(document: str) -> dict[int, str]:
    parts = SECTION.split(document)
    return {int(parts[k]): parts[k + 1] for k in range(1, len(parts), 2)}


@settings(max_examples=200, deadline=None)
@given(books())
def test_every_body_word_appears_once_in_order_under_its_own_pages_marker(book: Book) -> None:
    document = _document(book)

    sections = _sections(document)
    assert list(sections) == [p.page_number for p in book.pages], "every page's marker once, in order"
    for page in book.pages:
        assert BODY_WORD.findall(sections[page.page_number]) == book.words[page.page_number], (page.page_number, [p.markdown for p in book.pages], document)


@settings(max_examples=200, deadline=None)
@given(books())
def test_a_line_away_from_the_edges_is_kept_even_when_it_reads_like_a_running_head(book: Book) -> None:
    document = _document(book)

    for decoy in set(book.decoys):
        assert document.count(decoy) >= book.decoys.count(decoy), decoy


def _repeats(book: Book) -> bool:
    """Every served page past the front matter has two served ones within five pages: its folio follows a sequence."""
    served = [p.page_number for p in book.pages if p.status != "failed" and book.words[p.page_number] is not None]
    body = [n for n in served if n > len(book.pages) - len(book.folios)]
    return len(body) >= 3 and all(sum(1 for m in body if 0 < abs(m - n) <= 5) >= 2 for n in body)


@settings(max_examples=200, deadline=None)
@given(books())
def test_once_heads_repeat_no_running_head_and_no_folio_is_left(book: Book) -> None:
    if not _repeats(book):
        return
    document = _document(book)

    body = re.sub(r"^> \*\*Page \d+ was not converted\*\*.*$", " ", SECTION.sub(" ", document), flags=re.M)  # failed_page_notice
    for decoy in book.decoys:
        body = body.replace(decoy, " ", 1)
    assert not re.search(r"\b(?:CHAPTER|ALPHA|BRAVO|CHARLIE|DELTA|ECHO|FOXTROT)\b", body), ([p.markdown for p in book.pages], document)
    left = {int(n) for n in re.findall(r"(?<![\w.])-?\d+(?![\w.])", re.sub(r"^#+ \d+ ", "", body, flags=re.M))}
    assert not left & set(book.folios), ([(p.status, p.markdown) for p in book.pages], document)


@settings(max_examples=150, deadline=None)
@given(books())
def test_the_pass_is_idempotent_what_it_leaves_holds_no_furniture(book: Book) -> None:
    furniture = survey(book.pages)
    once = [
        PageText(p.page_number, p.status, "\n\n".join(strip_furniture(page_text_blocks(p.markdown), p.page_number, furniture)[0]), p.reason)
        for p in book.pages
    ]
    again = survey(once)

    assert all(strip_furniture(page_text_blocks(p.markdown), p.page_number, again)[1] == [] for p in once if p.status != "failed")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([*"<>!-`~\n pagePAGE19/sup:b()[]j", "<!-- Page 3 -->", "```", "<sup>", "](javascript:"]), max_size=40).map("".join))
def test_safe_markdown_applied_twice_is_applied_once(text: str) -> None:
    assert safe_markdown(safe_markdown(text)) == safe_markdown(text)
