"""Start, assemble, settle, fail: the conversion workflow's other steps."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from batchlane import keys
from batchlane.conversion.retry import close_retry, end_retry
from batchlane.converter import PageResult
from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.domain.cost import Usage
from batchlane.domain.errors import Conflict, NotFound
from batchlane.domain.markdown import PageText, assemble
from batchlane.observability import logger, metrics
from batchlane.runtime import Services
from batchlane.webhooks.events import publish_job_change


def start_conversion(svc: Services, job_id: str) -> dict[str, Any]:
    """pending → processing; returns the chunk indexes the Map iterates (pointers, not payloads)."""
    job = job_repo.transition_job(svc.db, job_id, from_statuses=("pending", "processing"), to_status="processing")
    if job is None:
        current = job_repo.get_job(svc.db, job_id)
        if current is None:
            raise NotFound(f"no job {job_id}")
        logger.info("conversion not started", job_id=job_id, status=current["status"])
        return {"jobId": job_id, "chunks": [], "proceed": False, "status": current["status"]}
    job_repo.set_chunks_status(svc.db, job_id, from_statuses=("pending", "waiting_batch"), to_status="pending")
    chunks = [row["chunk_index"] for row in job_repo.get_chunks(svc.db, job_id) if row["status"] != "completed"]
    return {"jobId": job_id, "chunks": chunks, "proceed": True, "status": "processing"}


def assemble_job(svc: Services, job_id: str) -> dict[str, Any]:
    """processing → assembling, then the Markdown in page order; a missing page is an error."""
    job = job_repo.transition_job(svc.db, job_id, from_statuses=("processing", "assembling"), to_status="assembling")
    if job is None:
        current = job_repo.get_job(svc.db, job_id)
        if current is not None and current["status"] in ("cancelled", "completed", "paused_budget"):
            # Cancelled while its chunks ran (or a retry cancelled: the job is completed as it was), or paused at its
            # funds hold (its resume runs the conversion again): nothing to assemble, not a failure.
            return {"jobId": job_id, "markdownKey": None, "pagesFailed": 0, "pagesTruncated": 0, "status": current["status"]}
        raise Conflict(f"job {job_id} is {current['status'] if current else 'missing'}; not assembling", error_id="JOB_NOT_PROCESSING")
    chunks = job_repo.get_chunks(svc.db, job_id)
    unfinished = [c["chunk_index"] for c in chunks if c["status"] != "completed"]
    if unfinished:
        raise Conflict(f"chunks {unfinished[:5]} of job {job_id} are not completed", error_id="CHUNKS_INCOMPLETE")
    pages: list[PageText] = []
    batch_served_usage = Usage()
    for chunk in chunks:
        data = svc.store.get_json(chunk["result_key"])
        for item in data["pages"]:
            result = PageResult.from_json(item)
            status = "converted" if result.status == "blank" else result.status
            pages.append(PageText(result.page_number, status, result.markdown, result.reason))
            if result.served_by == "batch":
                batch_served_usage = batch_served_usage + result.usage
    markdown = assemble(pages, expected_pages=job["total_pages"])
    key = keys.markdown_key(job_id)
    svc.store.put_bytes(key, markdown.encode(), "text/markdown; charset=utf-8")
    failed = sum(1 for p in pages if p.status == "failed")
    truncated = sum(1 for p in pages if p.status == "truncated")
    job_repo.transition_job(
        svc.db,
        job_id,
        from_statuses=("assembling",),
        to_status="assembling",
        markdown_key=key,
        pages_converted=len(pages) - failed,
        pages_failed=failed,
        pages_batch=sum(c["pages_batch"] for c in chunks),
    )
    if (job["options"] or {}).get("_batchPrimed"):
        # Realised saving: what the batch-served pages would have cost on-demand, less the batch bill.
        saving = svc.prices.cost(job["model_id"], batch_served_usage) - Decimal(job["options"].get("_batchCostUsd", "0"))
        metrics.add_metric(name="BatchSavingUsd", unit=MetricUnit.NoUnit, value=float(saving))
    logger.info("job assembled", job_id=job_id, pages=len(pages), failed=failed, truncated=truncated)
    return {"jobId": job_id, "markdownKey": key, "pagesFailed": failed, "pagesTruncated": truncated}


def settle_job(svc: Services, job_id: str) -> dict[str, Any]:
    """assembling → completed in one transaction: total from the ledger, hold settled, file converted."""
    with svc.db.transaction() as tx:
        job = job_repo.lock_job(tx, job_id)
        if job is None:
            raise NotFound(f"no job {job_id}")
        if job["status"] != "assembling":
            return {"jobId": job_id, "status": job["status"], "settled": False}
        total = ledger.job_total(tx, job_id)
        close_retry(tx, job, total=total, pages_failed=job["pages_failed"])
        error_id = "PAGES_FAILED" if job["pages_failed"] else None
        message = f"{job['pages_failed']} of {job['total_pages']} pages could not be converted" if job["pages_failed"] else None
        job_repo.transition_job(
            tx, job_id, from_statuses=("assembling",), to_status="completed", total_cost_usd=total, error_id=error_id, error_message=message
        )
        ledger.close_hold(tx, job_id, outcome="settled", settled_usd=total)
        job_repo.set_file_status(tx, str(job["file_id"]), "converted")
    logger.info("job settled", job_id=job_id, total_cost_usd=str(total), pages_failed=job["pages_failed"])
    publish_job_change(svc, job_id, "completed")
    return {"jobId": job_id, "status": "completed", "totalCostUsd": str(total), "settled": True}


def fail_job(svc: Services, job_id: str, *, error_id: str, message: str) -> dict[str, Any]:
    """Any live state except cancelled → failed: spend so far stays on the ledger, the hold is released.
    A failing retry fails only itself: the job goes back to completed as it was."""
    if (ended := end_retry(svc, job_id, outcome="failed", message=f"{error_id}: {message}")) is not None:
        return {"jobId": job_id, "status": ended["status"], "errorId": error_id, "retryFailed": ended["retry"]}
    with svc.db.transaction() as tx:
        job = job_repo.lock_job(tx, job_id)
        if job is None:
            raise NotFound(f"no job {job_id}")
        if job["status"] in ("completed", "failed", "cancelled"):
            return {"jobId": job_id, "status": job["status"]}
        total = ledger.job_total(tx, job_id)
        job_repo.transition_job(
            tx, job_id, from_statuses=(job["status"],), to_status="failed", total_cost_usd=total, error_id=error_id, error_message=message[:500]
        )
        job_repo.set_chunks_status(tx, job_id, from_statuses=("pending", "processing", "waiting_batch", "paused_budget"), to_status="failed")
        ledger.close_hold(tx, job_id, outcome="released", settled_usd=Decimal(0))
        job_repo.set_file_status(tx, str(job["file_id"]), "failed")
    logger.error("job failed", job_id=job_id, error_id=error_id, error_message=message[:200])
    publish_job_change(svc, job_id, "failed")
    return {"jobId": job_id, "status": "failed", "errorId": error_id}
