"""How a job looks from outside: status, phase, progress, lane, money (the rows: batchlane.ports.ReadModel)."""

from __future__ import annotations

from typing import Any

from batchlane.domain.advice import error_object
from batchlane.rows import JobProgress, OwnerFile


def _phase(job: JobProgress) -> str:
    """One word for a person: where the job is right now."""
    if job.status == "waiting_batch":
        lane_state = job.lanes.state if job.lanes is not None else None
        return {None: "batch_queued", "preparing": "batch_preparing", "submitted": "batch_running", "stopping": "batch_resuming", "closed": "batch_resuming"}[
            lane_state
        ]
    return {"pending": "queued", "processing": "converting"}.get(job.status, job.status)  # splitting stays "splitting"


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def _money(value: Any) -> str | None:
    return str(value) if value is not None else None


def conversion_view(job: JobProgress) -> dict[str, Any]:
    lanes, hold = job.lanes, job.hold
    batch = None
    if lanes is not None:
        batch = {
            "state": lanes.state,
            "endState": lanes.end_state,
            "bedrockStatus": lanes.bedrock_status,
            "reason": lanes.reason,
            "records": lanes.record_count,
            "accepted": lanes.accepted_count,
            "fallback": lanes.fallback_count,
            "costUsd": _money(lanes.cost_usd),
            "bedrockJobs": lanes.lanes,
            "submittedAt": _iso(lanes.submitted_at),
            "closedAt": _iso(lanes.closed_at),
        }
    return {
        "jobId": job.job_id,
        "fileId": job.file_id,
        "status": job.status,
        "phase": _phase(job),
        "batchWaiting": job.status == "waiting_batch",
        "modelId": job.model_id,
        "pages": {"total": job.total_pages, "done": job.pages_done, "failed": job.pages_failed, "batchServed": job.pages_batch},
        "chunks": {"total": job.chunk_count, "done": job.chunks_done, "cancelled": job.chunks_cancelled},
        "batch": batch,
        "hold": (
            {"amountUsd": _money(hold.amount_usd), "outcome": hold.outcome, "settledUsd": _money(hold.settled_usd), "expiresAt": _iso(hold.expires_at)}
            if hold is not None
            else None
        ),
        "costUsd": _money(job.total_cost_usd),
        "error": error_object(job.error_id, job.error_message),
        "retry": {"attempt": job.retry_attempt, "pages": list(job.retry_pages or ())} if job.retry_attempt is not None else None,
        "createdAt": _iso(job.created_at),
        "startedAt": _iso(job.started_at),
        "finishedAt": _iso(job.finished_at),
    }


def file_view(f: OwnerFile) -> dict[str, Any]:
    conversion = conversion_view(f.job) if f.job is not None else None
    return {
        "fileId": f.file_id,
        "name": f.name,
        "sizeBytes": f.size_bytes,
        "status": f.status,
        "batchWaiting": bool(conversion and conversion["batchWaiting"]),
        "conversion": conversion,
        "folderJobId": f.folder_job_id,  # a folder job's file (`jobs list` shows the folder job instead)
        "createdAt": _iso(f.created_at),
        "updatedAt": _iso(f.updated_at),
    }
