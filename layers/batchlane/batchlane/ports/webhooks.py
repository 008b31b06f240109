"""Webhooks: the signing secret and the deliveries (db/deliveries.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol


class SigningSecret(Protocol):
    """The webhook signing secret: read to sign, described and rotated by admins (never shown)."""

    def signing_keys(self, *, grace: timedelta, now: datetime | None = None) -> list[str]: ...
    def describe(self, *, grace: timedelta) -> dict[str, Any]: ...
    def rotate(self) -> None: ...


@dataclass(frozen=True)
class Delivery:
    """One webhook delivery (webhook_deliveries): an event of a job or folder job, or a test."""

    id: str
    owner_id: str
    job_id: str | None  # a conversion job's uuid; None for a folder job's event or a test
    folder_job_id: str | None
    event: str
    url: str
    headers: dict[str, str]
    payload: dict[str, Any]
    status: str  # pending, retrying, delivered, failed (domain.status's DELIVERY moves)
    attempts: int
    response_code: int | None
    latency_ms: int | None
    last_error: str | None
    created_at: datetime
    last_attempt_at: datetime | None
    delivered_at: datetime | None


class DeliveryRepository(Protocol):
    """Webhook deliveries (db/deliveries.py): every status move is one of domain.status's DELIVERY moves."""

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
        """A pending delivery; False when its id exists already (the same event dispatched twice)."""
        ...

    def get(self, delivery_id: str) -> Delivery | None: ...

    def record_attempt(self, delivery_id: str, *, delivered: bool, response_code: int | None, latency_ms: int, error: str | None) -> Delivery | None:
        """An attempt on an open delivery: delivered (deliver) or retrying (retry); None when it was not open."""
        ...

    def give_up(self, delivery_id: str, reason: str) -> Delivery | None:
        """An open delivery → failed (the first error kept); None when it was not open."""
        ...

    def for_owner(self, owner_id: str, *, job_id: str | None, limit: int = 100) -> list[Delivery]:
        """The owner's deliveries, newest first; ``job_id`` a conversion job's uuid or a folder job's ``fj-`` id."""
        ...
