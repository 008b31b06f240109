"""Generated PDF pages made heavy by their images (noise defeats compression), for the page-fit tests."""

from __future__ import annotations

import base64
import io
import os
from contextlib import contextmanager

from PIL import Image
from pypdf import PdfReader, PdfWriter
from reportlab import rl_config
from reportlab.lib.pagesizes import A4
from reportlab.lib.utils import ImageReader
from reportlab.pdfgen import canvas


def noise(size: tuple[int, int], mode: str = "RGB") -> Image.Image:
    """Random pixels over four coloured quadrants (red, green, blue, white): no encoder can shrink
    the noise, so the page stays as big as the image, and the quadrants show whether colours survive."""
    width, height = size
    quadrants = Image.new("RGB", size, (255, 255, 255))
    for (x, y), colour in zip([(0, 0), (1, 0), (0, 1)], [(220, 30, 30), (30, 200, 30), (30, 30, 220)], strict=True):
        quadrants.paste(colour, (x * width // 2, y * height // 2, (x + 1) * width // 2, (y + 1) * height // 2))
    random = Image.frombytes("RGB", size, os.urandom(width * height * 3))
    image = Image.blend(quadrants, random, 0.35)
    if mode == "RGBA":
        alpha = Image.frombytes("L", size, os.urandom(width * height))
        return Image.merge("RGBA", (*image.split(), alpha))
    return image.convert(mode)


def jpeg(image: Image.Image, quality: int = 92) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality)
    return buffer.getvalue()


@contextmanager
def _binary_streams():
    """reportlab ASCII85-encodes streams by default (+25%, and slow on megabytes): off while building."""
    saved = rl_config.useA85
    rl_config.useA85 = 0
    try:
        yield
    finally:
        rl_config.useA85 = saved


def _a85(data: bytes | str) -> str:
    """reportlab's ASCII85 (``~>`` closes it) by the standard library: the same text, ten times faster."""
    return base64.a85encode(data.encode("latin-1") if isinstance(data, str) else data).decode("ascii") + "~>"


@contextmanager
def _fast_ascii85():
    """reportlab's inline images need ASCII85, and the page's stream is encoded again: reportlab's pure-Python encoder took ~3 s a megapixel."""
    from reportlab.pdfbase import pdfdoc
    from reportlab.pdfgen import pdfimages

    saved = pdfimages.asciiBase85Encode, pdfdoc.asciiBase85Encode
    pdfimages.asciiBase85Encode = pdfdoc.asciiBase85Encode = _a85
    try:
        yield
    finally:
        pdfimages.asciiBase85Encode, pdfdoc.asciiBase85Encode = saved


def image_page(image: Image.Image | bytes, *, text: str = "A heavy page", inline: bool = False, mask: str | None = None, in_form: bool = False) -> bytes:
    """One A4 page with ``text`` and ``image`` (a PIL image is stored Flate, JPEG bytes as DCTDecode),
    drawn on the page or, ``in_form``, inside a form XObject the page draws."""
    buffer = io.BytesIO()
    with _binary_streams() if not inline else _fast_ascii85():  # reportlab's inline images need its ASCII85
        pdf = canvas.Canvas(buffer, pagesize=A4, invariant=True)
        pdf.setFont("Helvetica", 14)
        pdf.drawString(72, 800, text)
        source = ImageReader(io.BytesIO(image)) if isinstance(image, bytes) else image
        if inline:
            pdf.drawInlineImage(source, 36, 100, width=520, height=650)
        else:
            if in_form:
                pdf.beginForm("scan")
            pdf.drawImage(source if isinstance(image, bytes) else ImageReader(image), 36, 100, width=520, height=650, mask=mask)
            if in_form:
                pdf.endForm()
                pdf.doForm("scan")
        pdf.showPage()
        pdf.save()
    return buffer.getvalue()


def vector_page(paths: int, *, text: str = "A drawing") -> bytes:
    """A page of ``paths`` random line segments: megabytes of content stream, no image at all."""
    rnd = os.urandom(paths * 4)
    buffer = io.BytesIO()
    with _binary_streams():
        pdf = canvas.Canvas(buffer, pagesize=A4, invariant=True, pageCompression=0)
        pdf.drawString(72, 800, text)
        # Byte for byte what beginPath / moveTo / lineTo / drawPath write (``n``, ``x y m x y l`` a
        # segment, then stroke), formatted in one pass: hundreds of thousands of path calls cost seconds.
        xs, ys = [_num(v * 2.3) for v in range(256)], [_num(v * 3.2) for v in range(256)]
        segments = (f"{xs[a]} {ys[b]} m {xs[c]} {ys[d]} l" for a, b, c, d in zip(*[iter(rnd)] * 4, strict=True))
        pdf.addLiteral("n " + " ".join(segments))
        pdf.addLiteral("S")
        pdf.showPage()
        pdf.save()
    return buffer.getvalue()


def _num(value: float) -> str:
    """A coordinate as reportlab writes one: two decimals at most, no trailing zeros."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def text_page(text: str) -> bytes:
    """An ordinary page: a line of text that names it."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=True)
    pdf.drawString(72, 800, text)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def merged(pages: list[bytes]) -> bytes:
    """One document of the given one-page PDFs, in order."""
    writer = PdfWriter()
    for page in pages:
        writer.append(PdfReader(io.BytesIO(page)))
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()
