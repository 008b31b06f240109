"""Each owner's sealed signing secrets and the webhook deliveries, as stored (ports.webhooks)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class StoredSecret:
    """One version of an owner's signing secret (0038_webhook_secrets.sql), still sealed (KMS ciphertext)."""

    owner_id: str
    version: int
    ciphertext: bytes
    created_at: datetime
    age_s: float  # seconds since it was created, by the store's clock (not a column)

    @classmethod
    def of(cls, row: dict[str, Any]) -> StoredSecret:
        values = {f.name: row[f.name] for f in fields(cls)}
        return cls(**{**values, "ciphertext": bytes(row["ciphertext"]), "age_s": float(row["age_s"])})


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
