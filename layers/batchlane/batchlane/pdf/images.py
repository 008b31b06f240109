"""Figures out of a PDF: the embedded raster images of each page, at their own resolution (pdfium).

Tiny marks are not figures (bullets, rules, icons: under ``MIN_FIGURE_PX`` pixels on a side, or
drawn on under ``MIN_FIGURE_SHARE`` of the page), nor is an image covering most of the page (the
page is a scan: its text is what the model read); one over ``MAX_FIGURE_PIXELS`` is never decoded. Repeated decorations (a logo on every page)
are found across the document by the caller from ``fingerprint``. Every pdfium call holds
``PDFIUM_LOCK``, one page at a time, so the lock is never held while the caller writes.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from batchlane.pdf.split import PDFIUM_LOCK

MIN_FIGURE_PX = 48
MIN_FIGURE_SHARE = 0.01
MAX_FIGURE_SHARE = 0.9  # more is a scanned page, not a figure on it
MAX_FIGURE_PIXELS = 25_000_000  # a bigger image is never decoded (a decompression bomb would take GBs)


@dataclass(frozen=True)
class PageImage:
    page_number: int
    fingerprint: str  # sha256 of the image's stored bytes: the same logo on every page has one
    width: int  # pixels
    height: int
    bounds: tuple[float, float, float, float]  # left, bottom, right, top in points
    png: bytes | None  # None when only fingerprints were asked for
    page_size: tuple[float, float] = (0.0, 0.0)  # the page's width and height in points


def is_figure_sized(px_w: int, px_h: int, share: float) -> bool:
    """Big enough to be a figure and not the whole page: the rule for embedded images and cropped drawings alike."""
    return min(px_w, px_h) >= MIN_FIGURE_PX and MIN_FIGURE_SHARE <= share <= MAX_FIGURE_SHARE


def page_images(data: bytes, *, first_page: int, render: bool = True) -> Iterator[list[PageImage]]:
    """For each page of ``data`` (numbered from ``first_page``), its figure-sized raster images, in drawing order."""
    with PDFIUM_LOCK:
        document = pdfium.PdfDocument(data)
        count = len(document)
    try:
        for index in range(count):
            with PDFIUM_LOCK:
                images = _images_of(document, index, first_page + index, render)
            yield images
    finally:
        with PDFIUM_LOCK:
            document.close()


def _images_of(document: pdfium.PdfDocument, index: int, number: int, render: bool) -> list[PageImage]:
    page = document[index]
    try:
        width, height = page.get_size()
        area = max(width * height, 1.0)
        out = []
        for obj in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=3):
            assert isinstance(obj, pdfium.PdfImage)
            px_w, px_h = obj.get_px_size()
            left, bottom, right, top = obj.get_bounds()
            share = (right - left) * (top - bottom) / area
            if not is_figure_sized(px_w, px_h, share) or px_w * px_h > MAX_FIGURE_PIXELS:
                continue
            fingerprint = hashlib.sha256(obj.get_data(decode_simple=False)).hexdigest()
            png = None
            if render:
                buffer = io.BytesIO()
                obj.get_bitmap(render=False).to_pil().save(buffer, format="PNG")
                png = buffer.getvalue()
            out.append(PageImage(number, fingerprint, px_w, px_h, (left, bottom, right, top), png, (width, height)))
        return out
    finally:
        page.close()
