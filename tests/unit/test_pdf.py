import io

import pytest
from pypdf import PdfReader, PdfWriter

from batchlane.domain.errors import InputError
from batchlane.local.pdfgen import make_pdf, page_phrase
from batchlane.pdf import open_pdf, plan_chunks


def test_chunks_cover_every_page_once():
    spans = plan_chunks(101, 50)
    assert [(s.first_page, s.last_page) for s in spans] == [(1, 50), (51, 100), (101, 101)]
    with pytest.raises(ValueError):
        plan_chunks(0, 50)


def test_split_yields_one_page_pdfs_in_order_with_blank_detection():
    document = open_pdf(make_pdf(30, blank_every=7), max_pages=100)
    pages = [page for span in document.chunks(8) for page in document.pages(span)]
    assert [p.number for p in pages] == list(range(1, 31))
    assert {p.number for p in pages if p.blank} == {7, 14, 21, 28}
    page_9 = PdfReader(io.BytesIO(pages[8].pdf_bytes))
    assert len(page_9.pages) == 1
    assert page_phrase(9, 30) in page_9.pages[0].extract_text()
    assert pages[8].chunk_index == 1


def _encrypted(data: bytes) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt("secret")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


GOOD = make_pdf(3)


@pytest.mark.parametrize(
    "data,error_id",
    [
        (b"", "PDF_EMPTY"),
        (b"hello, not a pdf at all", "PDF_NOT_PDF"),
        (GOOD[: len(GOOD) // 2], "PDF_CORRUPT"),
        (b"%PDF-1.7\n%%EOF\n", "PDF_CORRUPT"),
        (_encrypted(GOOD), "PDF_ENCRYPTED"),
    ],
)
def test_bad_input_has_a_stable_error_id_and_one_line(data, error_id):
    with pytest.raises(InputError) as caught:
        open_pdf(data, max_pages=100)
    assert caught.value.error_id == error_id
    assert "\n" not in str(caught.value)


def test_page_limit():
    with pytest.raises(InputError) as caught:
        open_pdf(GOOD, max_pages=2)
    assert caught.value.error_id == "PDF_TOO_MANY_PAGES"


def test_zero_page_pdf():
    out = io.BytesIO()
    PdfWriter().write(out)
    with pytest.raises(InputError) as caught:
        open_pdf(out.getvalue(), max_pages=10)
    assert caught.value.error_id == "PDF_NO_PAGES"
