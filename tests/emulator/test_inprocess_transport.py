"""local/inprocess.py: a call served without the socket answers what the same call over HTTP answers.

A real moto server on loopback (the stack's own, behind LoopbackOnly) and boto3 clients through botocore's
whole request path; each case runs over HTTP first, then in-process, and the two answers must be equal.
"""

from __future__ import annotations

import io
import socket
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from batchlane_dev.local import iam, inprocess
from batchlane_dev.local.loopback import loopback_moto_server

BUCKET = "inprocess"
KEYS = ["plain.txt", "with space/é and ü.md", "deep/a+b=c&d.json", "under_score/x"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    port = _free_port()
    server = loopback_moto_server("127.0.0.1", port)
    server.start()
    url = f"http://127.0.0.1:{port}"
    try:
        yield url
    finally:
        inprocess.withdraw(url)
        server.stop()


@pytest.fixture(scope="module")
def s3(moto_url: str, monkeypatch_module: pytest.MonkeyPatch) -> Any:
    client = boto3.client("s3", endpoint_url=moto_url, region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")
    client.create_bucket(Bucket=BUCKET)
    return client


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    mp = pytest.MonkeyPatch()
    mp.delenv("AWS_ENDPOINT_URL", raising=False)
    yield mp
    mp.undo()


def _both(moto_url: str, app: Any, handler_class: type, call: Any) -> tuple[Any, Any, int]:
    """``call()`` over HTTP, then served in-process; and how many requests the in-process side answered."""
    inprocess.withdraw(moto_url)
    over_http = call()
    assert inprocess.served(moto_url) == 0
    inprocess.serve(moto_url, app, handler_class=handler_class, identity=iam.AWS_SERVICE)
    try:
        in_process = call()
        return over_http, in_process, inprocess.served(moto_url)
    finally:
        inprocess.withdraw(moto_url)


def _strip(response: dict[str, Any]) -> dict[str, Any]:
    """What differs between two calls whatever the transport: request ids, dates."""
    response = dict(response)
    response.pop("ResponseMetadata", None)
    response.pop("LastModified", None)
    return response


@pytest.fixture(scope="module")
def app(moto_url: str) -> tuple[Any, type]:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app

    from batchlane_dev.local.loopback import LoopbackOnly

    return LoopbackOnly(DomainDispatcherApplication(create_backend_app)), MotoRequestHandler


@pytest.mark.parametrize("key", KEYS)
def test_an_object_written_and_read_in_process_is_what_http_writes_and_reads(s3, moto_url, app, key):
    body = f"body of {key}".encode() * 50

    def roundtrip() -> tuple[Any, ...]:
        s3.put_object(Bucket=BUCKET, Key=key, Body=body, Metadata={"owner_id": "a", "plain": "b"})
        got = s3.get_object(Bucket=BUCKET, Key=key)
        head = s3.head_object(Bucket=BUCKET, Key=key)
        parts = [got["Body"].read(7), got["Body"].read()]
        return parts, got["Metadata"], head["ContentLength"], head["ETag"]

    over_http, in_process, served = _both(moto_url, *app, roundtrip)
    assert in_process == over_http and b"".join(in_process[0]) == body
    assert in_process[1] == {"owner_id": "a", "plain": "b"}  # an underscore in a metadata name survives (moto's handler)
    assert served == 3


def test_a_file_like_body_and_a_listing_with_special_keys_match(s3, moto_url, app):
    def calls() -> tuple[Any, ...]:
        s3.put_object(Bucket=BUCKET, Key="stream/file.bin", Body=io.BytesIO(b"\x00\x01" * 40_000))
        listing = s3.list_objects_v2(Bucket=BUCKET, Prefix="", Delimiter="/")
        return _strip(listing), s3.get_object(Bucket=BUCKET, Key="stream/file.bin")["Body"].read()

    over_http, in_process, served = _both(moto_url, *app, calls)
    assert in_process == over_http and in_process[1] == b"\x00\x01" * 40_000
    assert served == 3


def test_a_modelled_error_is_raised_the_same_way(s3, moto_url, app):
    def missing() -> tuple[str, int, str]:
        with pytest.raises(ClientError) as raised:
            s3.get_object(Bucket=BUCKET, Key="nothing/here")
        with pytest.raises(ClientError) as headed:
            s3.head_object(Bucket=BUCKET, Key="nothing/here")
        return raised.value.response["Error"]["Code"], headed.value.response["ResponseMetadata"]["HTTPStatusCode"], headed.value.response["Error"]["Code"]

    over_http, in_process, served = _both(moto_url, *app, missing)
    assert in_process == over_http == ("NoSuchKey", 404, "404")
    assert served == 2


def test_a_json_protocol_service_answers_the_same(moto_url, app):
    sfn = boto3.client("stepfunctions", endpoint_url=moto_url, region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")

    def machines() -> tuple[Any, str]:
        listed = [m["name"] for m in sfn.list_state_machines()["stateMachines"]]
        with pytest.raises(ClientError) as raised:
            sfn.describe_execution(executionArn="arn:aws:states:us-east-1:123456789012:execution:none:none")
        return listed, raised.value.response["Error"]["Code"]

    over_http, in_process, served = _both(moto_url, *app, machines)
    assert in_process == over_http and served == 2


def test_a_request_is_answered_as_the_identity_the_servers_threads_carry(moto_url):
    seen: list[str | None] = []

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        seen.append(iam.current_function())
        start_response("200 OK", [("Content-Type", "application/json"), ("x-amzn-RequestId", "r")])
        return [b'{"stateMachines": []}']

    from werkzeug.serving import WSGIRequestHandler

    url = "http://127.0.0.1:1"  # nothing listens there: only the in-process route can answer
    inprocess.serve(url, app, handler_class=WSGIRequestHandler, identity=iam.AWS_SERVICE)
    try:
        sfn = boto3.client("stepfunctions", endpoint_url=url, region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")
        with iam.acting_as("folder_advance"):
            assert sfn.list_state_machines()["stateMachines"] == []
        assert seen == [iam.AWS_SERVICE]
    finally:
        inprocess.withdraw(url)


def test_a_slow_answer_times_out_at_the_clients_read_timeout_and_the_request_runs_on():
    """As a socket read would (tests/e2e/test_read_timeout.py relies on it): botocore's ReadTimeoutError, retried as
    botocore retries it; the server side is not cut short."""
    import threading

    from botocore.config import Config
    from botocore.exceptions import ReadTimeoutError
    from werkzeug.serving import WSGIRequestHandler

    release, finished, calls = threading.Event(), threading.Event(), []

    def slow(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        calls.append(1)
        release.wait(10)
        finished.set()
        start_response("200 OK", [("Content-Type", "application/x-amz-json-1.0"), ("x-amzn-RequestId", "r")])
        return [b'{"stateMachines": []}']

    url = "http://127.0.0.1:2"
    inprocess.serve(url, slow, handler_class=WSGIRequestHandler, identity=iam.AWS_SERVICE, with_read_timeout=True)
    try:
        config = Config(read_timeout=0.2, retries={"mode": "standard", "max_attempts": 2})
        sfn = boto3.client("stepfunctions", endpoint_url=url, region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s", config=config)
        with pytest.raises(ReadTimeoutError):
            sfn.list_state_machines()
        assert len(calls) == 3, "botocore retried the timed-out call twice (max_attempts counts retries), as over a socket"
        assert not finished.is_set()
        release.set()
        assert finished.wait(10), "the request ran on to its end"
    finally:
        release.set()
        inprocess.withdraw(url)
