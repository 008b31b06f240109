import io

import pytest
from pypdf import PdfReader, PdfWriter
from pypdf.generic import DecodedStreamObject, NameObject

from batchlane.domain.errors import InputError
from batchlane.local.pdfgen import make_pdf, page_phrase
from batchlane.pdf import open_chunk, open_pdf, plan_chunks


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


def _pdf_with_contents(*streams: bytes) -> bytes:
    """One page per content stream, written exactly as given (fonts are irrelevant here)."""
    writer = PdfWriter()
    for data in streams:
        page = writer.add_blank_page(612, 792)
        stream = DecodedStreamObject()
        stream.set_data(data)
        page[NameObject("/Contents")] = writer._add_object(stream)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_text_chars_counts_the_strings_a_page_shows_without_extracting_text():
    data = _pdf_with_contents(
        b"BT /F1 12 Tf 72 700 Td (Hello world) Tj ET",  # 11 characters
        b"BT /F1 12 Tf [(Ke) -20 (rn\\(ed\\))] TJ <48 69 21> Tj ET",  # Ke + rn(ed) + 3 hex characters
        b"/Span << /MCID 0 >> BDC 0 0 m 100 100 l S EMC",  # marked content and a line: no text
        b"q Q",  # nothing painted
    )
    document = open_pdf(data, max_pages=10)
    pages = list(document.pages(document.chunks(10)[0]))
    assert [p.text_chars for p in pages] == [11, 2 + 6 + 3, 0, 0]
    assert [p.blank for p in pages] == [False, False, False, True]


def test_text_chars_is_close_to_the_extracted_text_layer():
    document = open_pdf(make_pdf(6, lines_per_page=30), max_pages=10)
    for page in document.pages(document.chunks(10)[0]):
        extracted = len(PdfReader(io.BytesIO(page.pdf_bytes)).pages[0].extract_text().strip())
        assert abs(page.text_chars - extracted) <= 0.05 * extracted


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


def _page_with_annotation(writer: PdfWriter, subtype: str, *, flags: int = 0, appearance: bool = True) -> None:
    from pypdf.generic import ArrayObject, DictionaryObject, NumberObject, RectangleObject

    page = writer.add_blank_page(612, 792)  # an empty content stream: nothing painted by the page itself
    annotation = DictionaryObject({NameObject("/Type"): NameObject("/Annot"), NameObject("/Subtype"): NameObject(subtype)})
    annotation[NameObject("/Rect")] = RectangleObject([72, 700, 300, 720])
    annotation[NameObject("/F")] = NumberObject(flags)
    if appearance:
        stream = DecodedStreamObject()
        stream.set_data(b"BT /Helv 12 Tf 2 4 Td (APPROVED) Tj ET")
        annotation[NameObject("/AP")] = DictionaryObject({NameObject("/N"): writer._add_object(stream)})
    page[NameObject("/Annots")] = ArrayObject([writer._add_object(annotation)])


def test_a_page_showing_only_a_filled_field_or_stamp_is_not_blank():
    """Scanned forms and stamped pages often paint nothing themselves: their annotations show the content."""
    writer = PdfWriter()
    _page_with_annotation(writer, "/Widget")  # a filled form field
    _page_with_annotation(writer, "/Stamp")
    _page_with_annotation(writer, "/Link")  # a link draws nothing
    _page_with_annotation(writer, "/Widget", flags=0b10)  # hidden
    _page_with_annotation(writer, "/FreeText", appearance=False)  # no appearance stream to draw
    out = io.BytesIO()
    writer.write(out)
    document = open_pdf(out.getvalue(), max_pages=10)
    pages = list(document.pages(document.chunks(10)[0]))
    assert [p.blank for p in pages] == [False, False, True, True, True]
    assert "/Annots" in PdfReader(io.BytesIO(pages[0].pdf_bytes)).pages[0], "the split page keeps its annotations"


def test_the_same_page_is_the_same_bytes_every_time():
    """The batch record and the on-demand call carry the page the chunk PDF yields: no clock, no random /ID."""
    data = make_pdf(12, blank_every=5)
    whole = open_pdf(data, max_pages=100)
    span = whole.chunks(6)[1]
    chunk = whole.chunk_pdf(span)
    assert chunk == open_pdf(data, max_pages=100).chunk_pdf(span), "job creation writes the same chunk PDF twice"
    first = [p.pdf_bytes for p in open_chunk(chunk, span).pages(span)]
    again = [p.pdf_bytes for p in open_chunk(chunk, span).pages(span)]
    assert first == again
    assert len(set(first)) == len(first), "each page is its own file"
    for pdf_bytes in first:
        assert b"/CreationDate" not in pdf_bytes and b"/ModDate" not in pdf_bytes
        assert PdfReader(io.BytesIO(pdf_bytes)).trailer["/ID"][0] != b"\0" * 16


def test_a_chunk_pdf_keeps_the_document_page_numbers_and_content():
    data = make_pdf(12, blank_every=5)
    whole = open_pdf(data, max_pages=100)
    span = whole.chunks(6)[1]
    pages = list(open_chunk(whole.chunk_pdf(span), span).pages(span))
    assert [p.number for p in pages] == list(range(7, 13))
    assert {p.number for p in pages if p.blank} == {10}
    assert page_phrase(8, 12) in PdfReader(io.BytesIO(pages[1].pdf_bytes)).pages[0].extract_text()


def test_a_page_big_only_because_its_producer_did_not_compress_it_comes_out_compressed():
    """pdfium Flate-compresses unfiltered streams when it writes the split page: such a page fits, whole."""
    from bigpages import vector_page

    from batchlane.domain.limits import MAX_PAGE_BYTES

    data = vector_page(220_000, text="A drawing stored without compression")
    assert len(data) > MAX_PAGE_BYTES
    document = open_pdf(data, max_pages=1)
    page = next(document.pages(document.chunks(1)[0]))
    assert len(page.pdf_bytes) < MAX_PAGE_BYTES
    assert "A drawing stored without compression" in PdfReader(io.BytesIO(page.pdf_bytes)).pages[0].extract_text()
    assert not page.blank
