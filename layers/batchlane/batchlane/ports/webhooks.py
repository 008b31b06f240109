"""Webhooks: the deployment's signing secret, each owner's (db/webhook_secrets.py, aws/kms.py) and the deliveries (db/deliveries.py)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Protocol

from batchlane.rows.webhooks import Delivery, StoredSecret


class SigningSecret(Protocol):
    """The deployment's webhook signing secret: signs beside each owner's during the migration (decision 0037)."""

    def signing_keys(self, *, grace: timedelta, now: datetime | None = None) -> list[str]: ...
    def describe(self, *, grace: timedelta) -> dict[str, Any]: ...
    def rotate(self) -> None: ...


class WebhookSecretRepository(Protocol):
    """webhook_secrets (db/webhook_secrets.py): an owner's sealed secrets, numbered 1, 2, … (a second writer of the same
    version raises UniqueViolation); and since when deliveries are signed per owner (webhook_signing)."""

    def add(self, owner_id: str, ciphertext: bytes) -> StoredSecret:
        """The owner's next version (one past their newest)."""
        ...

    def newest(self, owner_id: str, *, limit: int = 2) -> list[StoredSecret]: ...  # newest first
    def per_owner_age_s(self) -> float:
        """Seconds since deliveries began to be signed per owner (the migration's start, by the store's clock)."""
        ...


class SecretCipher(Protocol):
    """Seals and opens an owner's signing secret (aws/kms.py: KMS, the owner in the encryption context): a sealed
    secret opens only for the owner it was sealed for (another's raises SecretUnreadable)."""

    def seal(self, owner_id: str, plaintext: str) -> bytes: ...
    def open(self, owner_id: str, ciphertext: bytes) -> str: ...


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
