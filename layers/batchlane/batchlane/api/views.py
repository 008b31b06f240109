"""How a job looks from outside: status, phase, progress, batch row, money. Read-only SQL."""

from __future__ import annotations

from typing import Any

from batchlane.db.jobs import Runner

_JOB_COLUMNS = """j.id AS job_id, j.file_id, j.status, j.options, j.model_id, j.total_pages, j.chunk_count, j.pages_failed,
       j.pages_batch, j.total_cost_usd, j.error_id, j.error_message, j.created_at AS job_created_at, j.started_at, j.finished_at,
       c.chunks_done, c.chunks_cancelled, c.pages_done,
       b.state AS batch_state, b.end_state AS batch_end_state, b.bedrock_status, b.reason AS batch_reason, b.record_count,
       b.accepted_count, b.fallback_count, b.cost_usd AS batch_cost_usd, b.submitted_at, b.closed_at,
       h.amount_usd AS hold_amount_usd, h.outcome AS hold_outcome, h.settled_usd AS hold_settled_usd, h.expires_at AS hold_expires_at"""

_JOB_JOINS = """LEFT JOIN LATERAL (
           SELECT count(*) FILTER (WHERE ch.status = 'completed') AS chunks_done,
                  count(*) FILTER (WHERE ch.status = 'cancelled') AS chunks_cancelled,
                  COALESCE(sum(CASE WHEN ch.status = 'completed' THEN ch.last_page - ch.first_page + 1 ELSE ch.pages_done END), 0) AS pages_done
           FROM chunk_jobs ch WHERE ch.job_id = j.id) c ON true
       LEFT JOIN conversion_batch_jobs b ON b.job_id = j.id
       LEFT JOIN funds_holds h ON h.job_id = j.id"""


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
        "retry": (row["options"] or {}).get("_retry"),  # {attempt, pages} while a retry of failed pages runs
        "createdAt": _iso(row["job_created_at"]),
        "startedAt": _iso(row["started_at"]),
        "finishedAt": _iso(row["finished_at"]),
    }


def job_row(db: Runner, job_id: str) -> dict[str, Any] | None:
    return db.one(f"SELECT {_JOB_COLUMNS}, j.owner_id FROM large_conversion_jobs j {_JOB_JOINS} WHERE j.id = CAST(:id AS uuid)", id=job_id)


def latest_job_row(db: Runner, file_id: str) -> dict[str, Any] | None:
    """The file's live job if it has one, else its newest."""
    return db.one(
        f"""SELECT {_JOB_COLUMNS} FROM large_conversion_jobs j {_JOB_JOINS}
            WHERE j.file_id = CAST(:id AS uuid)
            ORDER BY (j.status IN ('completed', 'failed', 'cancelled')), j.created_at DESC LIMIT 1""",
        id=file_id,
    )


def file_view(row: dict[str, Any], conversion: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "fileId": str(row["id"]),
        "name": row["name"],
        "sizeBytes": int(row["size_bytes"]),
        "status": row.get("file_status", row["status"]),
        "batchWaiting": bool(conversion and conversion["batchWaiting"]),
        "conversion": conversion,
        "createdAt": _iso(row["created_at"]),
        "updatedAt": _iso(row["updated_at"]),
    }


def owner_files(db: Runner, owner_id: str, *, job_status: str | None, limit: int) -> list[dict[str, Any]]:
    """The owner's files, newest first, each with its live (else newest) conversion."""
    rows = db.run(
        f"""SELECT jv.*, f.id, f.name, f.size_bytes, f.status AS file_status, f.created_at, f.updated_at FROM files f
            LEFT JOIN LATERAL (
                SELECT {_JOB_COLUMNS} FROM large_conversion_jobs j {_JOB_JOINS}
                WHERE j.file_id = f.id
                ORDER BY (j.status IN ('completed', 'failed', 'cancelled')), j.created_at DESC LIMIT 1) jv ON true
            WHERE f.owner_id = :owner AND f.deleted_at IS NULL
              AND (CAST(:status AS text) IS NULL OR jv.status = :status)
            ORDER BY f.created_at DESC LIMIT :limit""",
        owner=owner_id,
        status=job_status,
        limit=limit,
    )
    return [file_view(r, conversion_view(r) if r["job_id"] is not None else None) for r in rows]
