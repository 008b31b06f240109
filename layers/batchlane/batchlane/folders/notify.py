"""A folder job's public event, ``Folder Job State Change``, on each status change (issue 12).

Published after the commit that moved the job (processing, completed, completed_with_failures,
cancelled once its last documents ended, error); ``webhook_dispatch`` turns its end into the
``job.completed`` delivery its ``notifications`` ask for. Publishing never raises.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from batchlane.contract import FOLDER_JOB_STATE_CHANGE_DETAIL_TYPE
from batchlane.folders import layout
from batchlane.observability import logger
from batchlane.ports import EventBus, FolderJobRepository
from batchlane.rows import FolderCounts, FolderJob
from batchlane.webhooks.events import publish_change


def folder_change_detail(job: FolderJob, counts: FolderCounts) -> dict[str, Any]:
    """What the bus and the webhook carry: status, file and page counts, cost, the record's URIs."""
    out = f"s3://{job.output_bucket}/"
    return {
        "scope": "folder_job",
        "jobId": job.id,
        "name": job.name,
        "ownerId": job.owner_id,
        "status": job.status,
        "outcome": job.status,
        "files": {
            "discovered": counts.discovered,
            "excluded": job.excluded_count,
            **{k: getattr(counts, k) for k in ("queued", "processing", "completed", "failed", "skipped")},
        },
        "pages": {"completed": counts.pages_completed, "failed": counts.pages_failed},
        "costUsd": f"{counts.cost_usd:.6f}",
        "outputs": {
            "folder": out + job.output_prefix,
            "manifest": out + layout.manifest_key(job.output_prefix, job.id),
            "report": out + layout.report_key(job.output_prefix, job.id),
        },
        "error": {"code": job.error_id, "message": job.error_message} if job.error_id else None,
        "changedAt": datetime.now(UTC).isoformat(),
    }


def publish_folder_change(folder_jobs: FolderJobRepository, bus: EventBus, job: FolderJob | None) -> bool:
    """Publish ``job`` (the row a move returned; None: the move did not happen, nothing to tell)."""
    if job is None:
        return False
    try:
        detail = folder_change_detail(job, folder_jobs.counts(job.id))
    except Exception as exc:
        logger.warning("folder job event not built", job_id=job.id, error=str(exc))
        return False
    return publish_change(bus, detail, FOLDER_JOB_STATE_CHANGE_DETAIL_TYPE)
