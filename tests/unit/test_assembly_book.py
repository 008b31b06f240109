"""The document pass on a real PDF's pages: a typeset book, each page read alone (the emulator echoes its text layer)."""

from __future__ import annotations

import io
import re

import pytest
from pypdf import PdfReader, PdfWriter

from batchlane.domain.assembly import assemble_document, page_text_blocks, strip_furniture, survey
from batchlane.domain.markdown import PageText, assemble
from batchlane_dev.local.bedrock.model import page_markdown
from batchlane_dev.local.bookgen import FRONT_PAGES, Book, make_book_pdf

MARKER = re.compile(r"<!-- Page \d+ -->")


@pytest.fixture(scope="module")
def book() -> Book:
    return make_book_pdf()


@pytest.fixture(scope="module")
def pages(book: Book) -> list[PageText]:
    """Each page as the lanes convert it: split out alone, answered from its own text layer."""
    reader = PdfReader(io.BytesIO(book.pdf))
    out = []
    for number, page in enumerate(reader.pages, start=1):
        writer = PdfWriter()
        writer.add_page(page)
        data = io.BytesIO()
        writer.write(data)
        out.append(PageText(number, "converted", page_markdown(data.getvalue())))
    return out


def _document(pages: list[PageText]) -> str:
    return "".join(assemble_document(pages, survey(pages), expected_pages=len(pages)))


def _words(markdown: str) -> list[str]:
    return [w for w in MARKER.sub(" ", markdown).replace("#", " ").split() if w]


def test_the_page_by_page_output_today_carries_heads_folios_and_cut_words(book: Book, pages: list[PageText]) -> None:
    glued = assemble(pages, expected_pages=len(pages))
    assert any(f"## {head}" in glued or f"\n{head}\n" in glued for head in book.heads)
    assert re.search(r"\n\n\d+\n\n", glued), "a folio stands as its own paragraph"
    assert f"{book.cut_words[0][:3]}-" in glued


def test_the_body_is_every_word_once_in_order_and_nothing_else(book: Book, pages: list[PageText]) -> None:
    document = _document(pages)
    body = document[document.index("<!-- Page 3 -->") :]
    assert _words(body) == book.body_words  # running heads, folios and hyphens gone; no body word lost or moved


def test_no_running_head_and_no_folio_is_left_in_the_body(book: Book, pages: list[PageText]) -> None:
    document = _document(pages)
    blocks = [b.strip().lstrip("#").strip() for b in document.split("\n\n")]
    assert not [b for b in blocks if b in book.heads and b != "A Short Book on Assembly"]
    assert blocks.count("A Short Book on Assembly") == 1, "the title page keeps its title, once"
    assert not [b for b in blocks if b.isdigit()], "no bare page number"


def test_a_paragraph_cut_by_a_page_break_is_one_paragraph_with_the_marker_inline(book: Book, pages: list[PageText]) -> None:
    document = _document(pages)
    for number in range(1, book.pages + 1):
        assert document.count(f"<!-- Page {number} -->") == 1, number
    inline = [int(n) for n in re.findall(r"\w <!-- Page (\d+) --> \w", document)]
    assert inline and set(inline) <= set(book.cut_pages)
    assert len(inline) >= len(book.cut_pages) - 2, (inline, book.cut_pages)  # a page opening on a heading breaks there
    for word in book.cut_words:
        assert f"{word[:3]}-" not in document
    for paragraph in document.split("\n\n"):
        assert not re.fullmatch(r"[a-z].*", paragraph.split("\n")[0]) or paragraph.startswith("and so it ends"), paragraph[:80]


def test_heading_levels_follow_the_numbering(pages: list[PageText]) -> None:
    document = _document(pages)
    headings = re.findall(r"^(#+) (\d+(?:\.\d+)*) ", document, re.MULTILINE)
    assert headings, "the book's numbered headings"
    for hashes, number in headings:
        assert len(hashes) == number.count(".") + 2, (hashes, number)


def test_every_folio_follows_the_page_sequence_less_the_front_matter(pages: list[PageText]) -> None:
    furniture = survey(pages)
    for page in pages[FRONT_PAGES:]:
        removed = strip_furniture(page_text_blocks(page.markdown), page.page_number, furniture)[1]
        assert str(page.page_number - FRONT_PAGES) in removed, (page.page_number, removed)
