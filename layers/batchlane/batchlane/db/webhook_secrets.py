"""webhook_secrets: each owner's signing secret, sealed by KMS; webhook_signing: since when (0038_webhook_secrets.sql)."""

from __future__ import annotations

from batchlane.db.jobs import Runner
from batchlane.rows import StoredSecret

_AGE = "extract(epoch FROM now() - created_at)::double precision AS age_s"


class PgWebhookSecrets:
    """batchlane.ports.WebhookSecretRepository on PostgreSQL, bound to one Database or Transaction."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner

    def add(self, owner_id: str, ciphertext: bytes) -> StoredSecret:
        row = self.runner.one(
            "INSERT INTO webhook_secrets (owner_id, version, ciphertext)"
            " VALUES (:owner, (SELECT coalesce(max(version), 0) + 1 FROM webhook_secrets WHERE owner_id = :owner), :ciphertext)"
            f" RETURNING *, {_AGE}",
            owner=owner_id,
            ciphertext=ciphertext,
        )
        assert row is not None
        return StoredSecret.of(row)

    def newest(self, owner_id: str, *, limit: int = 2) -> list[StoredSecret]:
        rows = self.runner.run(
            f"SELECT *, {_AGE} FROM webhook_secrets WHERE owner_id = :owner ORDER BY version DESC LIMIT :limit", owner=owner_id, limit=limit
        )
        return [StoredSecret.of(r) for r in rows]

    def per_owner_age_s(self) -> float:
        """From the row 0038 inserted; a store emptied since (the offline stack's start) records its start again now."""
        row = self.runner.one(
            """WITH made AS (INSERT INTO webhook_signing DEFAULT VALUES ON CONFLICT (id) DO NOTHING RETURNING per_owner_since)
               SELECT extract(epoch FROM now() - coalesce((SELECT per_owner_since FROM made), (SELECT per_owner_since FROM webhook_signing)))::double precision
                      AS age_s"""
        )
        assert row is not None
        return float(row["age_s"])
