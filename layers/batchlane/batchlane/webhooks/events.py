"""Public job events: every state change a user cares about, once, on the deployment's bus.

source ``batchlane``, detail-type ``Conversion Job State Change``, detail as
:func:`job_change_detail` builds it (documented in docs/operations.md "Public events").
The same detail is what a webhook delivery carries. Publishing never raises: a job's
conversion must not fail because the bus or a receiver is unwell.

Folder jobs (issue 12) publish their own detail-type, ``Folder Job State Change``, with
``scope: "folder_job"`` (folders/notify.py); :func:`webhook_events` maps its end states to
``job.completed``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from batchlane.contract import JOB_STATE_CHANGE_DETAIL_TYPE
from batchlane.domain.status import FINISHED_JOB_STATUSES, JobStatus
from batchlane.observability import logger
from batchlane.ports import EventBus, Services

# paused_budget: the owner resumes it (docs/operations.md "Budgets, caps and fair sharing")
FOLDER_JOB_END_STATUSES = ("completed", "completed_with_failures", "cancelled", "error")
PUBLISHED_STATUSES = (JobStatus.WAITING_BATCH.value, JobStatus.PAUSED_BUDGET.value, *FINISHED_JOB_STATUSES)


def outcome(status: str, pages_failed: int) -> str:
    if status == "completed" and pages_failed:
        return "completed_with_failed_pages"
    return status


def job_change_detail(svc: Services, job_id: str) -> dict[str, Any] | None:
    """The detail of a job's current state, or None for a state nobody is told about."""
    jobs = svc.uow().jobs
    job = jobs.get_job(job_id)
    file = jobs.get_file(job.file_id) if job is not None else None  # its name never changes
    if job is None or file is None or job.status not in PUBLISHED_STATUSES:
        return None
    markdown = f"s3://{svc.settings.batchlane_bucket}/{job.markdown_key}" if job.status == "completed" and job.markdown_key else None
    return {
        "scope": "job",
        "jobId": job.id,
        "fileId": job.file_id,
        "fileName": file.name,
        "ownerId": job.owner_id,
        "status": job.status,
        "outcome": outcome(job.status, job.pages_failed),
        "pages": {"total": job.total_pages, "failed": job.pages_failed, "batchServed": job.pages_batch},
        "costUsd": str(job.total_cost_usd),
        **_saving(svc, job.id),
        "outputs": {"markdown": markdown},
        "error": {"code": job.error_id, "message": job.error_message} if job.error_id else None,
        "changedAt": datetime.now(UTC).isoformat(),
    }


def _saving(svc: Services, job_id: str) -> dict[str, str]:
    """What the job's pages would have cost all on-demand and the saving, signed: a loss is negative (domain/savings.py)."""
    figures = svc.uow().reads.ledger_money(job_id)
    return {"allOnDemandCostUsd": str(figures.all_on_demand_usd), "savingUsd": str(figures.saving_usd), "savingPercent": str(figures.saving_percent)}


def publish_change(bus: EventBus, detail: dict[str, Any], detail_type: str = JOB_STATE_CHANGE_DETAIL_TYPE) -> bool:
    """Put ``detail`` on the bus; never raises (a conversion or folder job never fails for the bus)."""
    try:
        bus.publish(detail_type, detail)
    except Exception as exc:  # never fail the conversion for the bus
        logger.warning("job event not published", job_id=detail.get("jobId"), status=detail.get("status"), error=str(exc))
        return False
    logger.info("job event published", job_id=detail.get("jobId"), status=detail.get("status"), outcome=detail.get("outcome"))
    return True


def publish_job_change(svc: Services, job_id: str, status: str | None = None) -> bool:
    """Publish the job's state after the commit that changed it to ``status`` (skipped if it has
    moved on since: that later change publishes itself, so none is told twice). Never raises."""
    try:
        detail = job_change_detail(svc, job_id)
    except Exception as exc:
        logger.warning("job event not built", job_id=job_id, error=str(exc))
        return False
    if detail is None or (status is not None and detail["status"] != status):
        return False
    return publish_change(svc.bus, detail)


def webhook_events(detail: dict[str, Any]) -> list[str]:
    """The webhook event names a state change means (a single-file job is its one file too)."""
    status, scope = detail.get("status"), detail.get("scope", "job")
    if scope == "folder_job":  # a folder job's own change: only its end is a webhook event
        return ["job.completed"] if status in FOLDER_JOB_END_STATUSES else []
    failed_pages = bool((detail.get("pages") or {}).get("failed"))
    names: list[str] = []
    if status == "waiting_batch" and scope == "job":
        names.append("job.waiting_batch")
    if status == "paused_budget" and scope == "job":
        names.append("job.paused")  # its error says why and what to do (domain/budget.pause_message)
    if status in FINISHED_JOB_STATUSES and scope == "job":
        names.append("job.completed")
    if status == "completed":
        names.append("file.completed")
    if status == "failed" or (status == "completed" and failed_pages):
        names.append("file.error")
    return names


def webhook_body(delivery_id: str, event: str, detail: dict[str, Any]) -> dict[str, Any]:
    """What the receiver gets: the event, its delivery id (the idempotency key) and the detail."""
    body = {"deliveryId": delivery_id, "event": event, "timestamp": detail.get("changedAt") or datetime.now(UTC).isoformat()}
    body.update({k: v for k, v in detail.items() if k not in ("ownerId", "changedAt")})
    return body
