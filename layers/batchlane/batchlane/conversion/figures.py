"""Figures as files at Assemble: each chunk's raster images written beside the job's Markdown.

Two reads of each chunk PDF (jobs/<jobId>/source/chunk-<N>.pdf, the pages both lanes sent):
the first only fingerprints the images, so a decoration repeated on ``DECORATION_PAGES`` pages
or more (a logo, a banner) is known before any file is written; the second writes the others
as ``images/p<N>-<k>.png`` at their own resolution. Nothing is held but the names and sizes.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable

from batchlane import keys
from batchlane.domain.assembly import Figure
from batchlane.domain.errors import NotFound
from batchlane.observability import logger
from batchlane.pdf.images import page_images
from batchlane.ports import ObjectStore

DECORATION_PAGES = 3
# Assemble has 300 s (topology.py): figures past this budget stay descriptions, the job still completes.
FIGURE_BUDGET_S = 120.0


def figure_folder(file_name: str) -> str:
    """Where the Markdown links its figures, relative to itself: ``book.pdf`` → ``book.images``."""
    stem = file_name[:-4] if file_name.lower().endswith(".pdf") else file_name
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
    budget_s: float = FIGURE_BUDGET_S,
    clock: Callable[[], float] = time.monotonic,
) -> dict[int, list[Figure]]:
    """Page number → its figure files, written under keys.images_prefix(job_id); ``chunks`` are (index, first page)."""
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
        for images in page_images(data, first_page=first_page):
            for image in (i for i in images if i.fingerprint not in decorations and i.png):
                page = figures.setdefault(image.page_number, [])
                figure = Figure(f"p{image.page_number}-{len(page) + 1}.png", image.width, image.height)
                store.put_bytes(keys.images_prefix(job_id) + figure.name, image.png or b"", "image/png")
                page.append(figure)
    logger.info("figures extracted", job_id=job_id, figures=sum(map(len, figures.values())), decorations=len(decorations))
    return figures
