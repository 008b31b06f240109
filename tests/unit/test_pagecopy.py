"""Pages cut from a chunk PDF by its objects' bytes (batchlane.pdf.pagecopy) against pdfium's own copy."""

import io

import pypdfium2 as pdfium
from pypdf import PdfReader, PdfWriter
from pypdf.generic import ArrayObject, DictionaryObject, NameObject, NumberObject, RectangleObject, TextStringObject

from batchlane.pdf import open_chunk, open_pdf
from batchlane.pdf.pagecopy import ChunkObjects
from batchlane.pdf.split import PDFIUM_LOCK, ChunkSpan, _stable_id
from batchlane_dev.local.pdfgen import make_pdf, page_phrase


def _chunk(data: bytes, pages: int) -> tuple[ChunkSpan, bytes]:
    span = ChunkSpan(0, 1, pages)
    return span, open_pdf(data, max_pages=1000).chunk_pdf(span)


def _looks(pdf_bytes: bytes) -> tuple[tuple[float, float], str, bytes]:
    """What a reader sees of a one-page PDF: its size, its text, its pixels."""
    with PDFIUM_LOCK:
        document = pdfium.PdfDocument(pdf_bytes)
        try:
            assert len(document) == 1
            page = document[0]
            seen = (page.get_size(), page.get_textpage().get_text_range(), page.render(scale=0.5).to_pil().tobytes())
            page.close()
        finally:
            document.close()
    return seen


def _pdfium_copy(chunk: bytes, index: int) -> bytes:
    with PDFIUM_LOCK:
        source, target = pdfium.PdfDocument(chunk), pdfium.PdfDocument.new()
        try:
            target.import_pages(source, [index])
            buffer = io.BytesIO()
            target.save(buffer)
        finally:
            target.close()
            source.close()
    return buffer.getvalue()


def test_a_page_cut_by_bytes_reads_and_renders_as_pdfiums_copy():
    span, chunk = _chunk(make_pdf(9, blank_every=4), 9)
    objects = ChunkObjects.parse(chunk)
    assert objects is not None, "a chunk PDF pdfium wrote is read by the byte copier"
    for index in range(9):
        cut = objects.page_pdf(index)
        assert cut is not None
        assert _looks(cut) == _looks(_pdfium_copy(chunk, index))
        assert page_phrase(index + 1, 9) in PdfReader(io.BytesIO(cut)).pages[0].extract_text() or (index + 1) % 4 == 0
    pages = list(open_chunk(chunk, span).pages(span))
    assert [p.pdf_bytes for p in pages] == [_stable_id(objects.page_pdf(i) or b"") for i in range(9)], "pages() uses the byte copy"
    assert {p.number for p in pages if p.blank} == {4, 8}


def test_a_page_carries_only_what_it_references():
    writer = PdfWriter()
    for number in range(3):
        writer.add_blank_page(200 + number, 300)
    out = io.BytesIO()
    writer.write(out)
    _span, chunk = _chunk(out.getvalue(), 3)
    objects = ChunkObjects.parse(chunk)
    assert objects is not None
    cut = objects.page_pdf(1)
    assert cut is not None
    reader = PdfReader(io.BytesIO(cut), strict=True)  # a strict reader accepts the xref subsections
    assert len(reader.pages) == 1 and float(reader.pages[0].mediabox.width) == 201
    assert len(cut) < len(chunk)


def _page_with_annotations(writer: PdfWriter, contents: str, *, link_to: int | None = None) -> None:
    page = writer.add_blank_page(612, 792)
    annotation = DictionaryObject({NameObject("/Type"): NameObject("/Annot"), NameObject("/Subtype"): NameObject("/Text")})
    annotation[NameObject("/Rect")] = RectangleObject([72, 700, 300, 720])
    annotation[NameObject("/Contents")] = TextStringObject(contents)
    annotations = [writer._add_object(annotation)]
    if link_to is not None:
        link = DictionaryObject({NameObject("/Type"): NameObject("/Annot"), NameObject("/Subtype"): NameObject("/Link")})
        link[NameObject("/Rect")] = RectangleObject([72, 600, 300, 620])
        link[NameObject("/Dest")] = ArrayObject([writer.pages[link_to].indirect_reference, NameObject("/Fit")])
        link[NameObject("/F")] = NumberObject(4)
        annotations.append(writer._add_object(link))
    page[NameObject("/Annots")] = ArrayObject(annotations)


def test_strings_that_look_like_syntax_are_not_followed():
    """A string holding "9 0 R", "stream", parentheses and a line break is data, copied as it is."""
    writer = PdfWriter()
    tricky = "see 1 0 R and 3 0 R (nested) stream\nendobj %not a comment\\"
    _page_with_annotations(writer, tricky)
    _page_with_annotations(writer, "plain")
    out = io.BytesIO()
    writer.write(out)
    _span, chunk = _chunk(out.getvalue(), 2)
    objects = ChunkObjects.parse(chunk)
    assert objects is not None
    for index, text in ((0, tricky), (1, "plain")):
        cut = objects.page_pdf(index)
        assert cut is not None
        page = PdfReader(io.BytesIO(cut)).pages[0]
        annotations = page["/Annots"].get_object()
        assert isinstance(annotations, ArrayObject)
        assert [a.get_object()["/Contents"] for a in annotations] == [text]


def test_a_page_that_references_another_page_is_left_to_pdfium():
    writer = PdfWriter()
    _page_with_annotations(writer, "first")
    _page_with_annotations(writer, "links back", link_to=0)
    out = io.BytesIO()
    writer.write(out)
    span, chunk = _chunk(out.getvalue(), 2)
    objects = ChunkObjects.parse(chunk)
    assert objects is not None
    assert objects.page_pdf(0) is not None
    assert objects.page_pdf(1) is None, "copying it would pull in the other page and the whole tree"
    pages = list(open_chunk(chunk, span).pages(span))
    assert len(PdfReader(io.BytesIO(pages[1].pdf_bytes)).pages) == 1, "pdfium copied it instead"


def test_files_not_laid_out_as_pdfium_writes_them_are_not_read():
    data = make_pdf(3)
    _span, chunk = _chunk(data, 3)
    assert ChunkObjects.parse(chunk) is not None
    assert chunk.count(b"/Type/Page>>") == 3
    incremental = chunk + b"trailer\r\n<</Root 1 0 R /Prev 9 /Size 3>>\r\nstartxref\r\n%d\r\n%%%%EOF\r\n" % chunk.rindex(b"xref")
    broken = {
        "empty": b"",
        "header only": b"%PDF-1.7\r\n",
        "cut": chunk[:-200],
        "incremental": incremental,
        "comment": chunk.replace(b"/Type/Page>>", b"%Type/Page>>", 1),  # same length: every offset still right
        "unescaped string": chunk.replace(b"/Type/Page>>", b"/Ty(a(b)c)>>", 1),
        "offsets off": chunk.replace(b"2 0 obj", b"2 0 obj ", 1),  # every later object one byte past its offset
    }
    for name, other in broken.items():
        objects = ChunkObjects.parse(other)
        assert objects is None or all(objects.page_pdf(i) is None for i in range(3)), name


def test_the_byte_copy_makes_no_pdfium_call(monkeypatch):
    """It needs no lock: nothing in it reaches pdfium (tests/unit/test_pdfium_lock.py holds the rest)."""
    _span, chunk = _chunk(make_pdf(4), 4)
    objects = ChunkObjects.parse(chunk)
    assert objects is not None

    def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("pdfium called")

    monkeypatch.setattr(pdfium.PdfDocument, "new", refuse)
    monkeypatch.setattr(pdfium.PdfDocument, "import_pages", refuse)
    monkeypatch.setattr(pdfium.PdfDocument, "save", refuse)
    assert all(objects.page_pdf(i) is not None for i in range(4))
