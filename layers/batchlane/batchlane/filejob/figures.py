"""Figures as files at Assemble: each chunk's images and drawings written beside the job's Markdown.

Two reads of each chunk PDF (jobs/<jobId>/source/chunk-<N>.pdf, the pages both lanes sent), each in the bounded
child (pdf/bounded.py: a process of its own with a deadline and a memory cap; pdf/images.py does the work): the
first only fingerprints the images, so a decoration repeated on ``DECORATION_PAGES`` pages of a few (a logo, a
banner) is known before any file is written; the second writes the others as ``images/p<N>-<k>.png`` at their own
resolution, and crops each drawing the model described from the rendered page where the drawing is. The child
writes PNG files to a temporary folder; they are streamed to the bucket one at a time, so Assemble holds names
and sizes only, whatever the images' count. Past a bound (pdf/images.py; ``FIGURE_BUDGET_S`` in all,
``CHUNK_FIGURE_BOUND`` a chunk) a page's figures stay descriptions and its pages.jsonl line says why.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from batchlane import keys
from batchlane.domain.assembly import Figure, Region
from batchlane.domain.errors import NotFound
from batchlane.domain.file_types import by_extension
from batchlane.domain.furniture import recurs_nearby
from batchlane.observability import logger
from batchlane.pdf.bounded import Bound, OverBudget, run_bounded
from batchlane.pdf.images import FigureLimits, chunk_fingerprints, write_chunk_figures
from batchlane.ports import ObjectStore

T = TypeVar("T")
DECORATION_PAGES = 3
# Assemble has 300 s (topology.py): figures past this budget stay descriptions, the job still completes.
FIGURE_BUDGET_S = 120.0
# One chunk's figure work (50 pages) at most: in time, and in memory beyond the child's own (a 25-megapixel image
# decodes to 75 MB and its PNG is encoded beside it; Assemble has 1,024 MB).
CHUNK_FIGURE_BOUND = Bound(seconds=60.0, memory_mb=512)
BOUND_SPENT = "FIGURE_WORK_OVER_BOUND"  # a chunk's figure work ran past its time or memory bound, or the document's time budget


class Figures(dict[int, list[Figure]]):
    """Page number → its figure files; ``skipped``: the pages whose figures stay descriptions, with the bound's id."""

    def __init__(self) -> None:
        super().__init__()
        self.skipped: dict[int, str] = {}


def figure_folder(file_name: str) -> str:
    """Where the Markdown links its figures, relative to itself: ``book.pdf`` → ``book.images``."""
    claimed = by_extension(file_name)  # book.pdf, book.docx, scan.tiff → book.images, scan.images
    stem = posixpath.splitext(file_name)[0] if claimed is not None else file_name
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in stem.rsplit("/", 1)[-1]).strip() or "document"
    return f"{safe}.images"


@contextmanager
def _sources(store: ObjectStore, job_id: str, chunks: Iterable[tuple[int, int, int]]) -> Iterator[Iterator[tuple[int, int, int, str]]]:
    """Each chunk PDF downloaded to a file the child opens (Assemble never holds it), one at a time."""
    folder = tempfile.mkdtemp(prefix="chunk-sources-")

    def each() -> Iterator[tuple[int, int, int, str]]:
        for chunk_index, first_page, last_page in chunks:
            path = os.path.join(folder, f"chunk-{chunk_index}.pdf")
            try:
                store.download_to(keys.chunk_source_key(job_id, chunk_index), Path(path))
            except NotFound:
                logger.warning("chunk source gone: its figures are not extracted", job_id=job_id, chunk_index=chunk_index)
                continue
            try:
                yield chunk_index, first_page, last_page - first_page + 1, path
            finally:
                os.unlink(path)

    try:
        yield each()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def extract_figures(
    store: ObjectStore,
    job_id: str,
    chunks: list[tuple[int, int, int]],
    *,
    regions: Mapping[int, list[Region]] | None = None,
    budget_s: float = FIGURE_BUDGET_S,
    clock: Callable[[], float] = time.monotonic,
    chunk_bound: Bound = CHUNK_FIGURE_BOUND,
    limits: FigureLimits | None = None,
) -> Figures:
    """Page number → its figure files, written under keys.images_prefix(job_id); ``chunks`` are (index, first page, last page).

    ``regions`` (page → the boxes the model gave its figures) name the drawings cropped from the rendered page
    where no embedded image stands: a chart drawn in vectors becomes a file like a photo does.
    """
    limits = limits or FigureLimits()
    deadline = clock() + budget_s
    out = Figures()
    seen: dict[str, list[int]] = {}  # fingerprint → the pages it stands on
    with _sources(store, job_id, chunks) as sources:
        for chunk_index, first_page, count, path in sources:
            pages = _bounded(chunk_fingerprints, path, first_page, limits, bound=_within(chunk_bound, deadline, clock))
            if pages is None:
                logger.warning("figure fingerprints past their bound: the chunk's figures stay descriptions", job_id=job_id, chunk_index=chunk_index)
                out.skipped.update({first_page + n: BOUND_SPENT for n in range(count)})
                continue
            for page in pages:
                for fingerprint in page.fingerprints:
                    seen.setdefault(fingerprint, []).append(page.page_number)
                if page.skipped:
                    out.skipped[page.page_number] = page.skipped
    # a logo, a banner: on DECORATION_PAGES pages within a few; a figure a bound volume repeats a book apart is a figure
    decorations = frozenset(f for f, pages in seen.items() if recurs_nearby(sorted(pages), DECORATION_PAGES, 2 * DECORATION_PAGES))
    written, pixels = 0, 0
    with _sources(store, job_id, chunks) as sources:
        for chunk_index, first_page, count, path in sources:
            if first_page in out.skipped and all(out.skipped.get(first_page + n) == BOUND_SPENT for n in range(count)):
                continue  # its fingerprints ran past their bound: its images were never looked at
            if clock() >= deadline:
                logger.warning("figure budget spent: later figures stay descriptions", job_id=job_id, from_page=first_page, budget_s=budget_s)
                out.skipped.update({first_page + n: BOUND_SPENT for n in range(count) if first_page + n not in out.skipped})
                continue
            chunk_regions = {p: r for p, r in (regions or {}).items() if first_page <= p < first_page + count}
            left = replace(limits, figures_left=limits.figures_left - written, pixels_left=limits.pixels_left - pixels)
            folder = tempfile.mkdtemp(prefix="figures-")
            try:
                result = _bounded(write_chunk_figures, path, first_page, chunk_regions, decorations, folder, left, bound=_within(chunk_bound, deadline, clock))
                if result is None:
                    logger.warning("figure work past its bound: the chunk's figures stay descriptions", job_id=job_id, chunk_index=chunk_index)
                    out.skipped.update({first_page + n: BOUND_SPENT for n in range(count)})
                    continue
                pixels += result.pixels
                for figure in result.figures:
                    name = os.path.basename(figure.path)
                    _upload(store, keys.images_prefix(job_id) + name, figure.path)
                    out.setdefault(figure.page_number, []).append(Figure(name, figure.width, figure.height))
                    written += 1
                out.skipped.update(result.skipped)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
    for number in out:
        out.skipped.pop(number, None)
    logger.info("figures extracted", job_id=job_id, figures=written, decorations=len(decorations), pages_described=len(out.skipped))
    return out


def _within(bound: Bound, deadline: float, clock: Callable[[], float]) -> Bound:
    """The chunk's bound, no later than the document's figure budget."""
    return Bound(seconds=max(0.5, min(bound.seconds, deadline - clock())), memory_mb=bound.memory_mb)


def _bounded(function: Callable[..., T], *args: Any, bound: Bound) -> T | None:
    """``function(*args)`` in the bounded child; None when it ran past its bound or failed on the PDF."""
    try:
        return run_bounded(function, *args, bound=bound)
    except OverBudget as exc:
        logger.warning("figure work stopped", reason=exc.reason, seconds=bound.seconds, memory_mb=bound.memory_mb)
        return None
    except Exception as exc:  # pdfium refusing a page: its figures stay descriptions, the job still completes
        logger.warning("figure work failed", error=type(exc).__name__, detail=str(exc)[:200])
        return None


def _upload(store: ObjectStore, key: str, path: str) -> None:
    """One PNG from the child's folder to the bucket, read in 1 MiB parts."""
    with open(path, "rb") as stream:
        store.put_stream(key, iter(lambda: stream.read(1 << 20), b""), "image/png")
