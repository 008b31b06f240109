"""assemble: chunk results → the job's Markdown in page order, every page marked."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from batchlane import keys
from batchlane.converter import PageResult
from batchlane.db import jobs as job_repo
from batchlane.domain import status as st
from batchlane.domain.cost import Usage
from batchlane.domain.errors import Conflict
from batchlane.domain.markdown import PageText, assemble
from batchlane.domain.status import ChunkStatus, JobStatus
from batchlane.observability import logger, metrics
from batchlane.runtime import Services


def assemble_job(svc: Services, job_id: str) -> dict[str, Any]:
    """processing → assembling, then the Markdown in page order; a missing page is an error."""
    job = job_repo.move_job(svc.db, job_id, st.assemble())
    if job is None:
        current = job_repo.get_job(svc.db, job_id)
        if current is not None and current.status in (JobStatus.CANCELLED, JobStatus.COMPLETED, JobStatus.PAUSED_BUDGET):
            # Cancelled while its chunks ran (or a retry cancelled: the job is completed as it was), or paused at its
            # funds hold (its resume runs the conversion again): nothing to assemble, not a failure.
            return {"jobId": job_id, "markdownKey": None, "pagesFailed": 0, "pagesTruncated": 0, "status": current.status}
        raise Conflict(f"job {job_id} is {current.status if current else 'missing'}; not assembling", error_id="JOB_NOT_PROCESSING")
    chunks = job_repo.get_chunks(svc.db, job_id)
    unfinished = [c.chunk_index for c in chunks if c.status != ChunkStatus.COMPLETED]
    if unfinished:
        raise Conflict(f"chunks {unfinished[:5]} of job {job_id} are not completed", error_id="CHUNKS_INCOMPLETE")
    pages: list[PageText] = []
    batch_served_usage = Usage()
    for chunk in chunks:
        assert chunk.result_key is not None, f"chunk {chunk.chunk_index} completed without a result"
        data = svc.store.get_json(chunk.result_key)
        for item in data["pages"]:
            result = PageResult.from_json(item)
            status = "converted" if result.status == "blank" else result.status
            pages.append(PageText(result.page_number, status, result.markdown, result.reason))
            if result.served_by == "batch":
                batch_served_usage = batch_served_usage + result.usage
    markdown = assemble(pages, expected_pages=job.total_pages)
    key = keys.markdown_key(job_id)
    svc.store.put_bytes(key, markdown.encode(), "text/markdown; charset=utf-8")
    failed = sum(1 for p in pages if p.status == "failed")
    truncated = sum(1 for p in pages if p.status == "truncated")
    job_repo.move_job(
        svc.db,
        job_id,
        st.assemble(),  # again, now with what was assembled
        markdown_key=key,
        pages_converted=len(pages) - failed,
        pages_failed=failed,
        pages_batch=sum(c.pages_batch for c in chunks),
    )
    if (job.options or {}).get("_batchPrimed"):
        # Realised saving: what the batch-served pages would have cost on-demand, less the batch bill.
        saving = svc.prices.cost(job.model_id, batch_served_usage) - Decimal(job.options.get("_batchCostUsd", "0"))
        metrics.add_metric(name="BatchSavingUsd", unit=MetricUnit.NoUnit, value=float(saving))
    logger.info("job assembled", job_id=job_id, pages=len(pages), failed=failed, truncated=truncated)
    return {"jobId": job_id, "markdownKey": key, "pagesFailed": failed, "pagesTruncated": truncated}
