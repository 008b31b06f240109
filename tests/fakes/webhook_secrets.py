"""batchlane.ports.WebhookSecretRepository in memory: the contract of db/webhook_secrets.py's Pg adapter (tests/contract)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from batchlane.ports import UniqueViolation
from batchlane.rows import StoredSecret


@dataclass
class _SecretRows:
    rows: dict[tuple[str, int], StoredSecret] = field(default_factory=dict)
    per_owner_since: datetime | None = None  # the migration's INSERT: set at the first read, as the row exists from the start


class FakeWebhookSecrets:
    def __init__(self, state: Any) -> None:  # a batchlane_dev.fakes.FakeState
        self.state = state

    @property
    def _part(self) -> _SecretRows:
        part: _SecretRows = self.state.part("webhook_secrets", _SecretRows)
        if part.per_owner_since is None:
            part.per_owner_since = self.state.clock.now()
        return part

    def _aged(self, row: StoredSecret) -> StoredSecret:
        return replace(row, age_s=(self.state.clock.now() - row.created_at).total_seconds())

    def add(self, owner_id: str, ciphertext: bytes) -> StoredSecret:
        rows = self._part.rows
        version = max((v for o, v in rows if o == owner_id), default=0) + 1
        if (owner_id, version) in rows:
            raise UniqueViolation("webhook_secrets_pkey")
        row = StoredSecret(owner_id, version, bytes(ciphertext), self.state.clock.now(), 0.0)
        rows[(owner_id, version)] = row
        return row

    def newest(self, owner_id: str, *, limit: int = 2) -> list[StoredSecret]:
        mine = sorted((r for (o, _), r in self._part.rows.items() if o == owner_id), key=lambda r: -r.version)
        return [self._aged(r) for r in mine[:limit]]

    def per_owner_age_s(self) -> float:
        since = self._part.per_owner_since
        assert since is not None
        return (self.state.clock.now() - since).total_seconds()
