"""The offline stack's speed-ups of moto (local/patches.py 3–6): the same answers as moto's own code, at a cost
that does not grow with what the emulator holds. moto in-process (mock_aws), botocore's request path."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.s3.models import FakeKey, S3Backend
from moto.s3.utils import _VersionedKeyStore

from batchlane_dev.local import patches

CREDS = {"region_name": "us-east-1", "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
BUCKET = "speedups"
KEYS = [f"jobs/{j:03d}/{kind}/{i:02d}.{ext}" for j in range(60) for kind, ext in (("images", "png"), ("pages", "md")) for i in range(3)] + ["top.txt", "jobs/x"]


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        client = boto3.client("s3", **CREDS)
        client.create_bucket(Bucket=BUCKET)
        for key in KEYS:
            client.put_object(Bucket=BUCKET, Key=key, Body=key.encode())
        client.put_object(Bucket=BUCKET, Key=KEYS[0], Body=b"second version")  # a key with two versions in the store
        client.delete_object(Bucket=BUCKET, Key=KEYS[1])
        yield client


def listing(client: Any, **kwargs: Any) -> list[Any]:
    """Every page of ListObjectsV2 and of ListObjects, as the caller sees them."""
    pages = [
        (p.get("Contents", []), p.get("CommonPrefixes", []), p.get("IsTruncated"))
        for p in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, PaginationConfig={"PageSize": 7}, **kwargs)
    ]
    pages += [
        (p.get("Contents", []), p.get("CommonPrefixes", []), p.get("IsTruncated"))
        for p in client.get_paginator("list_objects").paginate(Bucket=BUCKET, PaginationConfig={"PageSize": 5}, **kwargs)
    ]
    return pages


@pytest.mark.parametrize(
    "kwargs",
    [{"Prefix": "jobs/007/"}, {"Prefix": "jobs/0"}, {"Prefix": "jobs/", "Delimiter": "/"}, {"Prefix": "jobs/000/images/"}, {"Prefix": "none/"}, {}],
)
def test_a_listing_by_prefix_answers_what_motos_own_listing_does(s3, monkeypatch, kwargs):
    monkeypatch.setattr(S3Backend, "list_objects", patches._original_list_objects)
    expected = listing(s3, **kwargs)
    monkeypatch.setattr(S3Backend, "list_objects", patches._list_objects)
    assert listing(s3, **kwargs) == expected
    assert any(page[0] or page[1] for page in expected) or kwargs.get("Prefix") == "none/", "the case lists something"


def test_a_listing_by_prefix_reads_only_the_keys_under_it(s3, monkeypatch):
    reads: list[str] = []
    original = _VersionedKeyStore.__sgetitem__

    def counted(self: Any, key: str) -> Any:
        reads.append(key)
        return original(self, key)

    monkeypatch.setattr(S3Backend, "list_objects", patches._list_objects)
    monkeypatch.setattr(_VersionedKeyStore, "__sgetitem__", counted)
    found = s3.list_objects_v2(Bucket=BUCKET, Prefix="jobs/042/images/")["Contents"]
    assert [o["Key"] for o in found] == [f"jobs/042/images/{i:02d}.png" for i in range(3)]
    assert reads and set(reads) <= {o["Key"] for o in found}, "no key outside the prefix is read from the store"


def test_step_functions_tasks_share_one_client_per_region_and_service():
    first = patches._boto_client_for("us-east-1", "lambda")
    assert patches._boto_client_for("us-east-1", "lambda") is first
    assert patches._boto_client_for("us-west-2", "lambda") is not first
    assert patches._boto_client_for("us-east-1", "sqs") is not first


class _Trickle:
    """A socket-like stream that hands out at most ``step`` bytes a read, as a socket may."""

    def __init__(self, data: bytes, step: int) -> None:
        self.data, self.step, self.at = data, step, 0

    def readinto(self, buffer: Any) -> int:
        piece = self.data[self.at : self.at + min(self.step, len(buffer))]
        buffer[: len(piece)] = piece
        self.at += len(piece)
        return len(piece)


def test_a_body_of_known_length_reads_as_werkzeug_reads_it() -> None:
    """patches 6: one buffer of the body's size, the same bytes; a body shorter than its Content-Length is a
    disconnect, as werkzeug says; a body with only a maximum goes werkzeug's way."""
    from werkzeug.exceptions import ClientDisconnected
    from werkzeug.wsgi import LimitedStream

    body = bytes(range(256)) * 4099
    for step in (1_000, 65_536, len(body)):
        assert patches._readall(LimitedStream(_Trickle(body + b"next request", step), len(body))) == body  # type: ignore[arg-type]
        assert patches._readall(LimitedStream(_Trickle(body, step), len(body), is_max=True)) == body  # type: ignore[arg-type]
    with pytest.raises(ClientDisconnected):
        patches._readall(LimitedStream(_Trickle(body[:-1], 4096), len(body)))  # type: ignore[arg-type]
    assert patches._readall(LimitedStream(_Trickle(b"", 1), 0)) == b""  # type: ignore[arg-type]


# --- 7. The state machine's parse tree kept per definition ---------------------------------------------------------

PASS_MACHINE = '{"StartAt": "A", "States": {"A": {"Type": "Pass", "Result": {"n": 1}, "ResultPath": "$.a", "Next": "B"}, "B": {"Type": "Succeed"}}}'


def test_a_definition_is_parsed_once_and_every_execution_gets_a_program_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    parsed: list[str] = []

    def counting(definition: str) -> Any:
        parsed.append(definition)
        return original(definition)

    original = patches._original_parse
    monkeypatch.setattr(patches, "_original_parse", counting)
    monkeypatch.setattr(patches, "_parse_trees", {})
    monkeypatch.setattr(AmazonStateLanguageParser, "parse", staticmethod(patches._parse_definition))

    first, tree = AmazonStateLanguageParser.parse(PASS_MACHINE)
    second, same_tree = AmazonStateLanguageParser.parse(PASS_MACHINE)
    assert parsed == [PASS_MACHINE], "the second parse of the same text is served from the kept tree"
    assert same_tree is tree and second is not first, "one tree, a fresh program (moto's evaluation state) each time"
    assert type(second) is type(original(PASS_MACHINE)[0])


def test_a_definition_that_does_not_parse_fails_every_time_as_moto_fails_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser, ASLParserException

    monkeypatch.setattr(patches, "_parse_trees", {})
    monkeypatch.setattr(AmazonStateLanguageParser, "parse", staticmethod(patches._parse_definition))
    for _ in range(2):
        with pytest.raises(ASLParserException):
            AmazonStateLanguageParser.parse('{"StartAt": "A", "States": {"A": {"Type": ')
    assert patches._parse_trees == {}


def test_executions_of_a_kept_definition_run_as_moto_runs_them() -> None:
    """Two executions of one machine through moto's interpreter with the kept tree: each ends with its own output."""
    import json
    import time

    patches._install_speedups()
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        sfn = boto3.client("stepfunctions", **CREDS)
        arn = sfn.create_state_machine(name="kept", definition=PASS_MACHINE, roleArn="arn:aws:iam::123456789012:role/x")["stateMachineArn"]
        runs = [sfn.start_execution(stateMachineArn=arn, name=f"run-{i}", input=json.dumps({"i": i}))["executionArn"] for i in range(2)]
        outputs = []
        for run in runs:
            deadline = time.monotonic() + 60  # moto runs executions on a thread of its own: wait for each to end
            while (described := sfn.describe_execution(executionArn=run))["status"] == "RUNNING" and time.monotonic() < deadline:
                time.sleep(0.01)
            outputs.append((described["status"], json.loads(described.get("output", "null"))))
    assert outputs == [("SUCCEEDED", {"i": 0, "a": {"n": 1}}), ("SUCCEEDED", {"i": 1, "a": {"n": 1}})]


@pytest.mark.parametrize(
    ("kept", "original"),
    [(patches._cached_jsonpath_ext_parse, patches._original_jsonpath_ext_parse), (patches._cached_jsonpath_parse, patches._original_jsonpath_parse)],
)
def test_a_jsonpath_is_parsed_once_and_finds_what_a_fresh_parse_finds(kept: Any, original: Any) -> None:
    data = {"jobId": "j-1", "chunks": [{"n": 1}, {"n": 2}], "detail": {"status": "Completed"}}
    for path in ("$.jobId", "$.chunks[1].n", "$.detail.status", "$.chunks[*].n"):
        assert kept(path) is kept(path), "one expression per path text"
        assert [m.value for m in kept(path).find(data)] == [m.value for m in original(path).find(data)]
    assert [m.value for m in kept("$.chunks[*].n").find({"chunks": [{"n": 9}]})] == [9], "a kept expression holds no earlier data"


def test_a_jsonpath_that_does_not_parse_fails_every_time() -> None:
    from jsonpath_ng.exceptions import JsonPathParserError

    for _ in range(2):
        with pytest.raises(JsonPathParserError, match="Parse error"):
            patches._cached_jsonpath_ext_parse("$.[[")


def test_a_put_overwritten_while_it_answers_still_has_its_etag(monkeypatch: pytest.MonkeyPatch) -> None:
    """10.: two PUTs of one key at once. moto disposes the first key when the second is stored; the first
    request then read its ETag from a closed buffer (a 500 S3 never gives). With the patch each key has it."""
    monkeypatch.setattr(FakeKey, "__init__", patches._fake_key_init)
    with mock_aws():
        backend = S3Backend("us-east-1", "123456789012")
        backend.create_bucket("race", "us-east-1")
        first = backend.put_object("race", "summary.json", b'{"a": 1}')
        backend.put_object("race", "summary.json", b'{"a": 2}')  # stored: the first key's buffer is closed
        assert first.etag == '"' + hashlib.md5(b'{"a": 1}').hexdigest() + '"'  # S3's ETag of a single PUT is its MD5


def test_without_the_patch_moto_fails_that_put(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(FakeKey, "__init__", patches._original_fake_key_init)
    with mock_aws():
        backend = S3Backend("us-east-1", "123456789012")
        backend.create_bucket("race-unpatched", "us-east-1")
        first = backend.put_object("race-unpatched", "summary.json", b'{"a": 1}')
        backend.put_object("race-unpatched", "summary.json", b'{"a": 2}')
        with pytest.raises(ValueError, match="closed file"):
            _ = first.etag
