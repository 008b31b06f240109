"""The webhook_deliveries table (0007_webhook_deliveries.sql, 0016): every change guarded on the status,
each one of domain.status's DELIVERY moves; rows come back as :class:`batchlane.rows.Delivery`."""

from __future__ import annotations

from typing import Any

from batchlane.db.connection import Row
from batchlane.db.jobs import Runner
from batchlane.domain import status as st
from batchlane.rows import Delivery


def delivery(row: Row) -> Delivery:
    """A webhook_deliveries row as the typed row the repository returns."""
    return Delivery(
        id=str(row["id"]),
        owner_id=row["owner_id"],
        job_id=str(row["job_id"]) if row["job_id"] else None,
        folder_job_id=row.get("folder_job_id"),
        event=row["event"],
        url=row["url"],
        headers=dict(row["headers"] or {}),
        payload=dict(row["payload"] or {}),
        status=row["status"],
        attempts=int(row["attempts"]),
        response_code=row["response_code"],
        latency_ms=row["latency_ms"],
        last_error=row["last_error"],
        created_at=row["created_at"],
        last_attempt_at=row["last_attempt_at"],
        delivered_at=row["delivered_at"],
    )


def _maybe(row: Row | None) -> Delivery | None:
    return delivery(row) if row is not None else None


class PgDeliveries:
    """batchlane.ports.DeliveryRepository on PostgreSQL, bound to one Database or Transaction."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner

    def add(
        self,
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
        row = self.runner.one(
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

    def get(self, delivery_id: str) -> Delivery | None:
        return _maybe(self.runner.one("SELECT * FROM webhook_deliveries WHERE id = CAST(:id AS uuid)", id=delivery_id))

    def record_attempt(self, delivery_id: str, *, delivered: bool, response_code: int | None, latency_ms: int, error: str | None) -> Delivery | None:
        move = st.deliver() if delivered else st.retry_delivery()
        return _maybe(
            self.runner.one(
                """UPDATE webhook_deliveries
                   SET attempts = attempts + 1, status = :to,
                       response_code = :code, latency_ms = :latency, last_error = :error, last_attempt_at = now(),
                       delivered_at = CASE WHEN :ok THEN now() END
                   WHERE id = CAST(:id AS uuid) AND status = ANY(CAST(:from_ AS text[])) RETURNING *""",
                id=delivery_id,
                ok=delivered,
                code=response_code,
                latency=latency_ms,
                error=(error or "")[:500] or None,
                to=move.target,
                from_=list(move.from_states),
            )
        )

    def give_up(self, delivery_id: str, reason: str) -> Delivery | None:
        move = st.give_up_delivery()
        return _maybe(
            self.runner.one(
                """UPDATE webhook_deliveries SET status = :to, last_error = COALESCE(last_error, :reason)
                   WHERE id = CAST(:id AS uuid) AND status = ANY(CAST(:from_ AS text[])) RETURNING *""",
                id=delivery_id,
                reason=reason[:500],
                to=move.target,
                from_=list(move.from_states),
            )
        )

    def for_owner(self, owner_id: str, *, job_id: str | None, limit: int = 100) -> list[Delivery]:
        rows = self.runner.run(
            """SELECT * FROM webhook_deliveries
               WHERE owner_id = :owner AND (CAST(:job AS text) IS NULL OR job_id::text = :job OR folder_job_id = :job)
               ORDER BY created_at DESC, id LIMIT :limit""",
            owner=owner_id,
            job=job_id,
            limit=limit,
        )
        return [delivery(r) for r in rows]
