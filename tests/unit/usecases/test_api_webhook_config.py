"""The API's webhook-config use cases (api/webhook_usecases.py) on the fakes: what ``GET /api/v1/webhook-config`` and
``POST /api/v1/webhook-config/secret`` answer the caller, with the deployment's grace and migration settings. Until
stop 47 no fast test reached them (24 mutants: webhooks/owner_secrets.py was tested alone, with its own arguments)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from usecase_fakes import PlainCipher

from batchlane.api import webhook_usecases
from batchlane.webhooks import owner_secrets
from fakes.services import FakeServices

NOW = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


@pytest.fixture
def svc(svc_on_fakes: FakeServices, monkeypatch: pytest.MonkeyPatch) -> FakeServices:
    """A deployment whose grace (2 h) and migration (1 day) are not the defaults (24 h, 30 days); the answer's wall
    clock held at NOW."""

    class Held(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return NOW.astimezone(tz) if tz is not None else NOW.replace(tzinfo=None)

    monkeypatch.setattr(owner_secrets, "datetime", Held)
    svc_on_fakes.cipher = PlainCipher()
    svc_on_fakes.settings = svc_on_fakes.settings.model_copy(update={"batchlane_webhook_grace_hours": 2.0, "batchlane_webhook_migration_days": 1.0})
    return svc_on_fakes


def _stored(svc: FakeServices, owner: str) -> list[str]:
    """The owner's secrets as stored (newest first), opened with that owner's encryption context."""
    return [PlainCipher().open(owner, row.ciphertext) for row in svc.uow().webhook_secrets.newest(owner, limit=10)]


def test_the_callers_first_config_read_shows_their_own_new_secret_once_with_the_deployments_migration(svc: FakeServices) -> None:
    first = webhook_usecases.webhook_config(svc, "alice")
    assert (first["version"], first["shownOnce"], first["createdAt"], first["rotatedAt"]) == (1, True, NOW.isoformat(), None)
    assert _stored(svc, "alice") == [first["secret"]]  # sealed for the caller, not for anyone else
    assert first["graceHours"] == 2.0  # BATCHLANE_WEBHOOK_GRACE_HOURS, not the default 24
    assert first["deploymentSignatureUntil"] == (NOW + timedelta(days=1)).isoformat()  # BATCHLANE_WEBHOOK_MIGRATION_DAYS
    again = webhook_usecases.webhook_config(svc, "alice")
    assert "secret" not in again and "shownOnce" not in again and again["version"] == 1
    bob = webhook_usecases.webhook_config(svc, "bob")
    assert bob["version"] == 1 and bob["secret"] != first["secret"] and _stored(svc, "bob") == [bob["secret"]]


def test_rotating_answers_the_callers_next_secret_and_keeps_the_old_one_for_the_deployments_grace(svc: FakeServices) -> None:
    first = webhook_usecases.webhook_config(svc, "alice")["secret"]
    bob = webhook_usecases.webhook_config(svc, "bob")["secret"]
    rotated = webhook_usecases.rotate_secret(svc, "alice")
    assert (rotated["version"], rotated["shownOnce"], rotated["rotatedAt"]) == (2, True, NOW.isoformat())
    assert _stored(svc, "alice") == [rotated["secret"], first] and rotated["secret"] != first
    assert rotated["previousValidUntil"] == (NOW + timedelta(hours=2)).isoformat() and rotated["graceHours"] == 2.0
    assert rotated["deploymentSignatureUntil"] == (NOW + timedelta(days=1)).isoformat()
    assert _stored(svc, "bob") == [bob]  # one owner's rotation touches no other's
    assert webhook_usecases.webhook_config(svc, "alice")["previousValidUntil"] == (NOW + timedelta(hours=2)).isoformat()
