"""A one-page PDF as Claude's image form: the page rendered by pdfium plus its text layer.

The image is rendered at the size Claude reads it (domain/vision.py: at most 1,568 px on its long edge
and 1.15 megapixels, Anthropic "Vision"; larger, Claude would scale it down itself, after the bytes
travelled and with a later first token) and stays under 3.75 MB (Bedrock / Anthropic). PNG keeps
text sharp; a page whose PNG is too big (a photo scan) goes JPEG at falling quality. Whether
the PNG can fit is first judged from a few bands of the image (:func:`_png_hopeless`): a photo's
whole-page PNG takes ~20 times its JPEG's time to encode, only to be thrown away.
Why this form exists: docs/architecture.md "The page form".
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from batchlane.domain.describe import SENT_MEDIA_TYPES
from batchlane.domain.vision import CLAUDE_MAX_LONG_EDGE_PX, PAGE_IMAGE_MAX_PIXELS, claude_scaled, fit_within, page_image_size
from batchlane.pdf.split import PDFIUM_LOCK

MAX_LONG_EDGE_PX = CLAUDE_MAX_LONG_EDGE_PX  # a figure crop's default (render_page); a page image is sized by page_image_size
MAX_IMAGE_BYTES = 3_750_000  # 3.75 MB: Bedrock's per-image limit for Claude (decimal megabytes, as AWS states it)
_JPEG_QUALITIES = (85, 70, 55, 40)
# The PNG probe: _PROBE_BANDS bands spread down the page, an eighth of its rows in all. The page's PNG
# is skipped only when the bands' PNG, scaled to the whole page, is over _PROBE_MARGIN times the limit,
# so a page whose dense part the bands happen to cross still gets its PNG tried where it may fit.
_PROBE_BANDS = 4
_PROBE_MARGIN = 2


@dataclass(frozen=True)
class PageImage:
    data: bytes
    media_type: str  # image/png | image/jpeg
    width: int
    height: int
    text: str  # the page's text layer ("" for a scan)


class PageImageError(ValueError):
    """The page could not be rendered within the image limits."""


def render_page_image(pdf_bytes: bytes, *, max_bytes: int = MAX_IMAGE_BYTES) -> PageImage:
    """Render the first page of ``pdf_bytes`` at the size Claude reads it (domain/vision.page_image_size), and read its text layer."""
    image, text = _render(pdf_bytes, 0, None, with_text=True)
    data, media_type = _encode(image, max_bytes)
    return PageImage(data, media_type, image.width, image.height, text.replace("\r\n", "\n").strip())


def picture_image(data: bytes, *, max_bytes: int = MAX_IMAGE_BYTES) -> PageImage:
    """A document's picture as Claude reads it (describeFigures; domain/vision.claude_scaled): sent as it is when
    it is a type Claude reads, within its size limits and ``max_bytes``; else its first frame scaled down (never
    up) and written as PNG, or JPEG when the PNG is too big. ValueError (Pillow's) for a picture it cannot read,
    which includes vector pictures (EMF, WMF, SVG): the caller leaves those undescribed."""
    from PIL import Image

    Image.MAX_IMAGE_PIXELS = _PICTURE_MAX_PIXELS
    with Image.open(io.BytesIO(data)) as opened:
        media_type = Image.MIME.get(opened.format or "", "")
        size = claude_scaled(*opened.size)
        if media_type in SENT_MEDIA_TYPES and size == opened.size and len(data) <= max_bytes:
            opened.verify()  # a truncated file is refused here, not by the model
            return PageImage(data, media_type, opened.width, opened.height, "")
        opened.seek(0)
        frame = opened.convert("RGBA" if opened.mode in ("RGBA", "LA", "PA", "P") else "RGB")
    if frame.size != size:
        frame = frame.resize(size, Image.Resampling.LANCZOS)
    encoded, media_type = _encode(frame, max_bytes)
    return PageImage(encoded, media_type, frame.width, frame.height, "")


_PICTURE_MAX_PIXELS = 100_000_000  # as pdf/from_image.py: past this Pillow refuses a picture (a decompression bomb)


def render_page(pdf_bytes: bytes, index: int, *, long_edge: int = MAX_LONG_EDGE_PX) -> Any:
    """Page ``index`` of ``pdf_bytes`` as an RGB Pillow image, its long edge at ``long_edge`` px: where a figure is cropped from."""
    return _render(pdf_bytes, index, long_edge, with_text=False)[0]


def _render(pdf_bytes: bytes, index: int, long_edge: int | None, *, with_text: bool) -> tuple[Any, str]:
    """Page ``index`` as an RGB image: its long edge at ``long_edge`` px, or (None) at the page image's size."""
    import pypdfium2

    with PDFIUM_LOCK:  # pdfium runs in one thread at a time (batchlane.pdf.split)
        document = pypdfium2.PdfDocument(pdf_bytes)
        try:
            page = document[index]
            width_pt, height_pt = page.get_size()  # after /Rotate, as displayed
            if long_edge is None:
                target = page_image_size(width_pt, height_pt)
                scale = min(target[0] / max(width_pt, 1.0), target[1] / max(height_pt, 1.0))
            else:
                scale = long_edge / max(width_pt, height_pt, 1.0)
            image = page.render(scale=scale).to_pil().convert("RGB")
            if long_edge is None:  # pdfium rounds the bitmap's size up: a pixel too many would let Claude scale it again
                fitted = fit_within(image.width, image.height, max_long_edge=CLAUDE_MAX_LONG_EDGE_PX, max_pixels=PAGE_IMAGE_MAX_PIXELS)
                if fitted != image.size:
                    image = image.resize(fitted)
            text = ""
            if with_text:
                textpage = page.get_textpage()
                try:
                    text = textpage.get_text_bounded() or ""
                finally:
                    textpage.close()
        finally:
            document.close()
    return image, text


def _encode(image: Any, max_bytes: int) -> tuple[bytes, str]:
    if not _png_hopeless(image, max_bytes):
        buffer = io.BytesIO()
        image.save(buffer, "PNG", optimize=False)
        if buffer.tell() <= max_bytes:
            return buffer.getvalue(), "image/png"
    if image.mode != "RGB":  # a picture with transparency, over white: JPEG has no alpha
        from PIL import Image

        flat = Image.new("RGB", image.size, "white")
        flat.paste(image, mask=image.getchannel("A") if "A" in image.getbands() else None)
        image = flat
    for quality in _JPEG_QUALITIES:
        buffer = io.BytesIO()
        image.save(buffer, "JPEG", quality=quality)
        if buffer.tell() <= max_bytes:
            return buffer.getvalue(), "image/jpeg"
    raise PageImageError(f"the rendered page stays over {max_bytes} bytes even as JPEG at quality {_JPEG_QUALITIES[-1]}")


def _png_hopeless(image: Any, max_bytes: int) -> bool:
    """True when the page's PNG would be far over ``max_bytes`` (a photo), judged from a few bands' PNG."""
    width, height = image.size
    band = height // (8 * _PROBE_BANDS)
    if band < 8:
        return False  # a small image: its whole PNG is quick, and a few rows say little about it
    from PIL import Image

    tops = [(height - band) * (i * 2 + 1) // (_PROBE_BANDS * 2) for i in range(_PROBE_BANDS)]
    sample = Image.new(image.mode, (width, band * _PROBE_BANDS))
    for i, top in enumerate(tops):
        sample.paste(image.crop((0, top, width, top + band)), (0, i * band))
    buffer = io.BytesIO()
    sample.save(buffer, "PNG", optimize=False)
    return buffer.tell() * height / sample.height > _PROBE_MARGIN * max_bytes
