"""assemble: chunk results → the job's Markdown in page order, every page marked, and its per-page record.

Three streamed reads of the chunk results: the first surveys the page edges, the second writes
``pages.jsonl`` (with the furniture removed from each page, so the removal can be audited and
undone), the third the document (domain/assembly.py). None holds the document.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from batchlane import keys
from batchlane.claude import PageResult
from batchlane.domain import status as st
from batchlane.domain.assembly import (
    Figure,
    Furniture,
    FurnitureSurvey,
    Region,
    assemble_document,
    figure_descriptions,
    figure_regions,
    page_text_blocks,
    raw_document,
    strip_furniture,
    survey_page,
)
from batchlane.domain.cost import Usage
from batchlane.domain.errors import Conflict
from batchlane.domain.file_types import DOCUMENTS
from batchlane.domain.markdown import PageText
from batchlane.domain.status import ChunkStatus, JobStatus
from batchlane.filejob.figures import Figures, extract_figures, figure_folder
from batchlane.filejob.outputs import write_renderings
from batchlane.observability import logger, metrics
from batchlane.ports import ObjectStore, Services

BORN_DIGITAL = frozenset(t.name for t in DOCUMENTS)


def assemble_job(svc: Services, job_id: str) -> dict[str, Any]:
    """processing → assembling, then the Markdown in page order; a missing page is an error."""
    jobs = svc.uow().jobs
    job = jobs.move_job(job_id, st.assemble())
    if job is None:
        current = jobs.get_job(job_id)
        if current is not None and current.status in (JobStatus.CANCELLED, JobStatus.COMPLETED, JobStatus.PAUSED_BUDGET):
            # Cancelled while its chunks ran (or a retry cancelled: the job is completed as it was), or paused at its
            # funds hold (its resume runs the conversion again): nothing to assemble, not a failure.
            return {"jobId": job_id, "markdownKey": None, "pagesFailed": 0, "pagesTruncated": 0, "status": current.status}
        raise Conflict(f"job {job_id} is {current.status if current else 'missing'}; not assembling", error_id="JOB_NOT_PROCESSING")
    chunks = jobs.get_chunks(job_id)
    unfinished = [c.chunk_index for c in chunks if c.status != ChunkStatus.COMPLETED]
    if unfinished:
        raise Conflict(f"chunks {unfinished[:5]} of job {job_id} are not completed", error_id="CHUNKS_INCOMPLETE")
    key = keys.markdown_key(job_id)
    options = job.options or {}
    if job.source_type in BORN_DIGITAL:
        # Its pages are the document's own sections, its figures already files (filejob/split.py): nothing to
        # remove as furniture, no heading level to guess, no page break to mend. Page by page, markers kept.
        options = {**options, "assembly": "none"}
    file_row = jobs.get_file(job.file_id)
    folder = figure_folder(file_row.name if file_row else "document.pdf")
    figures = Figures()
    if options.get("assembly") != "none":
        regions = described_regions(read_results(svc.store, [c.result_key for c in chunks]))
        figures = extract_figures(svc.store, job_id, [(c.chunk_index, c.first_page, c.last_page) for c in chunks], regions=regions)
    tally = write_document(
        svc.store, job_id, [c.result_key for c in chunks], options, job.total_pages, figures=figures, figure_folder=folder, figures_skipped=figures.skipped
    )
    failed, truncated, batch_served_usage = tally.failed, tally.truncated, tally.batch_usage
    write_renderings(svc.store, job_id, options, figure_folder=folder, title=folder.removesuffix(".images"))
    jobs.move_job(
        job_id,
        st.assemble(),  # again, now with what was assembled
        markdown_key=key,
        pages_converted=tally.pages - failed,
        pages_failed=failed,
        pages_batch=sum(c.pages_batch for c in chunks),
    )
    if job.batch_primed:
        # Realised saving: what the batch-served pages would have cost on-demand, less the batch bill.
        saving = svc.prices.cost(job.model_id, batch_served_usage) - job.batch_cost_usd
        metrics.add_metric(name="BatchSavingUsd", unit=MetricUnit.NoUnit, value=float(saving))
    logger.info("job assembled", job_id=job_id, pages=tally.pages, failed=failed, truncated=truncated)
    return {"jobId": job_id, "markdownKey": key, "pagesFailed": failed, "pagesTruncated": truncated}


def write_document(
    store: ObjectStore,
    job_id: str,
    result_keys: list[str | None],
    options: dict[str, Any],
    total_pages: int,
    *,
    figures: Mapping[int, list[Figure]] | None = None,
    figure_folder: str = "images",
    figures_skipped: Mapping[int, str] | None = None,
) -> _Tally:
    """pages.jsonl, then the Markdown (``options.assembly``: document, or none), both streamed; what they held."""
    assert all(result_keys), "a chunk completed without a result"
    furniture = Furniture()
    if options.get("assembly") != "none":
        survey = FurnitureSurvey()
        for result in read_results(store, result_keys):
            survey_page(survey, _page_text(result))
        furniture = survey.furniture()
    lines = _jsonl(read_results(store, result_keys), furniture, figures or {}, figure_folder, figures_skipped or {})
    store.put_stream(keys.pages_key(job_id), lines, "application/x-ndjson")
    tally = _Tally()
    pages = tally.count(read_results(store, result_keys))
    if options.get("assembly") == "none":
        pieces = raw_document(pages, expected_pages=total_pages)
    else:
        pieces = assemble_document(pages, furniture, expected_pages=total_pages, figures=figures, figure_folder=figure_folder)
    store.put_stream(keys.markdown_key(job_id), _encoded(pieces), "text/markdown; charset=utf-8")  # a page without a result raises
    return tally


def read_results(store: ObjectStore, result_keys: list[str | None]) -> Iterator[PageResult]:
    """Every page result in page order, one chunk file in memory at a time."""
    for key in result_keys:
        assert key is not None
        for item in sorted(store.get_json(key)["pages"], key=lambda p: int(p["page"])):
            yield PageResult.from_json(item)


def described_regions(results: Iterator[PageResult]) -> dict[int, list[Region]]:
    """Page number → the regions the model gave its figures (only these boxes are held, one chunk read at a time)."""
    out = {}
    for result in results:
        if regions := figure_regions(page_text_blocks(result.markdown)):
            out[result.page_number] = regions
    return out


def _page_text(result: PageResult) -> PageText:
    return PageText(result.page_number, "converted" if result.status == "blank" else result.status, result.markdown, result.reason)


def page_record(result: PageResult, figures: list[Figure], folder: str, furniture: Furniture | None = None, figures_skipped: str | None = None) -> dict[str, Any]:
    """One line of pages.jsonl: what a pipeline reads instead of parsing the Markdown's comments.

    ``markdown`` is the page as the model gave it (cleaned and made safe); ``furniture`` lists the lines the
    document pass removed from it (running heads, feet, folios), so the removal can be audited and undone;
    ``figuresSkipped`` names the bound that kept the page's figures as descriptions (filejob/figures.py), or null.
    """
    blocks = page_text_blocks(result.markdown)
    markdown = "\n\n".join(blocks)
    described = [text for _, text in figure_descriptions(blocks)]
    removed = strip_furniture(blocks, result.page_number, furniture)[1] if furniture is not None and result.status != "failed" else []
    return {
        "page": result.page_number,
        "status": result.status,
        "reason": result.reason,
        "lane": result.served_by,
        "inputTokens": result.usage.input_tokens,
        "outputTokens": result.usage.output_tokens,
        "markdown": markdown,
        "furniture": removed,
        "figuresSkipped": figures_skipped,
        "figures": [
            {"src": f"{folder}/{f.name}", "width": f.width, "height": f.height, "description": described[k] if k < len(described) else None}
            for k, f in enumerate(figures)
        ],
    }


def _jsonl(
    results: Iterator[PageResult], furniture: Furniture, figures: Mapping[int, list[Figure]], folder: str, skipped: Mapping[int, str]
) -> Iterator[bytes]:
    for result in results:
        record = page_record(result, figures.get(result.page_number, []), folder, furniture, skipped.get(result.page_number))
        yield (json.dumps(record, ensure_ascii=False) + "\n").encode()


def _encoded(pieces: Iterator[str], size: int = 1 << 20) -> Iterator[bytes]:
    """Text pieces as ~1 MiB byte chunks (an upload part is filled from a few, not thousands)."""
    buffer: list[str] = []
    held = 0
    for piece in pieces:
        buffer.append(piece)
        held += len(piece)
        if held >= size:
            yield "".join(buffer).encode()
            buffer, held = [], 0
    if buffer:
        yield "".join(buffer).encode()


@dataclass
class _Tally:
    """What the assembled pages add up to, counted as they stream past."""

    pages: int = 0
    failed: int = 0
    truncated: int = 0
    batch_usage: Usage = field(default_factory=Usage)

    def count(self, results: Iterator[PageResult]) -> Iterator[PageText]:
        for result in results:
            self.pages += 1
            self.failed += result.status == "failed"
            self.truncated += result.status == "truncated"
            if result.served_by == "batch":
                self.batch_usage = self.batch_usage + result.usage
            yield _page_text(result)
