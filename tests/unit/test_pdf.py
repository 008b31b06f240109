import io
import os
import subprocess
import sys

import pypdfium2
import pytest
from pypdf import PdfReader, PdfWriter
from pypdf.generic import DecodedStreamObject, NameObject

from batchlane.domain.errors import InputError
from batchlane.pdf import open_chunk, open_pdf, plan_chunks
from batchlane_dev.local.pdfgen import encrypted_pdf, make_pdf, page_phrase


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


def _write_scan_like_pdf(path, pages: int, image_bytes: int) -> None:  # type: ignore[no-untyped-def]
    """A PDF of ``pages`` pages, each one uncompressed image of its own (like a scanned book), written
    straight to disk so the test itself never holds the document in memory."""
    side = int((image_bytes / 3) ** 0.5)
    offsets: list[int] = []
    with open(path, "wb") as out:

        def obj(number: int, body: bytes, stream: bytes | None = None) -> None:
            offsets.append(out.tell())
            out.write(b"%d 0 obj\n" % number + body)
            if stream is not None:
                out.write(b"\nstream\n" + stream + b"\nendstream")
            out.write(b"\nendobj\n")

        out.write(b"%PDF-1.4\n")
        kids = b" ".join(b"%d 0 R" % (3 + 3 * i) for i in range(pages))
        obj(1, b"<< /Type /Catalog /Pages 2 0 R >>")
        obj(2, b"<< /Type /Pages /Count %d /Kids [%s] >>" % (pages, kids))
        draw = b"q 500 0 0 700 50 50 cm /Im Do Q"
        for i in range(pages):
            page, image, contents = 3 + 3 * i, 4 + 3 * i, 5 + 3 * i
            obj(
                page, b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im %d 0 R >> >> /Contents %d 0 R >>" % (image, contents)
            )
            pixels = os.urandom(side * side * 3)
            obj(
                image,
                b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceRGB /BitsPerComponent 8 /Length %d >>" % (side, side, len(pixels)),
                pixels,
            )
            obj(contents, b"<< /Length %d >>" % len(draw), draw)
        xref = out.tell()
        out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(offsets) + 1) + b"".join(b"%010d 00000 n \n" % o for o in offsets))
        out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(offsets) + 1, xref))


_SPLIT_IN_A_CHILD = """
import resource, sys
from batchlane.pdf.split import open_pdf_file
imported = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
with open(sys.argv[1], "rb") as stream:
    document = open_pdf_file(stream, max_pages=1000)
    written = sum(len(document.chunk_pdf(span)) for span in document.chunks(5))
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - imported) * 1024, written)
"""


def _split_peak(path) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """(peak resident bytes above the interpreter's, bytes written) of validating and splitting ``path`` in 5-page chunks, as job_split does,
    in a fresh process: the peak RSS counts pdfium's C allocations too, which tracemalloc cannot see."""
    out = subprocess.run([sys.executable, "-c", _SPLIT_IN_A_CHILD, str(path)], check=True, capture_output=True, text=True).stdout.split()
    return int(out[0]), int(out[1])


def test_splitting_a_large_scan_from_disk_holds_about_one_chunk_not_the_document(tmp_path):
    # Given two "scanned books" on disk, 15 and 30 MB (the split function streams the upload to /tmp)
    small, large = tmp_path / "small.pdf", tmp_path / "large.pdf"
    _write_scan_like_pdf(small, pages=20, image_bytes=750_000)
    _write_scan_like_pdf(large, pages=40, image_bytes=750_000)
    # When each is validated and split into chunk PDFs
    small_peak, small_written = _split_peak(small)
    large_peak, large_written = _split_peak(large)
    # Then every page was written, and twice the document costs far less than twice the memory:
    # memory follows the chunk, not the document (pypdf's cache of parsed objects would keep it all)
    assert small_written >= small.stat().st_size * 0.95 and large_written >= large.stat().st_size * 0.95
    growth = large_peak - small_peak
    extra = large.stat().st_size - small.stat().st_size
    assert growth < extra / 2, f"{growth / 2**20:.0f} MiB more memory for {extra / 2**20:.0f} MiB more document"
    assert large_peak < large.stat().st_size, f"peak {large_peak / 2**20:.0f} MiB"


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


def test_hex_string_characters_are_two_digits_each_whitespace_not_counted():
    """_hex_chars over a page's hex strings, at C speed, counts what a per-string regex pass counts."""
    import random
    import re

    from batchlane.pdf.split import _hex_chars

    rng = random.Random(27)
    alphabet = b"0123456789abcdefABCDEF \t\n\r\f\v"
    for _ in range(200):
        strings = [bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 12))) for _ in range(rng.randrange(0, 40))]
        assert _hex_chars(strings) == sum(len(re.sub(rb"\s+", b"", digits)) // 2 for digits in strings), strings
    assert _hex_chars([]) == 0 and _hex_chars([b"48 6\n9", b"2", b"\x0b"]) == 2


def test_text_chars_is_close_to_the_extracted_text_layer():
    document = open_pdf(make_pdf(6, lines_per_page=30), max_pages=10)
    for page in document.pages(document.chunks(10)[0]):
        extracted = len(PdfReader(io.BytesIO(page.pdf_bytes)).pages[0].extract_text().strip())
        assert abs(page.text_chars - extracted) <= 0.05 * extracted


GOOD = make_pdf(3)


@pytest.mark.parametrize(
    "data,error_id",
    [
        (b"", "PDF_EMPTY"),
        (b"hello, not a pdf at all", "PDF_NOT_PDF"),
        (GOOD[: len(GOOD) // 2], "PDF_CORRUPT"),
        (b"%PDF-1.7\n%%EOF\n", "PDF_CORRUPT"),
        (encrypted_pdf(GOOD, "secret"), "PDF_ENCRYPTED"),
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
    # pdfium reads the text layer in C; pypdf's extract_text interprets all 220,000 segments in Python (~25 s)
    split_page = pypdfium2.PdfDocument(page.pdf_bytes)[0]
    assert "A drawing stored without compression" in split_page.get_textpage().get_text_bounded()
    assert not page.blank
