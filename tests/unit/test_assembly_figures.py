"""Figures as files: raster images out of the PDF (pdfium), decorations left out, linked where the model described them."""

from __future__ import annotations

import io
import re

from PIL import Image
from pypdf import PdfReader, PdfWriter

from batchlane import keys
from batchlane.domain.assembly import Figure, assemble_document, link_figures, survey
from batchlane.domain.markdown import PageText
from batchlane.filejob.figures import extract_figures, figure_folder
from batchlane_dev.local.bedrock.model import page_markdown
from batchlane_dev.local.bookgen import make_book_pdf
from batchlane_dev.local.pdfgen import IMAGE_PAGES, make_image_pdf
from tests.unit.usecases.usecase_fakes import MemoryStore


def test_embedded_images_come_out_at_their_own_resolution_and_a_scanned_page_is_not_a_figure() -> None:
    store = MemoryStore()
    store.put_bytes(keys.chunk_source_key("j1", 0), make_image_pdf())
    figures = extract_figures(store, "j1", [(0, 1, 3)])
    assert {n: [(f.width, f.height) for f in fs] for n, fs in figures.items()} == {1: [IMAGE_PAGES[0][0]], 2: [IMAGE_PAGES[1][0]]}
    first = store.objects[keys.images_prefix("j1") + "p1-1.png"]
    assert Image.open(io.BytesIO(first)).size == IMAGE_PAGES[0][0]


def test_a_banner_repeated_on_every_page_is_a_decoration_and_the_charts_are_files() -> None:
    book = make_book_pdf(figures=True)
    store = MemoryStore()
    store.put_bytes(keys.chunk_source_key("j1", 0), book.pdf)
    figures = extract_figures(store, "j1", [(0, 1, _pages(book.pdf))])
    assert sorted(figures) == book.figure_pages
    assert all(len(f) == 1 and (f[0].width, f[0].height) == (320, 200) for f in figures.values())
    written = store.list_keys(keys.images_prefix("j1"))
    assert written == sorted(f"{keys.images_prefix('j1')}p{n}-1.png" for n in book.figure_pages)
    assert Image.open(io.BytesIO(store.objects[written[0]])).size == (320, 200)


def test_the_model_s_description_becomes_the_alt_text_of_the_linked_file() -> None:
    blocks = ["Some text.", "*A bar chart of pages per lane.*", "More text."]
    linked = link_figures(blocks, [Figure("p4-1.png", 320, 200), Figure("p4-2.png", 100, 100)], "book.images", 4)
    assert linked == ["Some text.", "![A bar chart of pages per lane.](book.images/p4-1.png)", "More text.", "![Figure 2 of page 4](book.images/p4-2.png)"]
    assert figure_folder("reports/Book 2.pdf") == "Book_2.images"


def test_a_book_with_figures_assembles_with_links_and_without_its_banner() -> None:
    book = make_book_pdf(figures=True)
    reader = PdfReader(io.BytesIO(book.pdf))
    pages = []
    for number, page in enumerate(reader.pages, start=1):
        writer = PdfWriter()
        writer.add_page(page)
        data = io.BytesIO()
        writer.write(data)
        pages.append(PageText(number, "converted", page_markdown(data.getvalue(), visual=True)))
    store = MemoryStore()
    store.put_bytes(keys.chunk_source_key("j1", 0), book.pdf)
    figures = extract_figures(store, "j1", [(0, 1, _pages(book.pdf))])
    document = "".join(assemble_document(pages, survey(pages), expected_pages=len(pages), figures=figures, figure_folder="book.images"))
    assert "200×60" not in document, "the banner on every page is no figure"
    for number in book.figure_pages:
        assert f"](book.images/p{number}-1.png)" in document
    assert "![320×200 RGB image at (300, " in document, "the description is the alt text"
    assert "*[Figure:" not in document
    blocks = [b.strip() for b in document.split("\n\n")]
    assert not [b for b in blocks if b.isdigit()], "no folio left, figures or not"
    body = re.sub(r"!\[[^\]]*\]\([^)]*\)|<!-- Page \d+ -->", " ", document[document.index("<!-- Page 3 -->") :])
    assert body.replace("#", " ").split() == book.body_words, "a figure at a page's end does not stop its paragraph joining the next page"


def test_past_the_figure_budget_the_job_still_assembles_and_later_figures_stay_descriptions() -> None:
    book = make_book_pdf(figures=True)
    pages = _pages(book.pdf)
    store = MemoryStore()
    store.put_bytes(keys.chunk_source_key("j1", 0), book.pdf)
    store.put_bytes(keys.chunk_source_key("j1", 1), book.pdf)
    # The budget is spent once the first chunk's figures are written: its clock reads the bucket, not the time.
    clock = lambda: 500.0 if store.list_keys(keys.images_prefix("j1")) else 0.0  # noqa: E731

    figures = extract_figures(store, "j1", [(0, 1, pages), (1, 100, 99 + pages)], budget_s=120, clock=clock)

    assert sorted(figures) == book.figure_pages, "the first chunk's figures only"
    assert {figures.skipped[100 + n - 1] for n in range(1, pages + 1)} == {"FIGURE_WORK_OVER_BOUND"}, "the second chunk's pages say why"


def _pages(pdf: bytes) -> int:
    return len(PdfReader(io.BytesIO(pdf)).pages)
