"""Webhook rules that need no stack: callback validation in AWS mode, the signature, event names, the grace period."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws

from batchlane.aws.signing_secret import SecretsManagerSigningSecret as SigningSecret
from batchlane.domain.errors import InputError
from batchlane.webhooks import subscription
from batchlane.webhooks.events import webhook_body, webhook_events
from batchlane.webhooks.signing import signature, signature_header


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/hook",  # plain http
        "https://127.0.0.1/hook",
        "https://169.254.169.254/latest/meta-data/",  # the instance metadata service
        "https://10.1.2.3/hook",
        "https://[::1]/hook",
        "https://localhost:8443/hook",
        "https://user:pw@example.com/hook",
        "file:///etc/passwd",
    ],
)
def test_in_aws_only_https_to_a_public_host_without_credentials_is_accepted(url):
    with pytest.raises(InputError) as refused:
        subscription.check_url(url, allow_private=False)
    assert refused.value.error_id == "CALLBACK_INVALID"


def test_a_public_https_url_is_accepted_and_private_receivers_only_when_allowed():
    assert subscription.check_url("https://hooks.example.com/batchlane?x=1", allow_private=False)
    assert subscription.check_url("http://127.0.0.1:9000/hook", allow_private=True)
    with pytest.raises(InputError, match="credentials"):
        subscription.check_url("http://user:pw@127.0.0.1/hook", allow_private=True)


def test_a_public_name_resolving_inward_is_refused_before_the_post():
    with pytest.raises(InputError, match="private address"):
        subscription.resolve("localhost", 443, allow_private=False)
    assert subscription.resolve("localhost", 443, allow_private=True) in ("127.0.0.1", "::1")


def test_options_are_normalised_with_the_default_event():
    options = subscription.validate_options({"callbackUrl": "https://example.com/h"}, allow_private=False)
    assert options["callbackEvents"] == ["job.completed", "job.paused"] and options["callbackHeaders"] == {}  # a pause waits for its owner
    assert subscription.validate_options({"modelId": "m"}, allow_private=False) == {"modelId": "m"}
    parsed = subscription.validate_options({"callbackUrl": "https://example.com/h", "callbackEvents": "file.error, job.completed"}, allow_private=False)
    assert parsed["callbackEvents"] == ["file.error", "job.completed"]


def test_the_signature_header_is_hmac_sha256_of_timestamp_url_and_body_one_v2_per_secret():
    import hashlib
    import hmac

    body, url = b'{"event":"job.completed"}', "https://a.example.com/hook"
    expected = hmac.new(b"s3cret", b"1700000000.https://a.example.com/hook." + body, hashlib.sha256).hexdigest()
    assert signature("s3cret", 1700000000, url, body) == expected
    assert signature("s3cret", 1700000000, "https://b.example.com/hook", body) != expected  # bound to its receiver
    new, old = signature("new", 1700000000, url, body), signature("old", 1700000000, url, body)
    assert signature_header(["new", "old"], 1700000000, url, body) == f"t=1700000000,v2={new},v2={old}"


@pytest.mark.parametrize(
    ("status", "failed", "names"),
    [
        ("waiting_batch", 0, ["job.waiting_batch"]),
        ("completed", 0, ["job.completed", "file.completed"]),
        ("completed", 2, ["job.completed", "file.completed", "file.error"]),
        ("failed", 0, ["job.completed", "file.error"]),
        ("cancelled", 0, ["job.completed"]),
        ("paused_budget", 0, ["job.paused"]),  # issue 38.5: its owner is told
        ("processing", 0, []),
    ],
)
def test_a_state_change_means_these_webhook_events(status, failed, names):
    assert webhook_events({"scope": "job", "status": status, "pages": {"failed": failed}}) == names


def test_a_folder_jobs_file_change_maps_to_file_events_only():
    assert webhook_events({"scope": "file", "status": "completed", "pages": {"failed": 0}}) == ["file.completed"]


def test_the_body_carries_the_delivery_id_and_never_the_owner():
    body = webhook_body("d-1", "job.completed", {"jobId": "j", "ownerId": "alice", "status": "completed", "changedAt": "2026-12-01T00:00:00+00:00"})
    assert body == {"deliveryId": "d-1", "event": "job.completed", "timestamp": "2026-12-01T00:00:00+00:00", "jobId": "j", "status": "completed"}


@mock_aws
def test_the_previous_secret_signs_only_during_the_grace_period():
    sm = boto3.client("secretsmanager", region_name="us-east-1")
    arn = sm.create_secret(Name="signing", SecretString="old")["ARN"]
    secret = SigningSecret(sm, arn)
    assert secret.signing_keys(grace=timedelta(hours=24)) == ["old"]
    secret.rotate()
    new = sm.get_secret_value(SecretId=arn)["SecretString"]
    assert new != "old"
    assert secret.signing_keys(grace=timedelta(hours=24)) == [new, "old"]
    later = datetime.now(UTC) + timedelta(hours=25)
    assert secret.signing_keys(grace=timedelta(hours=24), now=later) == [new]
    described = secret.describe(grace=timedelta(hours=24))
    assert described["secretId"] == arn and described["rotatedAt"] and new not in str(described)


@pytest.mark.parametrize(
    ("status", "names"),
    [
        ("enumerating", []),
        ("processing", []),
        ("completed", ["job.completed"]),
        ("completed_with_failures", ["job.completed"]),
        ("cancelled", ["job.completed"]),
        ("error", ["job.completed"]),
    ],
)
def test_a_folder_job_change_is_a_webhook_only_at_its_end_and_never_a_file_event(status: str, names: list[str]) -> None:
    detail = {"scope": "folder_job", "jobId": "fj-" + "0" * 24, "status": status, "pages": {"completed": 3, "failed": 1}}
    assert webhook_events(detail) == names
