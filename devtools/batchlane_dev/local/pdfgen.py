"""Test documents: a multi-page PDF with real text on every page (reportlab, ~2 s per 1,000 pages).

Each page carries a heading and paragraphs that name the page ("page 17 of 1200"), so a
test can check that each page's own text landed under its own marker. Every
``blank_every``-th page is left empty on purpose.
"""

from __future__ import annotations

import io

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
