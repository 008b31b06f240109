"""How a job looks from outside: status, phase, progress, batch row, money (the rows: db/read_model.py)."""

from __future__ import annotations

from typing import Any

from batchlane.db import read_model
from batchlane.db.jobs import Runner


def _phase(row: dict[str, Any]) -> str:
    """One word for a person: where the job is right now."""
    status = row["status"]
    if status == "waiting_batch":
        return {None: "batch_queued", "preparing": "batch_preparing", "submitted": "batch_running", "stopping": "batch_resuming", "closed": "batch_resuming"}[
            row["batch_state"]
        ]
    return {"pending": "queued", "processing": "converting"}.get(status, status)  # splitting stays "splitting"


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def _money(value: Any) -> str | None:
    return str(value) if value is not None else None


def conversion_view(row: dict[str, Any]) -> dict[str, Any]:
    batch = None
    if row["batch_state"] is not None:
        batch = {
            "state": row["batch_state"],
            "endState": row["batch_end_state"],
            "bedrockStatus": row["bedrock_status"],
            "reason": row["batch_reason"],
            "records": row["record_count"],
            "accepted": row["accepted_count"],
            "fallback": row["fallback_count"],
            "costUsd": _money(row["batch_cost_usd"]),
            "bedrockJobs": row["batch_lanes"],
            "submittedAt": _iso(row["submitted_at"]),
            "closedAt": _iso(row["closed_at"]),
        }
    hold = None
    if row["hold_amount_usd"] is not None:
        hold = {
            "amountUsd": _money(row["hold_amount_usd"]),
            "outcome": row["hold_outcome"],
            "settledUsd": _money(row["hold_settled_usd"]),
            "expiresAt": _iso(row["hold_expires_at"]),
        }
    return {
        "jobId": str(row["job_id"]),
        "fileId": str(row["file_id"]),
        "status": row["status"],
        "phase": _phase(row),
        "batchWaiting": row["status"] == "waiting_batch",
        "modelId": row["model_id"],
        "pages": {"total": row["total_pages"], "done": int(row["pages_done"] or 0), "failed": row["pages_failed"], "batchServed": row["pages_batch"]},
        "chunks": {"total": row["chunk_count"], "done": int(row["chunks_done"] or 0), "cancelled": int(row["chunks_cancelled"] or 0)},
        "batch": batch,
        "hold": hold,
        "costUsd": _money(row["total_cost_usd"]),
        "error": {"code": row["error_id"], "message": row["error_message"]} if row["error_id"] else None,
        "retry": {"attempt": row["retry_attempt"], "pages": list(row["retry_pages"])} if row.get("retry_attempt") is not None else None,
        "createdAt": _iso(row["job_created_at"]),
        "startedAt": _iso(row["started_at"]),
        "finishedAt": _iso(row["finished_at"]),
    }


def file_view(row: dict[str, Any], conversion: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "fileId": str(row["id"]),
        "name": row["name"],
        "sizeBytes": int(row["size_bytes"]),
        "status": row.get("file_status", row["status"]),
        "batchWaiting": bool(conversion and conversion["batchWaiting"]),
        "conversion": conversion,
        "folderJobId": row.get("folder_job_id"),  # a folder job's file (`jobs list` shows the folder job instead)
        "createdAt": _iso(row["created_at"]),
        "updatedAt": _iso(row["updated_at"]),
    }


def owner_files(db: Runner, owner_id: str, *, job_status: str | None, limit: int) -> list[dict[str, Any]]:
    """The owner's files, newest first, each with its live (else newest) conversion."""
    rows = read_model.owner_file_rows(db, owner_id, job_status=job_status, limit=limit)
    return [file_view(r, conversion_view(r) if r["job_id"] is not None else None) for r in rows]
