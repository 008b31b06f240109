"""A webhook signing secret per owner (issue 40.4), on the fake unit of work and moto's KMS (which binds the encryption
context to the ciphertext as AWS documents): each owner's own, shown once at creation and at rotation, stored sealed,
one owner's deliveries signed with that owner's secret only, a rotation touching no other owner, the old secret kept
for the grace period, and the deployment's signature beside the owner's for the migration's days only.

Review (issue 40): Bob's webhook-config/test to Alice's receiver arrived correctly signed, since every user held the
deployment's one secret."""

from __future__ import annotations

import hashlib
import hmac
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws
from usecase_fakes import PlainCipher

from batchlane.aws.kms import KmsSecretCipher, SecretUnreadable
from batchlane.domain.errors import BatchlaneError
from batchlane.ports import SecretCipher, UniqueViolation
from batchlane.webhooks import owner_secrets
from batchlane.webhooks.deliver import Answer, deliver, owner_signing_keys
from batchlane.webhooks.dispatch import TEST_EVENT
from fakes import FakeUnitOfWork

GRACE = timedelta(hours=24)
DEPLOYMENT_SECRET = "the-deployments-shared-secret"
URL = "https://alice.example.com/hooks"


@pytest.fixture
def cipher() -> Iterator[KmsSecretCipher]:
    with mock_aws():
        kms = boto3.client("kms", region_name="us-east-1")
        yield KmsSecretCipher(kms, kms.create_key(Description="webhook signing")["KeyMetadata"]["Arn"])


def keys(uow: FakeUnitOfWork, cipher: SecretCipher, owner: str, *, migration_days: float = 0) -> list[str]:
    return owner_secrets.signing_keys(uow, cipher, owner, grace=GRACE, migration_days=migration_days, deployment_keys=lambda: [DEPLOYMENT_SECRET])


def verifies(secret: str, headers: dict[str, str], url: str, body: bytes) -> bool:
    """What a receiver does (README's snippet): some v2 of the header is the HMAC of ``t.url.body`` with its secret."""
    parts = [p.split("=", 1) for p in headers["Batchlane-Signature"].split(",")]
    t = next(v for k, v in parts if k == "t")
    expected = hmac.new(secret.encode(), f"{t}.{url}.".encode() + body, hashlib.sha256).hexdigest()
    return any(k == "v2" and hmac.compare_digest(v, expected) for k, v in parts)


def test_each_owner_gets_a_secret_of_their_own_shown_at_creation_only(cipher: KmsSecretCipher) -> None:
    uow = FakeUnitOfWork()
    alice = owner_secrets.config(uow, cipher, "alice", grace=GRACE, migration_days=30)
    bob = owner_secrets.config(uow, cipher, "bob", grace=GRACE, migration_days=30)
    assert alice["shownOnce"] is True and len(alice["secret"]) >= 43 and alice["version"] == 1
    assert bob["secret"] != alice["secret"]
    again = owner_secrets.config(uow, cipher, "alice", grace=GRACE, migration_days=30)
    assert "secret" not in again and again["version"] == 1 and again["deploymentSignatureUntil"] is not None


def test_the_secret_is_stored_sealed_and_opens_for_its_owner_only(cipher: KmsSecretCipher) -> None:
    uow = FakeUnitOfWork()
    value = owner_secrets.config(uow, cipher, "alice", grace=GRACE, migration_days=0)["secret"]
    stored = uow.webhook_secrets.newest("alice")[0]
    assert value.encode() not in stored.ciphertext
    assert cipher.open("alice", stored.ciphertext) == value
    with pytest.raises(SecretUnreadable):  # a row copied to another owner does not open (the encryption context)
        cipher.open("bob", stored.ciphertext)


def test_a_delivery_is_signed_with_its_owners_secret_only(cipher: KmsSecretCipher, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bob's test delivery to Alice's receiver: verifies with Bob's secret, never with Alice's (nor the deployment's once
    the migration is over). Fails on the deployment's one secret, with which it verified for every user."""
    uow = FakeUnitOfWork()
    secret_of = {owner: owner_secrets.config(uow, cipher, owner, grace=GRACE, migration_days=0)["secret"] for owner in ("alice", "bob")}
    delivery_id = str(uuid.uuid4())
    uow.deliveries.add(delivery_id=delivery_id, owner_id="bob", job_id=None, event=TEST_EVENT, url=URL, headers={}, payload={"event": TEST_EVENT})
    sent: list[tuple[bytes, dict[str, str]]] = []

    def post(url: str, body: bytes, headers: dict[str, str], timeout_s: float, address: str) -> Answer:
        sent.append((body, headers))
        return Answer(204)

    monkeypatch.setattr("batchlane.webhooks.deliver.subscription.resolve", lambda *a, **k: "93.184.215.14")
    deliver(uow.deliveries, delivery_id, signing_keys=lambda owner: keys(uow, cipher, owner), post=post, allow_private=False, timeout_s=1)
    body, headers = sent[0]
    assert verifies(secret_of["bob"], headers, URL, body)
    assert not verifies(secret_of["alice"], headers, URL, body) and not verifies(DEPLOYMENT_SECRET, headers, URL, body)


def test_rotating_one_owners_secret_keeps_their_old_one_for_the_grace_and_touches_no_other(cipher: KmsSecretCipher) -> None:
    uow = FakeUnitOfWork()
    first = owner_secrets.config(uow, cipher, "alice", grace=GRACE, migration_days=0)["secret"]
    bob = owner_secrets.config(uow, cipher, "bob", grace=GRACE, migration_days=0)["secret"]
    uow.state.clock.at += timedelta(hours=1)
    rotated = owner_secrets.rotate(uow, cipher, "alice", grace=GRACE, migration_days=0)
    assert rotated["shownOnce"] is True and rotated["secret"] not in (first, bob) and rotated["version"] == 2
    assert rotated["rotatedAt"] is not None and rotated["previousValidUntil"] is not None
    assert keys(uow, cipher, "alice") == [rotated["secret"], first]  # both sign during the grace
    assert keys(uow, cipher, "bob") == [bob]
    uow.state.clock.at += GRACE
    assert keys(uow, cipher, "alice") == [rotated["secret"]]
    assert owner_secrets.describe(uow, "alice", grace=GRACE, migration_days=0)["previousValidUntil"] is None


def test_for_the_migrations_days_the_deployments_signature_rides_beside_the_owners(cipher: KmsSecretCipher) -> None:
    uow = FakeUnitOfWork()
    alice = owner_secrets.config(uow, cipher, "alice", grace=GRACE, migration_days=30)["secret"]
    assert keys(uow, cipher, "alice", migration_days=30) == [alice, DEPLOYMENT_SECRET]
    assert keys(uow, cipher, "carol", migration_days=30) == [DEPLOYMENT_SECRET]  # no secret of their own yet: as before
    uow.state.clock.at += timedelta(days=30, seconds=1)
    assert keys(uow, cipher, "alice", migration_days=30) == [alice]
    assert keys(uow, cipher, "carol", migration_days=30) == []
    assert owner_secrets.describe(uow, "alice", grace=GRACE, migration_days=30)["deploymentSignatureUntil"] is None


def test_after_the_migration_an_owner_without_a_secret_gets_no_unsigned_post(cipher: KmsSecretCipher, monkeypatch: pytest.MonkeyPatch) -> None:
    uow = FakeUnitOfWork()
    delivery_id = str(uuid.uuid4())
    uow.deliveries.add(delivery_id=delivery_id, owner_id="carol", job_id=None, event=TEST_EVENT, url=URL, headers={}, payload={})
    monkeypatch.setattr("batchlane.webhooks.deliver.subscription.resolve", lambda *a, **k: "93.184.215.14")
    posts: list[Any] = []
    answer = deliver(
        uow.deliveries,
        delivery_id,
        signing_keys=lambda owner: keys(uow, cipher, owner),
        post=lambda *a: posts.append(a),  # type: ignore[arg-type, func-returns-value]
        allow_private=False,
        timeout_s=1,
    )
    row = uow.deliveries.get(delivery_id)
    assert answer["status"] == "failed" and posts == [] and row is not None and "WEBHOOK_SECRET_MISSING" in (row.last_error or "")


def test_the_key_is_required_to_seal() -> None:
    with pytest.raises(BatchlaneError) as missing:
        KmsSecretCipher(None, None).seal("alice", "x")
    assert missing.value.error_id == "WEBHOOK_KEY_MISSING"


# -- what webhook-config answers, date by date (issue 44.6: describe's dates had no test) ---------------------------
NOW = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)  # describe's wall clock, held still; the store's clock is the fake's


@pytest.fixture
def wall_clock(monkeypatch: pytest.MonkeyPatch) -> datetime:
    class Held(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return NOW.astimezone(tz) if tz is not None else NOW.replace(tzinfo=None)  # as datetime.now: naive without a zone

    monkeypatch.setattr(owner_secrets, "datetime", Held)
    return NOW


def test_the_config_dates_a_first_secret_from_its_age_and_names_no_rotation(wall_clock: datetime) -> None:
    uow, cipher = FakeUnitOfWork(), PlainCipher()
    first = owner_secrets.config(uow, cipher, "alice", grace=GRACE, migration_days=30)
    assert len(first["secret"]) == 43  # token_urlsafe(32): 256 random bits
    uow.state.clock.at += timedelta(hours=5)
    seen = owner_secrets.describe(uow, "alice", grace=GRACE, migration_days=30)
    assert seen["version"] == 1 and seen["createdAt"] == (NOW - timedelta(hours=5)).isoformat()
    assert seen["rotatedAt"] is None and seen["previousValidUntil"] is None  # one version: nothing rotated, no grace
    assert seen["graceHours"] == 24.0
    assert seen["deploymentSignatureUntil"] == (NOW + timedelta(days=30) - timedelta(hours=5)).isoformat()
    assert "secret" not in seen and "shownOnce" not in seen


def test_after_a_rotation_the_config_dates_the_rotation_and_the_end_of_the_old_secrets_grace(wall_clock: datetime) -> None:
    uow, cipher = FakeUnitOfWork(), PlainCipher()
    owner_secrets.config(uow, cipher, "alice", grace=GRACE, migration_days=0)
    uow.state.clock.at += timedelta(hours=2)
    owner_secrets.rotate(uow, cipher, "alice", grace=GRACE, migration_days=0)
    uow.state.clock.at += timedelta(hours=3)
    seen = owner_secrets.describe(uow, "alice", grace=GRACE, migration_days=0)
    assert seen["version"] == 2
    assert seen["createdAt"] == seen["rotatedAt"] == (NOW - timedelta(hours=3)).isoformat()
    assert seen["previousValidUntil"] == (NOW + timedelta(hours=21)).isoformat()  # 24 h from the rotation, 3 h ago
    assert seen["deploymentSignatureUntil"] is None  # no migration days


def test_the_old_secret_and_the_deployments_stop_signing_at_the_exact_end_of_their_time(wall_clock: datetime) -> None:
    """At exactly the grace's end the old secret no longer signs and no date is promised; the same for the migration."""
    uow, cipher = FakeUnitOfWork(), PlainCipher()
    first = owner_secrets.config(uow, cipher, "alice", grace=GRACE, migration_days=2)["secret"]
    uow.state.clock.at += timedelta(hours=1)
    second = owner_secrets.rotate(uow, cipher, "alice", grace=GRACE, migration_days=2)["secret"]
    uow.state.clock.at += GRACE - timedelta(seconds=1)
    assert keys(uow, cipher, "alice", migration_days=2) == [second, first, DEPLOYMENT_SECRET]
    uow.state.clock.at += timedelta(seconds=1)
    assert keys(uow, cipher, "alice", migration_days=2) == [second, DEPLOYMENT_SECRET]
    assert owner_secrets.describe(uow, "alice", grace=GRACE, migration_days=2)["previousValidUntil"] is None
    uow.state.clock.at += timedelta(days=2) - GRACE - timedelta(hours=1)  # exactly 2 days since per-owner signing began
    assert keys(uow, cipher, "alice", migration_days=2) == [second]
    assert owner_secrets.describe(uow, "alice", grace=GRACE, migration_days=2)["deploymentSignatureUntil"] is None


def test_the_config_tells_a_receiver_how_to_verify() -> None:
    header = owner_secrets.config(FakeUnitOfWork(), PlainCipher(), "alice", grace=GRACE, migration_days=1)["signatureHeader"]
    assert header == (
        "Batchlane-Signature: t=<unix seconds>,v2=<hex HMAC-SHA256 of '<t>.<callbackUrl>.<raw body>' with your secret>"
        "[,v2=<your previous secret, during a rotation's grace>][,v2=<the deployment's secret, until deploymentSignatureUntil>]"
    )


def test_two_first_reads_at_once_create_one_secret_and_the_second_shows_none() -> None:
    """The second read saw no secret, then its insert lost the race to the first read's (the primary key): it answers
    the config without a value, not an error."""
    uow, cipher = FakeUnitOfWork(), PlainCipher()
    first = owner_secrets.config(uow, cipher, "alice", grace=GRACE, migration_days=0)
    store = uow.webhook_secrets

    class SawNoneYet:
        looks = 0

        def newest(self, owner_id: str, *, limit: int = 2) -> list[Any]:
            self.looks += 1
            return [] if self.looks == 1 else store.newest(owner_id, limit=limit)

        def add(self, owner_id: str, ciphertext: bytes) -> Any:
            raise UniqueViolation("webhook_secrets_pkey")

        def per_owner_age_s(self) -> float:
            return store.per_owner_age_s()

    racing = SawNoneYet()
    late = owner_secrets.config(SimpleNamespace(webhook_secrets=racing), cipher, "alice", grace=GRACE, migration_days=0)  # type: ignore[arg-type]
    assert "secret" not in late and "shownOnce" not in late and late["version"] == first["version"] == 1


def test_a_delivery_reads_the_grace_and_migration_days_from_the_deployments_settings(svc_on_fakes: Any) -> None:
    """deliver.owner_signing_keys: the owner's keys by BATCHLANE_WEBHOOK_GRACE_HOURS and _MIGRATION_DAYS, and the
    deployment's secret asked for with the same grace."""
    asked: list[timedelta] = []

    class DeploymentSecret:
        def signing_keys(self, *, grace: timedelta, now: datetime | None = None) -> list[str]:
            asked.append(grace)
            return [DEPLOYMENT_SECRET]

    svc = svc_on_fakes
    svc.cipher, svc.secret = PlainCipher(), DeploymentSecret()
    svc.settings = svc.settings.model_copy(update={"batchlane_webhook_grace_hours": 2.0, "batchlane_webhook_migration_days": 1.0})
    uow = svc.uow()
    first = owner_secrets.config(uow, svc.cipher, "alice", grace=timedelta(hours=2), migration_days=1)["secret"]
    second = owner_secrets.rotate(uow, svc.cipher, "alice", grace=timedelta(hours=2), migration_days=1)["secret"]
    assert owner_signing_keys(svc, "alice") == [second, first, DEPLOYMENT_SECRET] and asked == [timedelta(hours=2)]
    uow.state.clock.at += timedelta(hours=2)
    assert owner_signing_keys(svc, "alice") == [second, DEPLOYMENT_SECRET]  # 2 hours, not the default 24
    uow.state.clock.at += timedelta(hours=22)
    assert owner_signing_keys(svc, "alice") == [second]  # a day, not the default 30


def test_the_config_of_an_owner_without_a_secret_dates_nothing(wall_clock: datetime) -> None:
    seen = owner_secrets.describe(FakeUnitOfWork(), "nobody", grace=GRACE, migration_days=30)
    assert (seen["version"], seen["createdAt"], seen["rotatedAt"], seen["previousValidUntil"]) == (None, None, None, None)
    assert seen["deploymentSignatureUntil"] == (NOW + timedelta(days=30)).isoformat()


def test_half_a_second_left_of_a_grace_or_a_migration_is_still_promised(wall_clock: datetime) -> None:
    uow, cipher = FakeUnitOfWork(), PlainCipher()
    owner_secrets.config(uow, cipher, "alice", grace=GRACE, migration_days=1)
    owner_secrets.rotate(uow, cipher, "alice", grace=GRACE, migration_days=1)
    uow.state.clock.at += GRACE - timedelta(seconds=0.5)
    seen = owner_secrets.describe(uow, "alice", grace=GRACE, migration_days=1)
    assert seen["previousValidUntil"] == (NOW + timedelta(seconds=0.5)).isoformat()
    assert seen["deploymentSignatureUntil"] == (NOW + timedelta(seconds=0.5)).isoformat()  # a day since per-owner signing began
