"""A picture (PNG, JPEG, WebP, TIFF: a page per frame) wrapped as a PDF at intake: a page per image.

Every later stage (split, both lanes, the chunk processor, retries, holds, the page view) then sees the same
thing it sees for a PDF, and the job is sent in the image page form, rendered as Claude uses images
(pdf/page_image.py). No pixel is lost on the way: a JPEG is embedded as it is (its DCT bytes), any other
frame as a lossless Flate bitmap. The page is sized from the image's resolution (150 dpi when it states none
we believe). Decoding runs in the bounded child (filejob/split.py): a decompression bomb is refused by
Pillow past ``MAX_IMAGE_PIXELS``. Why wrapping: docs/decisions/0029-formats-beside-pdf.md.
"""

from __future__ import annotations

import io
from pathlib import Path

import pypdfium2 as pdfium
from PIL import Image, ImageSequence, UnidentifiedImageError

from batchlane.domain.errors import InputError
from batchlane.pdf.split import PDFIUM_LOCK

MAX_IMAGE_PIXELS = 100_000_000  # a 600 dpi A3 scan is ~70 MP; past this Pillow refuses (a decompression bomb)
DEFAULT_DPI = 150.0
_SANE_DPI = (50.0, 1200.0)


def image_to_pdf(path: Path, max_pages: int) -> bytes:
    """The picture's frames as a PDF, a page each; InputError IMAGE_CORRUPT, IMAGE_TOO_LARGE, IMAGE_TOO_MANY_PAGES."""
    Image.MAX_IMAGE_PIXELS = MAX_IMAGE_PIXELS
    try:
        with Image.open(path) as picture:
            frames = getattr(picture, "n_frames", 1)
            if frames > max_pages:
                raise InputError(f"The image has {frames:,} frames; the limit is {max_pages:,} pages.", error_id="IMAGE_TOO_MANY_PAGES")
            if picture.format == "JPEG":
                return _wrap_jpeg(path, picture.size, _dpi(picture))
            return _wrap_frames(picture)
    except Image.DecompressionBombError as exc:
        raise InputError(f"The image is larger than {MAX_IMAGE_PIXELS // 1_000_000} megapixels.", error_id="IMAGE_TOO_LARGE") from exc
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError) as exc:
        raise InputError("The image is damaged or truncated and cannot be read.", error_id="IMAGE_CORRUPT") from exc


def _dpi(picture: Image.Image) -> float:
    dpi = picture.info.get("dpi")
    try:
        value = float(dpi[0]) if dpi else 0.0
    except (TypeError, ValueError, IndexError):
        value = 0.0
    return value if _SANE_DPI[0] <= value <= _SANE_DPI[1] else DEFAULT_DPI


def _wrap_jpeg(path: Path, size: tuple[int, int], dpi: float) -> bytes:
    with PDFIUM_LOCK:
        pdf = pdfium.PdfDocument.new()
        page = pdf.new_page(size[0] * 72 / dpi, size[1] * 72 / dpi)
        image = pdfium.PdfImage.new(pdf)
        with path.open("rb") as stream:
            image.load_jpeg(stream, pages=[page], inline=True)
        _place(page, image)
        return _saved(pdf)


def _wrap_frames(picture: Image.Image) -> bytes:
    with PDFIUM_LOCK:
        pdf = pdfium.PdfDocument.new()
        for frame in ImageSequence.Iterator(picture):
            pixels = frame.convert("L" if frame.mode in ("1", "L", "I;16", "I", "F") else "RGB")
            dpi = _dpi(frame)
            page = pdf.new_page(pixels.width * 72 / dpi, pixels.height * 72 / dpi)
            image = pdfium.PdfImage.new(pdf)
            image.set_bitmap(pdfium.PdfBitmap.from_pil(pixels))
            _place(page, image)
        return _saved(pdf)


def _place(page: pdfium.PdfPage, image: pdfium.PdfImage) -> None:
    image.set_matrix(pdfium.PdfMatrix().scale(page.get_width(), page.get_height()))
    page.insert_obj(image)
    page.gen_content()


def _saved(pdf: pdfium.PdfDocument) -> bytes:
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue()
