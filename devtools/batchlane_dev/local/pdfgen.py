"""Test documents: a multi-page PDF with real text on every page (reportlab, ~2 s per 1,000 pages).

Each page carries a heading and paragraphs that name the page ("page 17 of 1200"), so a
test can check that each page's own text landed under its own marker. Every
``blank_every``-th page is left empty on purpose.
"""

from __future__ import annotations

import io
import zlib

from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

_WORDS = (
    "batch inference bills half of on-demand for jobs that can wait while every page keeps its marker and "
    "nothing is lost between prepare submit wait collect and resume the ledger holds one row per batch job"
).split()


def page_phrase(number: int, total: int) -> str:
    return f"This is page {number} of {total}"


def make_pdf(pages: int, *, blank_every: int = 0, lines_per_page: int = 18, title: str = "batchlane sample") -> bytes:
    if pages < 1:
        raise ValueError("pages must be at least 1")
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=True)
    _, height = A4
    for number in range(1, pages + 1):
        if not (blank_every and number % blank_every == 0):
            pdf.setFont("Helvetica-Bold", 16)
            pdf.drawString(72, height - 72, f"{title}: section {number}")
            pdf.setFont("Helvetica", 10)
            pdf.drawString(72, height - 100, f"{page_phrase(number, pages)}.")
            for line in range(lines_per_page):
                start = (number * 7 + line * 3) % len(_WORDS)
                words = [_WORDS[(start + k) % len(_WORDS)] for k in range(12)]
                pdf.drawString(72, height - 130 - line * 14, " ".join(words).capitalize() + ".")
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


# The images of make_image_pdf: (pixel size, colour mode, how it is stored, where it is drawn
# (x, y, width, height) in points). No page has a text layer: only a model that sees the page
# as an image can convert them (docs/architecture.md, "Claude sees the page").
IMAGE_PAGES = (
    ((640, 480), "L", "PNG", (72, 300, 451, 338)),  # a grayscale picture
    ((600, 400), "CMYK", "JPEG", (60, 200, 475, 317)),  # a CMYK JPEG, as print workflows make them
    ((850, 1100), "RGB", "JPEG", (0, 0, 595, 842)),  # a full-page colour scan
)
_PAPER: dict[str, int | tuple[int, ...]] = {"L": 230, "CMYK": (0, 40, 80, 0), "RGB": (245, 240, 228)}
_INK: dict[str, int | tuple[int, ...]] = {"L": 40, "CMYK": (0, 0, 0, 220), "RGB": (30, 30, 30)}


def make_image_pdf() -> bytes:
    """A PDF of image-only pages (grayscale PNG, CMYK JPEG, RGB scan-like page), no text layer."""
    from PIL import Image, ImageDraw
    from reportlab.lib.utils import ImageReader

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=True)
    for index, (size, mode, fmt, (x, y, width, height)) in enumerate(IMAGE_PAGES):
        image = Image.new(mode, size, _PAPER[mode])
        draw = ImageDraw.Draw(image)
        for row in range(40, size[1] - 40, 24):  # lines of "scanned text": marks, not a text layer
            draw.rectangle((40 + index * 7, row, size[0] - 60, row + 8), fill=_INK[mode])
        data = io.BytesIO()
        image.save(data, format=fmt, quality=80) if fmt == "JPEG" else image.save(data, format=fmt)
        data.seek(0)
        pdf.drawImage(ImageReader(data), x, y, width=width, height=height)
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def encrypted_pdf(data: bytes, password: str) -> bytes:
    """``data`` with a user password: what a password-protected upload looks like."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(password)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


# -- hostile inputs (issue 15): tiny files that once hung or crashed the split -----------------


def _raw_pdf(objects: list[bytes], *, xref_entries: int | None = None) -> bytes:
    """A PDF of ``objects`` (numbered from 1, object 1 the catalog) with a plain xref table.
    ``xref_entries`` makes the table's subsection header declare that many entries (a lie)."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    count = len(objects) + 1
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (xref_entries or count))
    out.write(b"".join(b"%010d 00000 n \n" % offset for offset in offsets))
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (xref_entries or count, xref))
    return out.getvalue()


def _stream(data: bytes, *, compress: bool = False) -> bytes:
    import zlib

    if compress:
        data = zlib.compress(data, 9)
        return b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(data), data)
    return b"<< /Length %d >>\nstream\n%s\nendstream" % (len(data), data)


_FONT = b"<< /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >>"


def unbalanced_parentheses_pdf(count: int = 40_000) -> bytes:
    """One page that shows "Hi" then opens ``count`` strings it never closes, compressed: ~600 bytes
    for 40k, which a backtracking string regex took 27 s to read."""
    content = b"BT /F1 12 Tf 72 700 Td (Hi) Tj " + b"(" * count + b" ET"
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources %s /Contents 4 0 R >>" % _FONT
    return _raw_pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>", page, _stream(content, compress=True)])


def deep_page_tree_pdf(depth: int = 5_000, *, shallow_pages: int = 0) -> bytes:
    """One page under ``depth`` nested /Pages nodes (readers cap the depth: pdfium 1,024, pypdf 100),
    after ``shallow_pages`` ordinary pages that read fine (a split then fails part way)."""
    content = 3 + depth  # the content stream every page shares; node 2 + level, level 0 is the root
    leaf = 2 + depth
    shallow = [content + 1 + n for n in range(shallow_pages)]
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    for level in range(depth):
        parent = b"/Parent %d 0 R " % (1 + level) if level else b""
        kids = b" ".join(b"%d 0 R" % n for n in ([*shallow, 3] if level == 0 else [3 + level]))
        count = shallow_pages + 1 if level == 0 else 1
        objects.append(b"<< /Type /Pages %s/Kids [%s] /Count %d >>" % (parent, kids, count))
    objects.append(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources %s /Contents %d 0 R >>" % (leaf - 1, _FONT, content))
    objects.append(_stream(b"BT /F1 12 Tf 72 700 Td (deep) Tj ET"))
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources %s /Contents %d 0 R >>" % (_FONT, content)] * shallow_pages
    return _raw_pdf(objects)


def huge_xref_pdf(entries: int = 50_000_000) -> bytes:
    """A one-page PDF whose xref table declares ``entries`` entries: a few hundred bytes."""
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources %s /Contents 4 0 R >>" % _FONT
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>", page, _stream(b"BT /F1 12 Tf 72 700 Td (xref) Tj ET")]
    return _raw_pdf(objects, xref_entries=entries)


def object_flood_pdf(objects: int = 900_000) -> bytes:
    """``objects`` small objects and a startxref that points nowhere (issue 40): pdfium refuses it at once; pypdf,
    which says why, rebuilds the table by scanning every object (~57 MB and 24-31 s of reading for 900,000)."""
    parts = [b"%PDF-1.7\n"]
    parts += [b"%d 0 obj\n<< /Type /Annot /Contents (note %d) >>\nendobj\n" % (n, n) for n in range(1, objects + 1)]
    parts.append(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n999999999\n%%%%EOF\n" % (objects + 1))
    return b"".join(parts)


def operator_bomb_pdf(operator_bytes: int = 15_000_000) -> bytes:
    """One page drawing ``operator_bytes`` of path operators from one FlateDecode stream (issue 40's content-operator
    bomb: ~80 KB on disk, under the 16 MiB content cap, so it is surveyed: seconds of pdfium parsing a read)."""
    return inflating_page_pdf(operator_bytes)


def _drawing_operators(target_bytes: int) -> bytes:
    """Path-drawing operators (move, line, stroke) until ``target_bytes``: costly for a renderer to
    parse, compressing ~100:1 because every line repeats."""
    line = b"0 0 m 1 1 l S\n"
    return line * (target_bytes // len(line))


def shared_drawing_stream_pdf(pages: int = 300, inflated_bytes: int = 5_000_000) -> bytes:
    """``pages`` pages that all draw one FlateDecode stream inflating to ``inflated_bytes`` of drawing
    operators (issue 21): ~57 KB on disk; a reader parses the 5 MB once per page."""
    content = 3 + pages
    kids = b" ".join(b"%d 0 R" % (3 + n) for n in range(pages))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages)]
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources %s /Contents %d 0 R >>" % (_FONT, content)] * pages
    objects.append(_stream(b"BT /F1 12 Tf 72 700 Td (shared) Tj ET\n" + _drawing_operators(inflated_bytes), compress=True))
    return _raw_pdf(objects)


def inflating_page_pdf(inflated_bytes: int = 30_000_000, *, ordinary_pages: int = 0) -> bytes:
    """One page whose FlateDecode content stream inflates to ``inflated_bytes`` of drawing operators
    (issue 21): ~59 KB on disk, ~540 MB of a renderer's memory; after ``ordinary_pages`` pages of one
    line of text each (the rest of a document that still converts)."""
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources %s /Contents %d 0 R >>"
    pages = 1 + ordinary_pages
    kids = b" ".join(b"%d 0 R" % (3 + n) for n in range(pages))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages)]
    objects += [page % (_FONT, 3 + pages + n) for n in range(pages)]
    objects += [_stream(b"BT /F1 12 Tf 72 700 Td (Ordinary page %d of the document.) Tj ET" % (n + 1)) for n in range(ordinary_pages)]
    objects.append(_stream(b"BT /F1 12 Tf 72 700 Td (inflating) Tj ET\n" + _drawing_operators(inflated_bytes), compress=True))
    return _raw_pdf(objects)


VECTOR_CHART_PAGE = 2  # of 3; the chart on it is drawn in vectors (no image object), with a small box as a decoration


def make_vector_chart_pdf() -> bytes:
    """Three text pages; the second has a reportlab bar chart drawn as paths, the figure a model crops from the page."""
    from reportlab.graphics import renderPDF
    from reportlab.graphics.charts.barcharts import VerticalBarChart
    from reportlab.graphics.shapes import Drawing

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4)
    height = A4[1]
    for number in range(1, 4):
        pdf.setFont("Helvetica", 11)
        pdf.drawString(72, height - 72, f"Chapter text on page {number}: the lanes compared.")
        if number == VECTOR_CHART_PAGE:
            drawing = Drawing(360, 220)
            chart = VerticalBarChart()
            chart.x, chart.y, chart.width, chart.height = 40, 30, 300, 170
            chart.data = [(12, 30, 18, 42, 25, 36, 20, 28)]
            drawing.add(chart)
            renderPDF.draw(drawing, pdf, 100, height - 400)
            pdf.rect(72, 60, 8, 8, fill=1)  # a tiny mark: not a figure
        pdf.drawString(72, 120, f"More text closes page {number}.")
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def figure_bomb_pdf(draws: int = 520, side: int = 5000) -> bytes:
    """One page drawing one ``side``×``side`` grey image (25 megapixels: just within what is ever decoded) ``draws``
    times, each over a fifth of the page (issue 40): ~25 KB on disk; decoding and encoding every draw took minutes."""
    image = zlib.compress(b"\x80" * side * side, 9)
    place = b"".join(b"q 200 0 0 300 %d %d cm /Im0 Do Q\n" % (40 + (n % 20) * 10, 40 + (n // 20) % 20 * 10) for n in range(draws))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im0 5 0 R >> /Font << /F1 6 0 R >> >> /Contents 4 0 R >>",
        _stream(b"BT /F1 12 Tf 72 740 Td (A page of one picture, drawn many times.) Tj ET\n" + place, compress=True),
        b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n"
        % (side, side, len(image))
        + image
        + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    return _raw_pdf(objects)
