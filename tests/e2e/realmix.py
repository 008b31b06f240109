"""A mix of PDFs shaped like the ones users have, built here with the tools real producers use.

Each builder returns (name, pdf bytes, what each page must show). The mix covers what a
generated one-line page never does: scans with no text layer (grayscale, RGB, CMYK),
rotated pages, an AcroForm, non-Latin scripts in an embedded TrueType font, text drawn only
inside a form XObject, mixed page sizes, and a file rewritten with object streams.
"""

from __future__ import annotations

import io
import random
from dataclasses import dataclass

from PIL import Image, ImageDraw
from pypdf import PdfReader, PdfWriter
from reportlab.lib.pagesizes import A3, A4, letter
from reportlab.lib.utils import ImageReader
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont
from reportlab.pdfgen import canvas

DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


@dataclass(frozen=True)
class Document:
    name: str
    data: bytes
    # Per page: words that must appear in that page's Markdown; None for an image-only page
    # (it must convert to something non-empty, as a model that sees the page would).
    expected: tuple[tuple[str, ...] | None, ...]


def _scan_image(mode: str, size: tuple[int, int], seed: int) -> Image.Image:
    """A page-sized 'scan': paper-grey noise with dark text-like strokes, no text layer."""
    rng = random.Random(seed)
    image = Image.new("RGB", size, (236, 234, 228))
    draw = ImageDraw.Draw(image)
    for line in range(40, size[1] - 40, 28):
        x = 50
        while x < size[0] - 80:
            width = rng.randint(15, 70)
            draw.rectangle((x, line, x + width, line + 12), fill=(rng.randint(10, 60),) * 3)
            x += width + rng.randint(8, 16)
    for _ in range(size[0] * size[1] // 200):  # speckle, like a real scanner's
        draw.point((rng.randrange(size[0]), rng.randrange(size[1])), fill=(rng.randint(150, 220),) * 3)
    return image.convert(mode)


def _image_page(c: canvas.Canvas, image: Image.Image, page_size: tuple[float, float], fmt: str) -> None:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, quality=80) if fmt == "JPEG" else image.save(buffer, format=fmt)
    buffer.seek(0)
    c.setPageSize(page_size)
    c.drawImage(ImageReader(buffer), 0, 0, width=page_size[0], height=page_size[1])
    c.showPage()


def scanned_report() -> Document:
    """Three scanned pages: grayscale JPEG, RGB PNG (Flate), CMYK JPEG. No text layer at all."""
    buffer = io.BytesIO()
    c = canvas.Canvas(buffer, invariant=True)
    _image_page(c, _scan_image("L", (850, 1100), 1), letter, "JPEG")
    _image_page(c, _scan_image("RGB", (827, 1169), 2), A4, "PNG")
    _image_page(c, _scan_image("CMYK", (827, 1169), 3), A4, "JPEG")
    c.save()
    return Document("scanned-report.pdf", buffer.getvalue(), (None, None, None))


def rotated_pages() -> Document:
    """A portrait page, then pages rotated 90 and 270 degrees by /Rotate, as scanners and viewers save them."""
    buffer = io.BytesIO()
    c = canvas.Canvas(buffer, pagesize=A4, invariant=True)
    texts = [("Upright", "introduction", "ledger"), ("Rotated", "ninety", "degrees", "clockwise"), ("Rotated", "two", "hundred", "seventy")]
    for words in texts:
        c.setFont("Helvetica", 14)
        c.drawString(72, 760, " ".join(words))
        c.drawString(72, 740, "This line belongs to the same page.")
        c.showPage()
    c.save()
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(buffer.getvalue())))
    writer.pages[1].rotate(90)
    writer.pages[2].rotate(270)
    out = io.BytesIO()
    writer.write(out)
    return Document("rotated.pdf", out.getvalue(), tuple(tuple(w.lower() for w in words) for words in texts))


def filled_form() -> Document:
    """An AcroForm: printed labels in the page, values in filled fields."""
    buffer = io.BytesIO()
    c = canvas.Canvas(buffer, pagesize=letter, invariant=True)
    c.setFont("Helvetica-Bold", 16)
    c.drawString(72, 720, "Application for a library card")
    c.setFont("Helvetica", 12)
    for n, (label, value) in enumerate([("Surname", "Okonkwo"), ("City", "Lagos"), ("Member number", "40417")]):
        y = 680 - n * 40
        c.drawString(72, y, f"{label}:")
        c.acroForm.textfield(name=label.replace(" ", "_").lower(), value=value, x=200, y=y - 6, width=200, height=20)
    c.acroForm.checkbox(name="consent", x=72, y=540, checked=True)
    c.drawString(100, 544, "I agree to the lending rules")
    c.showPage()
    c.save()
    return Document("form.pdf", buffer.getvalue(), (("application", "library", "surname", "city", "agree", "lending"),))


def non_latin() -> Document:
    """Cyrillic, Greek and Hebrew in an embedded subset of DejaVu Sans."""
    pdfmetrics.registerFont(TTFont("DejaVuSans", DEJAVU))
    pages = [
        ("Отчёт", "о", "работе", "библиотеки", "за", "год"),
        ("Ετήσια", "έκθεση", "της", "βιβλιοθήκης"),
        ("דוח", "שנתי", "של", "הספרייה"),
    ]
    buffer = io.BytesIO()
    c = canvas.Canvas(buffer, pagesize=A4, invariant=True)
    for words in pages:
        c.setFont("DejaVuSans", 14)
        c.drawString(72, 760, " ".join(words))
        c.showPage()
    c.save()
    return Document("non-latin.pdf", buffer.getvalue(), tuple(tuple(w.lower() for w in words) for words in pages))


def text_in_form_xobject_and_mixed_sizes() -> Document:
    """Page 1 draws its text only through a form XObject (as many producers do); pages of A3, letter and a receipt."""
    buffer = io.BytesIO()
    c = canvas.Canvas(buffer, pagesize=A3, invariant=True)
    c.beginForm("letterhead")
    c.setFont("Times-Roman", 18)
    c.drawString(72, 1100, "Letterhead drawn inside a form object")
    c.endForm()
    c.doForm("letterhead")
    c.showPage()
    c.setPageSize(letter)
    c.setFont("Helvetica", 11)
    c.drawString(72, 700, "A letter sized page with ordinary text")
    c.showPage()
    c.setPageSize((226, 400))  # a till receipt, 80 mm wide
    c.setFont("Courier", 9)
    c.drawString(10, 380, "RECEIPT 0042 coffee 3.20")
    c.showPage()
    c.save()
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(buffer.getvalue())))
    writer.compress_identical_objects()
    out = io.BytesIO()
    writer.write(out)  # rewritten by another producer, as files in the wild are
    return Document(
        "mixed-sizes.pdf",
        out.getvalue(),
        (("letterhead", "drawn", "inside", "form", "object"), ("letter", "sized", "ordinary", "text"), ("receipt", "0042", "coffee")),
    )


def real_mix() -> list[Document]:
    return [scanned_report(), rotated_pages(), filled_form(), non_latin(), text_in_form_xobject_and_mixed_sizes()]
