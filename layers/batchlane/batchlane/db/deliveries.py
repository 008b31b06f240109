"""The webhook_deliveries table (0007_webhook_deliveries.sql): every change guarded on the status."""

from __future__ import annotations

from typing import Any

from batchlane.db.connection import Row
from batchlane.db.jobs import Runner
from batchlane.domain import status as st

# deliver, retry and give_up all leave the same open states
OPEN = st.deliver().from_states


def insert(
    db: Runner,
    *,
    delivery_id: str,
    owner_id: str,
    job_id: str | None,
    event: str,
    url: str,
    headers: dict[str, str],
    payload: dict[str, Any],
    folder_job_id: str | None = None,
) -> bool:
    """False when the row exists already (an event delivered twice to the dispatcher).
    ``folder_job_id`` (an ``fj-`` id) instead of ``job_id`` for a folder job's own events."""
    row = db.one(
        """INSERT INTO webhook_deliveries (id, owner_id, job_id, folder_job_id, event, url, headers, payload)
           VALUES (CAST(:id AS uuid), :owner, CAST(:job AS uuid), :folder, :event, :url, CAST(:headers AS jsonb), CAST(:payload AS jsonb))
           ON CONFLICT (id) DO NOTHING RETURNING id""",
        id=delivery_id,
        owner=owner_id,
        job=job_id,
        folder=folder_job_id,
        event=event,
        url=url,
        headers=headers,
        payload=payload,
    )
    return row is not None


def get(db: Runner, delivery_id: str) -> Row | None:
    return db.one("SELECT * FROM webhook_deliveries WHERE id = CAST(:id AS uuid)", id=delivery_id)


def record_attempt(db: Runner, delivery_id: str, *, delivered: bool, response_code: int | None, latency_ms: int, error: str | None) -> Row | None:
    return db.one(
        """UPDATE webhook_deliveries
           SET attempts = attempts + 1, status = CASE WHEN :ok THEN :delivered ELSE :retrying END,
               response_code = :code, latency_ms = :latency, last_error = :error, last_attempt_at = now(),
               delivered_at = CASE WHEN :ok THEN now() END
           WHERE id = CAST(:id AS uuid) AND status = ANY(CAST(:open AS text[])) RETURNING *""",
        id=delivery_id,
        ok=delivered,
        code=response_code,
        latency=latency_ms,
        error=(error or "")[:500] or None,
        delivered=st.deliver().target,
        retrying=st.retry_delivery().target,
        open=list(OPEN),
    )


def give_up(db: Runner, delivery_id: str, reason: str) -> Row | None:
    return db.one(
        """UPDATE webhook_deliveries SET status = :failed, last_error = COALESCE(last_error, :reason)
           WHERE id = CAST(:id AS uuid) AND status = ANY(CAST(:open AS text[])) RETURNING *""",
        id=delivery_id,
        reason=reason[:500],
        failed=st.give_up_delivery().target,
        open=st.give_up_delivery().from_states,
    )


def list_for_owner(db: Runner, owner_id: str, *, job_id: str | None, limit: int = 100) -> list[Row]:
    """The owner's deliveries, newest first; ``job_id`` a conversion job's uuid or a folder job's ``fj-`` id."""
    return db.run(
        """SELECT id, job_id, folder_job_id, event, url, status, attempts, response_code, latency_ms, last_error, created_at, last_attempt_at, delivered_at
           FROM webhook_deliveries
           WHERE owner_id = :owner AND (CAST(:job AS text) IS NULL OR job_id::text = :job OR folder_job_id = :job)
           ORDER BY created_at DESC, id LIMIT :limit""",
        owner=owner_id,
        job=job_id,
        limit=limit,
    )


def view(row: Row) -> dict[str, Any]:
    """How a delivery looks through the API (never its headers or body)."""

    def iso(value: Any) -> str | None:
        return value.isoformat() if value is not None else None

    return {
        "deliveryId": str(row["id"]),
        "jobId": str(row["job_id"]) if row["job_id"] else row.get("folder_job_id"),
        "event": row["event"],
        "url": row["url"],
        "status": row["status"],
        "attempts": row["attempts"],
        "responseCode": row["response_code"],
        "latencyMs": row["latency_ms"],
        "lastError": row["last_error"],
        "createdAt": iso(row["created_at"]),
        "lastAttemptAt": iso(row["last_attempt_at"]),
        "deliveredAt": iso(row["delivered_at"]),
    }


class PgDeliveries:
    """batchlane.ports.DeliveryRepository on PostgreSQL: the functions above, bound to one Database or Transaction."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
