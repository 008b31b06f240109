"""The offline IAM evaluates owner-scoped sessions as AWS would (issue 21): the folder-access role, assumed through
moto's STS with the session tag ``owner``, reaches only ``users/${aws:PrincipalTag/owner}/`` of the folder bucket."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from batchlane.aws.folders import S3FolderBuckets
from batchlane.aws.owner_credentials import REFRESH_BEFORE_S, OwnerScopedClients
from batchlane.domain.errors import InputError
from batchlane_dev.local import iam
from batchlane_dev.local.iam import GrantEnforcer, Targets, acting_as

REGION = "us-east-1"
FOLDERS = "user-folders"
ACCESS_ROLE = "arn:aws:iam::123456789012:role/batchlane-folder-access"
TARGETS = Targets(
    account_id="123456789012",
    region=REGION,
    bucket="offline-bucket",
    conversion_state_machine_arn="",
    batch_lane_state_machine_arn="",
    bedrock_service_role_arn="",
    model_ids=(),
    folder_sources=(f"{FOLDERS}/users/{{owner}}/",),
    folder_access_role_arn=ACCESS_ROLE,
)


@pytest.fixture
def enforcer(monkeypatch: pytest.MonkeyPatch) -> Iterator[GrantEnforcer]:
    for key, value in {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    enforcer = GrantEnforcer(TARGETS)
    iam.install(enforcer)
    with acting_as(iam.OPERATOR), mock_aws():  # the test's own setup calls: the operator's
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=FOLDERS)
        for owner in ("alice", "bob"):
            s3.put_object(Bucket=FOLDERS, Key=f"users/{owner}/a.md", Body=owner.encode())
        yield enforcer
    iam.install(None)


def _as(owner: str) -> S3FolderBuckets:
    return S3FolderBuckets(OwnerScopedClients(boto3.client("sts", region_name=REGION), ACCESS_ROLE).s3(owner))


def test_an_owners_session_reads_lists_and_writes_its_own_home_only(enforcer: GrantEnforcer) -> None:
    with acting_as("folder_advance"):
        alice = _as("alice")
        assert b"".join(alice.iter_lines(FOLDERS, "users/alice/a.md")) == b"alice"
        alice.put_bytes(FOLDERS, "users/alice/b.md", b"new", "text/markdown", owner="alice")
        assert [k for k, _ in alice.list_page(FOLDERS, "users/alice/", token=None, recursive=True, max_keys=10).objects] == [
            "users/alice/a.md",
            "users/alice/b.md",
        ]
        with pytest.raises(ClientError) as read:
            list(alice.iter_lines(FOLDERS, "users/bob/a.md"))
        with pytest.raises(ClientError) as write:
            alice.put_bytes(FOLDERS, "users/bob/a.md", b"forged", "text/markdown", owner="alice")
        with pytest.raises(InputError) as listing:
            alice.list_page(FOLDERS, "users/", token=None, recursive=True, max_keys=10)  # the parent lists everyone's
        with pytest.raises(ClientError) as prefix_trick:
            list(alice.iter_lines(FOLDERS, "users/alice-not/a.md"))  # a sibling whose name starts with hers
    assert read.value.response["Error"]["Code"] == write.value.response["Error"]["Code"] == prefix_trick.value.response["Error"]["Code"] == "AccessDenied"
    assert listing.value.error_id == "FOLDER_NOT_READABLE"
    assert boto3.client("s3", region_name=REGION).get_object(Bucket=FOLDERS, Key="users/bob/a.md")["Body"].read() == b"bob"
    assert ("folder-access:alice", "s3:GetObject", f"arn:aws:s3:::{FOLDERS}/users/bob/a.md") in enforcer.denials


def test_a_function_without_the_folder_access_grant_cannot_assume_the_role(enforcer: GrantEnforcer) -> None:
    with acting_as("chunk_processor"), pytest.raises(ClientError) as refused:
        _as("alice")
    assert refused.value.response["Error"]["Code"] == "AccessDeniedException"
    assert ("chunk_processor", "sts:AssumeRole", ACCESS_ROLE) in enforcer.denials


def test_a_session_without_the_owner_tag_reaches_no_home(enforcer: GrantEnforcer) -> None:
    """IAM: a policy variable whose key is missing matches nothing."""
    with acting_as("folder_advance"):
        creds = boto3.client("sts", region_name=REGION).assume_role(RoleArn=ACCESS_ROLE, RoleSessionName="untagged")["Credentials"]
        s3 = boto3.client(
            "s3",
            region_name=REGION,
            aws_access_key_id=creds["AccessKeyId"],
            aws_secret_access_key=creds["SecretAccessKey"],
            aws_session_token=creds["SessionToken"],
        )
        with pytest.raises(ClientError):
            s3.get_object(Bucket=FOLDERS, Key="users/alice/a.md")


class _FakeSts:
    def __init__(self, lifetime_s: int) -> None:
        self.calls: list[str] = []
        self.lifetime_s = lifetime_s
        self.now = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)

    def assume_role(self, **params: Any) -> dict[str, Any]:
        self.calls.append(params["Tags"][0]["Value"])
        expires = self.now + datetime.timedelta(seconds=self.lifetime_s)
        return {"Credentials": {"AccessKeyId": f"ASIA{len(self.calls)}", "SecretAccessKey": "s", "SessionToken": "t", "Expiration": expires}}


def test_credentials_are_assumed_once_per_owner_and_renewed_before_they_expire(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    sts = _FakeSts(lifetime_s=3600)
    clients = OwnerScopedClients(sts, ACCESS_ROLE, clock=lambda: sts.now)
    first = clients.s3("alice")
    assert all(clients.s3("alice") is first for _ in range(100)) and sts.calls == ["alice"]
    clients.s3("bob")
    assert sts.calls == ["alice", "bob"]
    sts.now += datetime.timedelta(seconds=3600 - REFRESH_BEFORE_S + 1)  # inside the renewal margin
    assert clients.s3("alice") is not first and sts.calls == ["alice", "bob", "alice"]
