"""Each owner's webhook signing secret (issue 40.4): one owner's deliveries are signed with that owner's secret only.

The API creates it at the owner's first ``GET /api/v1/webhook-config`` and rotates it on ``POST …/secret``: those two
answers are the only times its value is shown. It is stored sealed by KMS with the owner in the encryption context
(aws/kms.py); the delivery opens it to sign. After a rotation the previous version signs too for the grace period; for
the migration's days after per-owner signing began, the deployment's shared secret signs beside them. Decision
docs/decisions/0037-webhook-secret-per-owner.md; the header: webhooks/signing.py.
"""

from __future__ import annotations

import secrets as token_source
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from batchlane.observability import logger
from batchlane.ports import SecretCipher, UniqueViolation, UnitOfWork
from batchlane.webhooks.signing import SCHEME, SIGNATURE_HEADER

SECRET_BYTES = 32  # token_urlsafe(32): 256 random bits, 43 characters
DAY_S = 86_400


def rotate(uow: UnitOfWork, cipher: SecretCipher, owner_id: str, *, grace: timedelta, migration_days: float) -> dict[str, Any]:
    """A new version of the owner's secret (their first, or the next): its value in this answer, never again."""
    value = token_source.token_urlsafe(SECRET_BYTES)
    stored = uow.webhook_secrets.add(owner_id, cipher.seal(owner_id, value))
    logger.info("webhook secret created", version=stored.version)  # never the value
    return {**describe(uow, owner_id, grace=grace, migration_days=migration_days), "secret": value, "shownOnce": True}


def config(uow: UnitOfWork, cipher: SecretCipher, owner_id: str, *, grace: timedelta, migration_days: float) -> dict[str, Any]:
    """The owner's signing configuration; at the first read it creates the secret, and that answer shows it (once)."""
    if not uow.webhook_secrets.newest(owner_id, limit=1):
        try:
            return rotate(uow, cipher, owner_id, grace=grace, migration_days=migration_days)
        except UniqueViolation:  # a second first read at the same moment created it: this one does not show it
            pass
    return describe(uow, owner_id, grace=grace, migration_days=migration_days)


def describe(uow: UnitOfWork, owner_id: str, *, grace: timedelta, migration_days: float) -> dict[str, Any]:
    """Version and dates of the owner's secret, and until when the deployment's signature rides along: never a value."""
    newest = uow.webhook_secrets.newest(owner_id, limit=2)
    now = datetime.now(UTC)
    current = newest[0] if newest else None
    created = now - timedelta(seconds=current.age_s) if current else None
    grace_left = grace.total_seconds() - current.age_s if current and len(newest) > 1 else 0.0
    migration_left = migration_days * DAY_S - uow.webhook_secrets.per_owner_age_s()
    return {
        "version": current.version if current else None,
        "createdAt": created.isoformat() if created else None,
        "rotatedAt": created.isoformat() if created and current and current.version > 1 else None,
        "previousValidUntil": (now + timedelta(seconds=grace_left)).isoformat() if grace_left > 0 else None,
        "graceHours": grace.total_seconds() / 3600,
        "deploymentSignatureUntil": (now + timedelta(seconds=migration_left)).isoformat() if migration_left > 0 else None,
        "signatureHeader": f"{SIGNATURE_HEADER}: t=<unix seconds>,{SCHEME}=<hex HMAC-SHA256 of '<t>.<callbackUrl>.<raw body>' with your secret>"
        f"[,{SCHEME}=<your previous secret, during a rotation's grace>][,{SCHEME}=<the deployment's secret, until deploymentSignatureUntil>]",
    }


def signing_keys(
    uow: UnitOfWork,
    cipher: SecretCipher,
    owner_id: str,
    *,
    grace: timedelta,
    migration_days: float,
    deployment_keys: Callable[[], list[str]],
) -> list[str]:
    """The keys one of the owner's deliveries is signed with: the owner's newest secret, the one before it during the
    grace after a rotation, then (during the migration only) the deployment's. Empty: the owner has none yet and the
    migration is over; that delivery cannot be signed."""
    newest = uow.webhook_secrets.newest(owner_id, limit=2)
    keys = [cipher.open(owner_id, newest[0].ciphertext)] if newest else []
    if len(newest) > 1 and newest[0].age_s < grace.total_seconds():
        keys.append(cipher.open(owner_id, newest[1].ciphertext))
    if uow.webhook_secrets.per_owner_age_s() < migration_days * DAY_S:
        keys.extend(deployment_keys())
    return keys
