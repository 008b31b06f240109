"""settle: end a job, completed (totals from the ledger, hold settled) or failed (hold released)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from batchlane.domain import status as st
from batchlane.domain.errors import NotFound
from batchlane.domain.status import Entity
from batchlane.filejob.retry import close_retry, end_retry
from batchlane.observability import logger
from batchlane.ports import Services
from batchlane.webhooks.events import publish_job_change


def settle_job(svc: Services, job_id: str, *, once: bool = False) -> dict[str, Any]:
    """assembling → completed in one transaction: total from the ledger, hold settled, file converted.

    ``once`` (the recovery sweep, operations/recovery.py): a pause already settled is not announced again;
    Settle itself announces on every try, so a try whose PutEvents failed is made good by the next."""
    uow = svc.uow()
    current = uow.jobs.get_job(job_id)
    if current is not None and current.status == "paused_budget":
        # The workflow of a job paused at its funds hold ends here: say so on the bus (the chunk
        # processor that paused it has no PutEvents grant); from now on its owner may resume it.
        if once:
            with uow:
                locked = uow.jobs.lock_job(job_id)
                first = locked is not None and locked.status == "paused_budget" and not locked.pause_settled
                if first:
                    uow.budgets.mark_pause_settled(job_id)
            if not first:
                return {"jobId": job_id, "status": locked.status if locked else "paused_budget", "settled": False}
        else:
            uow.budgets.mark_pause_settled(job_id)
        publish_job_change(svc, job_id, "paused_budget")
        return {"jobId": job_id, "status": "paused_budget", "settled": False}
    with uow:
        job = uow.jobs.lock_job(job_id)
        if job is None:
            raise NotFound(f"no job {job_id}")
        if not st.settle().allows(job.status):
            return {"jobId": job_id, "status": job.status, "settled": False}
        total = uow.ledger.job_total(job_id)
        close_retry(uow, job, total=total, pages_failed=job.pages_failed)
        error_id = "PAGES_FAILED" if job.pages_failed else None
        message = f"{job.pages_failed} of {job.total_pages} pages could not be converted" if job.pages_failed else None
        uow.jobs.move_job(job_id, st.settle(), total_cost_usd=total, error_id=error_id, error_message=message)
        uow.ledger.close_hold(job_id, outcome="settled", settled_usd=total)
        uow.jobs.move_file(str(job.file_id), st.settle(Entity.FILE))
    logger.info("job settled", job_id=job_id, total_cost_usd=str(total), pages_failed=job.pages_failed)
    publish_job_change(svc, job_id, "completed")
    return {"jobId": job_id, "status": "completed", "totalCostUsd": str(total), "settled": True}


def fail_job(svc: Services, job_id: str, *, error_id: str, message: str) -> dict[str, Any]:
    """Any live state except cancelled → failed: spend so far stays on the ledger, the hold is released.
    A failing retry fails only itself: the job goes back to completed as it was."""
    if (ended := end_retry(svc, job_id, outcome="failed", message=f"{error_id}: {message}")) is not None:
        return {"jobId": job_id, "status": ended["status"], "errorId": error_id, "retryFailed": ended["retry"]}
    uow = svc.uow()
    with uow:
        job = uow.jobs.lock_job(job_id)
        if job is None:
            raise NotFound(f"no job {job_id}")
        if not st.fail().allows(job.status):  # finished already
            return {"jobId": job_id, "status": job.status}
        total = uow.ledger.job_total(job_id)
        uow.jobs.move_job(job_id, st.fail(), total_cost_usd=total, error_id=error_id, error_message=message[:500])
        uow.jobs.move_chunks(job_id, st.fail(Entity.CHUNK))
        uow.ledger.close_hold(job_id, outcome="released", settled_usd=Decimal(0))
        uow.jobs.move_file(str(job.file_id), st.fail(Entity.FILE))
    logger.error("job failed", job_id=job_id, error_id=error_id, error_message=message[:200])
    publish_job_change(svc, job_id, "failed")
    return {"jobId": job_id, "status": "failed", "errorId": error_id}
