"""batchlane.ports.DeliveryRepository in memory: the contract of db/deliveries.py's Pg adapter (tests/contract)."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from batchlane.domain import status as st
from batchlane.domain.status import Transition
from batchlane.rows import Delivery


class FakeDeliveries:
    def __init__(self, state: Any) -> None:  # a fakes.FakeState
        self.state = state
        self.rows: dict[str, Delivery] = state.part("deliveries", dict)

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
        key = str(uuid.UUID(delivery_id))  # the column is a uuid: a malformed id fails as it does on PostgreSQL
        if key in self.rows:
            return False
        self.rows[key] = Delivery(
            id=key,
            owner_id=owner_id,
            job_id=str(uuid.UUID(job_id)) if job_id else None,
            folder_job_id=folder_job_id,
            event=event,
            url=url,
            headers=dict(headers),
            payload=dict(payload),
            status="pending",
            attempts=0,
            response_code=None,
            latency_ms=None,
            last_error=None,
            created_at=self.state.clock.now(),
            last_attempt_at=None,
            delivered_at=None,
        )
        return True

    def get(self, delivery_id: str) -> Delivery | None:
        return self.rows.get(str(uuid.UUID(delivery_id)))

    def _move(self, delivery_id: str, move: Transition, **fields: Any) -> Delivery | None:
        row = self.get(delivery_id)
        if row is None or not move.allows(row.status):
            return None
        moved = dataclasses.replace(row, status=move.target, **fields)
        self.rows[row.id] = moved
        return moved

    def record_attempt(self, delivery_id: str, *, delivered: bool, response_code: int | None, latency_ms: int, error: str | None) -> Delivery | None:
        row = self.get(delivery_id)
        now = self.state.clock.now()
        return self._move(
            delivery_id,
            st.deliver() if delivered else st.retry_delivery(),
            attempts=(row.attempts + 1) if row else 0,
            response_code=response_code,
            latency_ms=latency_ms,
            last_error=(error or "")[:500] or None,
            last_attempt_at=now,
            delivered_at=now if delivered else None,
        )

    def give_up(self, delivery_id: str, reason: str) -> Delivery | None:
        row = self.get(delivery_id)
        return self._move(delivery_id, st.give_up_delivery(), last_error=(row.last_error if row and row.last_error is not None else reason[:500]))

    def for_owner(self, owner_id: str, *, job_id: str | None, limit: int = 100) -> list[Delivery]:
        mine = [r for r in self.rows.values() if r.owner_id == owner_id and (job_id is None or job_id in (r.job_id, r.folder_job_id))]
        mine.sort(key=lambda r: r.id)
        mine.sort(key=lambda r: r.created_at, reverse=True)
        return mine[:limit]
