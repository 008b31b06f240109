"""Figures out of a chunk PDF: its embedded raster images, and the drawings a model described (pdfium).

These functions run in the bounded child (pdf/bounded.py: deadline and memory cap, a process of its own, so no
lock is shared with any other owner's work and pdfium is never entered from two threads): a chunk's images are
fingerprinted there, decoded and encoded there, and each PNG is written to a folder the caller streams from, so
the caller's memory does not grow with the images' count. Every bound says what happens past it:

* an image object over ``MAX_FIGURE_PIXELS`` is never decoded (a decompression bomb would take GBs);
* a page drawing more than ``MAX_IMAGE_OBJECTS_PER_PAGE`` images, or with more than ``MAX_FIGURES_PER_PAGE``
  figures to write, keeps all its figures as descriptions (``FIGURES_OVER_CAP``), and nothing of it is decoded;
* past the chunk's pixel budget (what is left of ``MAX_FIGURE_PIXELS_PER_DOCUMENT``) a page's figures stay
  descriptions (``FIGURE_PIXELS_SPENT``).

Tiny marks are not figures (bullets, rules, icons: under ``MIN_FIGURE_PX`` pixels on a side, or drawn on under
``MIN_FIGURE_SHARE`` of the page), nor is an image covering most of the page (the page is a scan), nor one all
of one colour. A drawing the model described is cropped from the rendered page where the drawing is: the page's
own path, form and shading objects near the model's box, never the model's box alone (it may miss the drawing).
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MIN_FIGURE_PX = 48
MIN_FIGURE_SHARE = 0.01
MAX_FIGURE_SHARE = 0.9  # more is a scanned page, not a figure on it
MAX_FIGURE_PIXELS = 25_000_000  # a bigger image is never decoded
MAX_IMAGE_OBJECTS_PER_PAGE = 200  # image objects looked at on one page; past it, the page keeps its descriptions
MAX_FIGURES_PER_PAGE = 16  # figure files written for one page; past it, none are
MAX_FIGURES_PER_DOCUMENT = 500  # figure files written for one document; past it, later pages keep descriptions
MAX_FIGURE_PIXELS_PER_DOCUMENT = 400_000_000  # decoded and rendered pixels for one document (16 images at the cap)
MAX_FIGURE_BYTES_PER_CHUNK = 256_000_000  # PNG bytes one chunk writes to Assemble's /tmp (512 MB) before they are uploaded
CROP_LONG_EDGE_PX = 2000  # a drawn figure is cut from the page rendered this big (about 170 dpi on A4)
DRAWING_MARGIN_PT = 8.0  # around a drawing's shapes: its labels and ticks
DRAWING_GAP_PT = 12.0  # shapes this close belong to one drawing
MIN_SHAPE_PT = 4.0  # a path smaller than this on its longer side is a dot, not a shape
MIN_INK_RANGE = 8  # a crop or image whose grey levels span less than this is one colour: not written

Region = tuple[float, float, float, float]  # left, top, right, bottom: fractions of the page, from its top left
Box = tuple[float, float, float, float]  # left, bottom, right, top in points

OVER_CAP = "FIGURES_OVER_CAP"
PIXELS_SPENT = "FIGURE_PIXELS_SPENT"


@dataclass(frozen=True)
class FigureLimits:
    """The bounds one chunk's figure work runs under (its share of the document's)."""

    figures_left: int = MAX_FIGURES_PER_DOCUMENT
    pixels_left: int = MAX_FIGURE_PIXELS_PER_DOCUMENT
    per_page: int = MAX_FIGURES_PER_PAGE
    objects_per_page: int = MAX_IMAGE_OBJECTS_PER_PAGE
    pixels_per_image: int = MAX_FIGURE_PIXELS
    bytes_per_chunk: int = MAX_FIGURE_BYTES_PER_CHUNK


@dataclass(frozen=True)
class PageFingerprints:
    page_number: int
    fingerprints: tuple[str, ...]  # of its figure-sized images: a logo on every page has one
    skipped: str | None = None  # OVER_CAP: the page draws too many images to look at


@dataclass(frozen=True)
class WrittenFigure:
    page_number: int
    path: str  # the PNG in the chunk's folder (the caller uploads it, then deletes it)
    width: int
    height: int
    top: float  # its top edge as a fraction of the page from the top: the order the model describes figures in


@dataclass
class ChunkFigures:
    """What one chunk's figure work wrote, and which pages kept their descriptions, and why."""

    figures: list[WrittenFigure] = field(default_factory=list)
    skipped: dict[int, str] = field(default_factory=dict)
    pixels: int = 0
    bytes: int = 0


def is_figure_sized(px_w: int, px_h: int, share: float) -> bool:
    """Big enough to be a figure and not the whole page: the rule for embedded images and cropped drawings alike."""
    return min(px_w, px_h) >= MIN_FIGURE_PX and MIN_FIGURE_SHARE <= share <= MAX_FIGURE_SHARE


@dataclass(frozen=True)
class _Image:
    fingerprint: str
    width: int
    height: int
    bounds: Box
    index: int  # among the page's image objects


def _open(path: str) -> Any:
    import pypdfium2 as pdfium

    return pdfium.PdfDocument(path)


def _page_images(page: Any, limits: FigureLimits) -> list[_Image] | None:
    """The page's figure-sized images (None when it draws more than ``limits.objects_per_page``)."""
    import pypdfium2.raw as pdfium_c

    width, height = page.get_size()
    area = max(width * height, 1.0)
    out = []
    for index, obj in enumerate(page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=3)):
        if index >= limits.objects_per_page:
            return None
        px_w, px_h = obj.get_px_size()
        left, bottom, right, top = obj.get_bounds()
        share = (right - left) * (top - bottom) / area
        if not is_figure_sized(px_w, px_h, share) or px_w * px_h > limits.pixels_per_image:
            continue
        fingerprint = hashlib.sha256(obj.get_data(decode_simple=False)).hexdigest()[:32]
        out.append(_Image(fingerprint, px_w, px_h, (left, bottom, right, top), index))
    return out


def chunk_fingerprints(path: str, first_page: int, limits: FigureLimits) -> list[PageFingerprints]:
    """Pass 1 (in the bounded child): each page's figure-sized images of the chunk PDF at ``path`` by fingerprint, nothing decoded."""
    document = _open(path)
    try:
        out = []
        for index in range(len(document)):
            page = document[index]
            try:
                images = _page_images(page, limits)
            finally:
                page.close()
            number = first_page + index
            if images is None:
                out.append(PageFingerprints(number, (), OVER_CAP))
            else:
                out.append(PageFingerprints(number, tuple(sorted({i.fingerprint for i in images}))))
        return out
    finally:
        document.close()


def write_chunk_figures(
    path: str,
    first_page: int,
    regions: Mapping[int, list[Region]],
    decorations: frozenset[str],
    folder: str,
    limits: FigureLimits,
) -> ChunkFigures:
    """Pass 2 (in the bounded child): each page's figures of the chunk PDF at ``path`` as PNG files in ``folder``, within ``limits``."""
    document = _open(path)
    result = ChunkFigures()
    try:
        for index in range(len(document)):
            number = first_page + index
            page = document[index]
            try:
                _page_figures(page, number, regions.get(number, []), decorations, folder, limits, result)
            finally:
                page.close()
        return result
    finally:
        document.close()


def _page_figures(page: Any, number: int, regions: list[Region], decorations: frozenset[str], folder: str, limits: FigureLimits, result: ChunkFigures) -> None:
    images = _page_images(page, limits)
    if images is None:
        result.skipped[number] = OVER_CAP
        return
    width, height = page.get_size()
    kept = [image for image in images if image.fingerprint not in decorations]
    boxes = [r for r in regions if not any(_inside(image.bounds, (width, height), r) for image in images)]
    drawings = _drawings_for(page, boxes, (width, height)) if boxes else []
    if len(kept) + len(drawings) > limits.per_page:
        result.skipped[number] = OVER_CAP
        return
    pixels = sum(i.width * i.height for i in kept) + sum(_drawing_pixels(box, (width, height)) for box in drawings)
    spent = result.pixels + pixels > limits.pixels_left or result.bytes >= limits.bytes_per_chunk
    if len(kept) + len(drawings) > limits.figures_left - len(result.figures) or spent:
        if kept or drawings:
            result.skipped[number] = PIXELS_SPENT
        return
    result.pixels += pixels
    # In the page's order (the order the model describes figures in), each encoded and written before the next.
    plan: list[tuple[float, _Image | Box]] = [(1.0 - image.bounds[3] / height if height else 0.0, image) for image in kept]
    plan += [(max(0.0, (height - box[3] - DRAWING_MARGIN_PT) / height), box) for box in drawings]
    objects = _image_objects(page) if kept else []
    k = 0
    for top, item in sorted(plan, key=lambda p: p[0]):
        encoded = _encode_image(objects[item.index]) if isinstance(item, _Image) else _crop(page, item, (width, height))
        if encoded is None:
            continue
        png, px_w, px_h = encoded
        k += 1
        path = os.path.join(folder, f"p{number}-{k}.png")
        with open(path, "wb") as stream:
            stream.write(png)
        result.bytes += len(png)
        result.figures.append(WrittenFigure(number, path, px_w, px_h, top))


def _image_objects(page: Any) -> list[Any]:
    import pypdfium2.raw as pdfium_c

    return list(page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=3))


def _encode_image(obj: Any) -> tuple[bytes, int, int] | None:
    """The image at its own resolution as a PNG, as the page shows it; None when it is all one colour (a mask, a
    white box). An image with a soft mask is taken from pdfium's rendering (the mask applied, laid on white paper,
    at the raw size): its raw pixels carry black where the page shows white (GeoTopo's knots: black squares)."""
    from PIL import Image

    picture = obj.get_bitmap(render=False).to_pil()
    try:
        rendered = obj.get_bitmap(render=True).to_pil()
    except Exception:  # pdfium could not render it: its raw pixels are the best there is
        rendered = None
    if rendered is not None and rendered.mode == "RGBA":
        alpha = rendered.getchannel("A")
        if alpha.getextrema()[0] < 255:  # a mask hides part of it
            paper = Image.new("RGB", rendered.size, (255, 255, 255))
            paper.paste(rendered, mask=alpha)
            picture = paper.resize(picture.size) if abs(paper.width - picture.width) <= 2 and abs(paper.height - picture.height) <= 2 else paper
    extrema: Any = picture.convert("L").getextrema()  # (low, high) of one band
    if extrema[1] - extrema[0] < MIN_INK_RANGE:
        return None
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    return buffer.getvalue(), picture.width, picture.height


def _scale(page_size: tuple[float, float]) -> float:
    return CROP_LONG_EDGE_PX / max(*page_size, 1.0)


def _clip(drawing: Box, page_size: tuple[float, float]) -> Box:
    """The drawing with a margin for its labels, within the page (points)."""
    width, height = page_size
    left, bottom, right, top = drawing
    return (
        max(0.0, left - DRAWING_MARGIN_PT),
        max(0.0, bottom - DRAWING_MARGIN_PT),
        min(width, right + DRAWING_MARGIN_PT),
        min(height, top + DRAWING_MARGIN_PT),
    )


def _drawing_pixels(drawing: Box, page_size: tuple[float, float]) -> int:
    """What rendering the drawing alone costs: its clip at the crop scale."""
    left, bottom, right, top = _clip(drawing, page_size)
    scale = _scale(page_size)
    return int((right - left) * scale) * int((top - bottom) * scale)


def _inside(bounds: Box, page_size: tuple[float, float], region: Region) -> bool:
    """The embedded image's centre lies in the region: that image is the figure, nothing to crop."""
    width, height = page_size
    if not width or not height:
        return False
    left, bottom, right, top = bounds
    x, y = (left + right) / 2 / width, 1.0 - (bottom + top) / 2 / height
    return region[0] <= x <= region[2] and region[1] <= y <= region[3]


def drawing_boxes(page: Any) -> list[Box]:
    """The page's drawings: its top-level path, form and shading objects, those close together merged into one."""
    import pypdfium2.raw as pdfium_c

    kinds = [pdfium_c.FPDF_PAGEOBJ_PATH, pdfium_c.FPDF_PAGEOBJ_FORM, pdfium_c.FPDF_PAGEOBJ_SHADING]
    shapes = []
    for count, obj in enumerate(page.get_objects(filter=kinds, max_depth=1)):
        if count >= 20_000:
            break  # a page of a million strokes is not looked at further: its drawing is what was found so far
        left, bottom, right, top = obj.get_bounds()
        if max(right - left, top - bottom) >= MIN_SHAPE_PT:
            shapes.append((left, bottom, right, top))
    return _merge(shapes)


def _merge(boxes: list[Box]) -> list[Box]:
    merged: list[Box] = []
    for box in sorted(boxes, key=lambda b: (b[1], b[0])):
        grown = box
        changed = True
        while changed:
            changed = False
            for other in list(merged):
                if _near(grown, other):
                    merged.remove(other)
                    grown = (min(grown[0], other[0]), min(grown[1], other[1]), max(grown[2], other[2]), max(grown[3], other[3]))
                    changed = True
        merged.append(grown)
    return merged


def _near(a: Box, b: Box) -> bool:
    return a[0] - DRAWING_GAP_PT <= b[2] and b[0] - DRAWING_GAP_PT <= a[2] and a[1] - DRAWING_GAP_PT <= b[3] and b[1] - DRAWING_GAP_PT <= a[3]


def _drawings_for(page: Any, regions: list[Region], page_size: tuple[float, float]) -> list[Box]:
    """For each region the model gave, the drawing it names: the one it overlaps most, else the nearest one not yet
    taken; a region with no drawing on the page gives nothing (its description stays)."""
    width, height = page_size
    if not width or not height:
        return []
    candidates = [b for b in drawing_boxes(page) if _drawing_sized(b, page_size)]
    chosen: list[Box] = []
    for left, top, right, bottom in regions:
        box = (left * width, (1 - bottom) * height, right * width, (1 - top) * height)
        free = [c for c in candidates if c not in chosen]
        if not free:
            break
        overlap = max(free, key=lambda c: _overlap(c, box))
        if _overlap(overlap, box) > 0:
            chosen.append(overlap)
            continue
        centre = ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
        chosen.append(min(free, key=lambda c: ((c[0] + c[2]) / 2 - centre[0]) ** 2 + ((c[1] + c[3]) / 2 - centre[1]) ** 2))
    return chosen


def _drawing_sized(box: Box, page_size: tuple[float, float]) -> bool:
    width, height = page_size
    scale = CROP_LONG_EDGE_PX / max(width, height, 1.0)
    share = (box[2] - box[0]) * (box[3] - box[1]) / max(width * height, 1.0)
    return is_figure_sized(int((box[2] - box[0]) * scale), int((box[3] - box[1]) * scale), share)


def _overlap(a: Box, b: Box) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def _crop(page: Any, drawing: Box, page_size: tuple[float, float]) -> tuple[bytes, int, int] | None:
    """The drawing rendered alone (pdfium renders only its clip of the page), with a margin for its labels; None
    when it is all one colour."""
    width, height = page_size
    left, bottom, right, top = _clip(drawing, page_size)
    crop = page.render(scale=_scale(page_size), crop=(left, bottom, width - right, height - top)).to_pil().convert("RGB")
    low, high = crop.convert("L").getextrema()
    if high - low < MIN_INK_RANGE:
        return None
    buffer = io.BytesIO()
    crop.save(buffer, format="PNG")
    return buffer.getvalue(), crop.width, crop.height
