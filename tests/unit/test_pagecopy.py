"""Pages cut from a chunk PDF by its objects' bytes (batchlane.pdf.pagecopy) against pdfium's own copy."""

import contextlib
import io

import pypdfium2 as pdfium
from pypdf import PdfReader, PdfWriter
from pypdf.generic import ArrayObject, DictionaryObject, NameObject, NumberObject, RectangleObject, TextStringObject

from batchlane.pdf import open_chunk, open_pdf
from batchlane.pdf.pagecopy import ChunkObjects
from batchlane.pdf.split import PDFIUM_LOCK, ChunkSpan
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
    assert [p.pdf_bytes for p in pages] == [objects.page_pdf(i) for i in range(9)], "pages() uses the byte copy"
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


# -- hostile and damaged chunks ----------------------------------------------------------------------
# The copier reads bytes that came from a user's file (through pdfium): whatever they hold, it gives a
# valid one-page PDF or None (pdfium then copies), never an exception, and its work stays in proportion
# to what it copies.


def _file(objects: dict[int, bytes], root: int = 1) -> bytes:
    """A PDF laid out as pdfium writes one: each object ``N 0 obj\\r\\n...\\r\\nendobj\\r\\n``, a classic xref table."""
    parts = [b"%PDF-1.7\r\n%\xa1\xb3\xc5\xd7\r\n"]
    offsets = {}
    size = len(parts[0])
    for number in sorted(objects):
        body = b"%d 0 obj\r\n%s\r\nendobj\r\n" % (number, objects[number])
        offsets[number] = size
        parts.append(body)
        size += len(body)
    count = max(objects) + 1
    table = [b"xref\r\n0 %d\r\n0000000000 65535 f\r\n" % count]
    table += [b"%010d 00000 n\r\n" % offsets[n] if n in offsets else b"0000000000 65535 f\r\n" for n in range(1, count)]
    parts += table
    parts.append(b"trailer\r\n<<\r\n/Root %d 0 R\r\n/Size %d>>\r\nstartxref\r\n%d\r\n%%%%EOF\r\n" % (root, count, size))
    return b"".join(parts)


def _pages(count: int, extra: dict[int, bytes], page_entries: dict[int, bytes] | None = None) -> bytes:
    """``count`` pages (objects 3..) in a flat tree (2) under a catalog (1), plus ``extra`` objects."""
    kids = b" ".join(b"%d 0 R" % (3 + i) for i in range(count))
    objects = {1: b"<</Pages 2 0 R /Type/Catalog>>", 2: b"<</Count %d/Kids[ %s ]/Type/Pages>>" % (count, kids)}
    for i in range(count):
        entry = (page_entries or {}).get(i, b"")
        objects[3 + i] = b"<</MediaBox[ 0 0 200 200]/Parent 2 0 R /Resources<<>>%s/Type/Page>>" % entry
    objects.update(extra)
    return _file(objects)


def _valid_one_page_pdf(cut: bytes, source: bytes | None = None) -> None:
    """pypdf (strict) and pdfium open ``cut`` as one page, and every object its table lists reads, or was
    as unreadable in ``source`` (an object is copied as it is: a damaged one stays damaged, in place)."""
    reader = PdfReader(io.BytesIO(cut), strict=True)
    assert len(reader.pages) == 1
    for number in reader.xref.get(0, {}):
        try:
            reader.get_object(number)
        except Exception:
            if source is None:
                raise
            with contextlib.suppress(Exception):
                PdfReader(io.BytesIO(source), strict=True).get_object(number)
                raise AssertionError(f"object {number} reads in the chunk, not in the cut") from None
    with PDFIUM_LOCK:
        document = pdfium.PdfDocument(cut)
        try:
            assert len(document) == 1
            document[0].close()
        finally:
            document.close()


def test_a_crafted_chunk_reads_as_the_pdfs_it_cuts():
    """The crafting helper writes what the copier accepts: the hostile cases below are then about their content."""
    chunk = _pages(2, {10: b"<</Type/Annot/Subtype/Text/Rect[ 0 0 9 9]>>"}, {0: b"/Annots[ 10 0 R ]"})
    objects = ChunkObjects.parse(chunk)
    assert objects is not None and objects.kids == [3, 4]
    for index in range(2):
        cut = objects.page_pdf(index)
        assert cut is not None
        _valid_one_page_pdf(cut)
    assert b"10 0 obj" in (objects.page_pdf(0) or b"") and b"10 0 obj" not in (objects.page_pdf(1) or b"")


def test_overlapping_references_cost_work_in_proportion_to_the_page():
    """Annotations that all reach one large shared structure: a walk per annotation would enter it once
    for each (width x depth: 250,000 objects here); one walk per page enters each object once."""
    width, depth = 500, 500
    leaves = {2000 + i: b"<</N %d>>" % i for i in range(depth)}
    shared = {1999: b"[ %s ]" % b" ".join(b"%d 0 R" % n for n in leaves)}
    annotations = {1000 + i: b"<</Type/Annot/Subtype/Text/Rect[ 0 0 9 9]/Ref 1999 0 R >>" for i in range(width)}
    entry = b"/Annots[ %s ]" % b" ".join(b"%d 0 R" % n for n in annotations)
    chunk = _pages(2, {**leaves, **shared, **annotations}, {0: entry, 1: entry})
    objects = ChunkObjects.parse(chunk)
    assert objects is not None
    for index in range(2):
        before = objects.steps
        cut = objects.page_pdf(index)
        assert cut is not None
        _valid_one_page_pdf(cut)
        assert cut.count(b" 0 obj\r\n") == 2 + 1 + width + 1 + depth, "catalog, tree, page, annotations, the array, its leaves"
        assert objects.steps - before <= 3 * (width + depth + 2) + 64, objects.steps - before
    assert objects._kept <= 33 * (2 * width + depth + 4)


def test_damage_anywhere_in_a_chunk_never_raises_and_every_cut_is_a_valid_pdf():
    """Seeded byte flips over a real chunk (text, annotations, a link): each page is cut into a file
    pypdf (strict) and pdfium both open as one page, or left to pdfium; nothing raises."""
    import random

    writer = PdfWriter()
    _page_with_annotations(writer, "first (a) \\ note")
    _page_with_annotations(writer, "second", link_to=0)
    for _ in range(2):
        writer.add_blank_page(300, 300)
    out = io.BytesIO()
    writer.write(out)
    _span, chunk = _chunk(out.getvalue(), 4)
    assert ChunkObjects.parse(chunk) is not None
    rng = random.Random(27)
    alphabet = b"()<>[]{}/%\\ \r\n0123456789RobjendstreamxrefPage"
    cut_pages = 0
    for _ in range(300):
        damaged = bytearray(chunk)
        for _ in range(rng.randint(1, 4)):
            damaged[rng.randrange(len(damaged))] = rng.choice(alphabet)
        objects = ChunkObjects.parse(bytes(damaged))
        if objects is None:
            continue
        for index in range(len(objects.kids)):
            cut = objects.page_pdf(index)
            if cut is not None:
                cut_pages += 1
                try:
                    _valid_one_page_pdf(cut, bytes(damaged))
                except Exception as exc:
                    raise AssertionError(f"an invalid cut of page {index}: {exc!r}\n{cut[:2000]!r}") from exc
    assert cut_pages > 100, "most damage leaves the layout readable: the cuts were checked, not skipped"


def test_numbers_and_sizes_past_the_bounds_are_left_to_pdfium(monkeypatch):
    import batchlane.pdf.pagecopy as pagecopy

    huge = b"9" * 5000  # int() refuses more than 4,300 digits: a ValueError inside the walk
    chunk = _pages(2, {10: b"[ %s 0 R ]" % huge}, {0: b"/Foo 10 0 R"})
    objects = ChunkObjects.parse(chunk)
    assert objects is not None
    assert objects.page_pdf(0) is None and objects.page_pdf(1) is not None
    big = _pages(2, {10: b"[ %s ]" % (b"0 " * 4000)}, {0: b"/Foo 10 0 R"})
    monkeypatch.setattr(pagecopy, "MAX_HEAD_BYTES", 4096)
    objects = ChunkObjects.parse(big)
    assert objects is not None
    assert objects.page_pdf(0) is None, "a dictionary past MAX_HEAD_BYTES is not scanned"
    assert objects.page_pdf(1) is not None
    monkeypatch.setattr(pagecopy, "MAX_OBJECTS", 4)
    assert ChunkObjects.parse(big) is None, "a table past MAX_OBJECTS is not read"


def test_a_page_left_to_pdfium_still_comes_out(monkeypatch):
    """pages() falls back per page: the page the copier refuses is pdfium's copy, the others are cut."""
    import batchlane.pdf.pagecopy as pagecopy

    span, chunk = _chunk(make_pdf(3), 3)
    objects = ChunkObjects.parse(chunk)
    assert objects is not None
    refused = objects.kids[1]
    real = ChunkObjects._page_pdf

    def refuse_one(self, page):  # type: ignore[no-untyped-def]
        if page == refused:
            raise RecursionError("as a damaged chunk might make it")
        return real(self, page)

    monkeypatch.setattr(pagecopy.ChunkObjects, "_page_pdf", refuse_one)
    pages = list(open_chunk(chunk, span).pages(span))
    assert [p.pdf_bytes == objects.page_pdf(i) for i, p in enumerate(pages)] == [True, False, True]
    for page in pages:
        _valid_one_page_pdf(page.pdf_bytes)
