"""Figures as files at Assemble: each chunk's raster images written beside the job's Markdown.

Two reads of each chunk PDF (jobs/<jobId>/source/chunk-<N>.pdf, the pages both lanes sent):
the first only fingerprints the images, so a decoration repeated on ``DECORATION_PAGES`` pages
or more (a logo, a banner) is known before any file is written; the second writes the others
as ``images/p<N>-<k>.png`` at their own resolution, and crops the rendered page to each region the
model gave a figure where no embedded image stands (a vector chart). Nothing is held but the names and sizes.
"""

from __future__ import annotations

import io
import posixpath
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from batchlane import keys
from batchlane.domain.assembly import Figure, Region
from batchlane.domain.errors import NotFound
from batchlane.domain.file_types import by_extension
from batchlane.observability import logger
from batchlane.pdf.images import PageImage, is_figure_sized, page_images
from batchlane.pdf.page_image import render_page
from batchlane.ports import ObjectStore

DECORATION_PAGES = 3
# Assemble has 300 s (topology.py): figures past this budget stay descriptions, the job still completes.
FIGURE_BUDGET_S = 120.0
CROP_LONG_EDGE_PX = 2000  # a drawn figure is cut from the page rendered this big (about 170 dpi on A4)


def figure_folder(file_name: str) -> str:
    """Where the Markdown links its figures, relative to itself: ``book.pdf`` → ``book.images``."""
    claimed = by_extension(file_name)  # book.pdf, book.docx, scan.tiff → book.images, scan.images
    stem = posixpath.splitext(file_name)[0] if claimed is not None else file_name
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in stem.rsplit("/", 1)[-1]).strip() or "document"
    return f"{safe}.images"


def _sources(store: ObjectStore, job_id: str, chunks: Iterable[tuple[int, int]]) -> Iterable[tuple[int, bytes]]:
    for chunk_index, first_page in chunks:
        try:
            yield first_page, store.get_bytes(keys.chunk_source_key(job_id, chunk_index))
        except NotFound:
            logger.warning("chunk source gone: its figures are not extracted", job_id=job_id, chunk_index=chunk_index)


def extract_figures(
    store: ObjectStore,
    job_id: str,
    chunks: list[tuple[int, int]],
    *,
    regions: Mapping[int, list[Region]] | None = None,
    budget_s: float = FIGURE_BUDGET_S,
    clock: Callable[[], float] = time.monotonic,
) -> dict[int, list[Figure]]:
    """Page number → its figure files, written under keys.images_prefix(job_id); ``chunks`` are (index, first page).

    ``regions`` (page → the boxes the model gave its figures) are cropped from the rendered page
    where no embedded image stands: a chart drawn in vectors becomes a file like a photo does.
    """
    deadline = clock() + budget_s
    seen: Counter[str] = Counter()
    for first_page, data in _sources(store, job_id, chunks):
        for images in page_images(data, first_page=first_page, render=False):
            seen.update({image.fingerprint for image in images})
    decorations = {fingerprint for fingerprint, pages in seen.items() if pages >= DECORATION_PAGES}
    figures: dict[int, list[Figure]] = {}
    for first_page, data in _sources(store, job_id, chunks):
        if clock() > deadline:
            logger.warning("figure budget spent: later figures stay descriptions", job_id=job_id, from_page=first_page, budget_s=budget_s)
            break
        for index, images in enumerate(page_images(data, first_page=first_page)):
            number = first_page + index
            placed = [(_top(image), image.png, image.width, image.height) for image in images if image.fingerprint not in decorations and image.png]
            boxes = [r for r in (regions or {}).get(number, []) if not any(_inside(image, r) for image in images)]
            placed += _crops(data, index, boxes) if boxes else []
            for _, png, width, height in sorted(placed, key=lambda p: p[0]):
                page = figures.setdefault(number, [])
                figure = Figure(f"p{number}-{len(page) + 1}.png", width, height)
                store.put_bytes(keys.images_prefix(job_id) + figure.name, png or b"", "image/png")
                page.append(figure)
    logger.info("figures extracted", job_id=job_id, figures=sum(map(len, figures.values())), decorations=len(decorations))
    return figures


def _top(image: PageImage) -> float:
    """The image's top edge as a fraction of the page from its top: the order the model describes figures in."""
    return 1.0 - image.bounds[3] / image.page_size[1] if image.page_size[1] else 0.0


def _inside(image: PageImage, region: Region) -> bool:
    """The embedded image's centre lies in the region: that image is the figure, nothing to crop."""
    width, height = image.page_size
    if not width or not height:
        return False
    left, bottom, right, top = image.bounds
    x, y = (left + right) / 2 / width, 1.0 - (bottom + top) / 2 / height
    return region[0] <= x <= region[2] and region[1] <= y <= region[3]


def _crops(data: bytes, index: int, regions: list[Region]) -> list[tuple[float, bytes, int, int]]:
    """Each region cut from the rendered page as a PNG; one too small for a figure (a rule, an icon) is skipped."""
    rendered = render_page(data, index, long_edge=CROP_LONG_EDGE_PX)
    out = []
    for left, top, right, bottom in regions:
        box = (round(left * rendered.width), round(top * rendered.height), round(right * rendered.width), round(bottom * rendered.height))
        if not is_figure_sized(box[2] - box[0], box[3] - box[1], (right - left) * (bottom - top)):
            continue
        buffer = io.BytesIO()
        rendered.crop(box).save(buffer, format="PNG")
        out.append((top, buffer.getvalue(), box[2] - box[0], box[3] - box[1]))
    return out
