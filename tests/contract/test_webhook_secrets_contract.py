"""WebhookSecretRepository's contract, on the fake and on PostgreSQL: an owner's sealed secrets numbered 1, 2, … read
newest first, never another owner's, with their age; and since when deliveries are signed per owner."""

from __future__ import annotations

import uuid
from typing import Any


def test_an_owners_versions_count_up_and_come_back_newest_first_sealed_as_stored(uow: Any, tick: Any) -> None:
    alice, bob = f"alice-{uuid.uuid4().hex[:6]}", f"bob-{uuid.uuid4().hex[:6]}"
    assert uow.webhook_secrets.newest(alice) == []
    first = uow.webhook_secrets.add(alice, b"\x00sealed-1")
    tick()
    uow.webhook_secrets.add(bob, b"sealed-bob")
    second = uow.webhook_secrets.add(alice, b"sealed-2\xff")
    assert (first.version, second.version) == (1, 2)
    newest = uow.webhook_secrets.newest(alice)
    assert [(s.owner_id, s.version, s.ciphertext) for s in newest] == [(alice, 2, b"sealed-2\xff"), (alice, 1, b"\x00sealed-1")]
    assert newest[1].age_s >= newest[0].age_s >= 0
    assert [s.version for s in uow.webhook_secrets.newest(alice, limit=1)] == [2]
    assert [s.ciphertext for s in uow.webhook_secrets.newest(bob)] == [b"sealed-bob"]  # each owner numbers their own


def test_per_owner_signing_has_a_start_that_only_grows_older(uow: Any, tick: Any) -> None:
    before = uow.webhook_secrets.per_owner_age_s()
    tick()
    assert uow.webhook_secrets.per_owner_age_s() >= before >= 0
