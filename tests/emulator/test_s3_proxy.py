"""The offline console's S3 proxy takes only what S3 would (issue 40.5): a GET signed by a key of the stack and not
expired, a POST within its signed policy. It forwarded anything, so anyone on the machine could read or overwrite
any object of the offline stack through it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
import urllib3
from botocore.config import Config

from batchlane_dev.local import presigned
from batchlane_dev.local.api_server import S3_PROXY_PATH, LocalApiServer
from batchlane_dev.local.lambda_runtime import HandlerRegistry

BUCKET = "proxy-bucket"
STACK_KEY, STACK_SECRET = "offline", "this-stacks-own-secret"  # what the API signs with (OfflineStack._aws_secret)


@pytest.fixture(scope="module")
def proxy(s3_endpoint: str) -> Iterator[tuple[str, Any]]:
    api = LocalApiServer(HandlerRegistry(), s3_url=s3_endpoint, secret_for=presigned.moto_secret_for({STACK_KEY: STACK_SECRET}))
    api.start()
    signer = boto3.client(
        "s3", endpoint_url=s3_endpoint, region_name="us-east-1", aws_access_key_id=STACK_KEY, aws_secret_access_key=STACK_SECRET, config=Config(signature_version="s3v4")
    )
    signer.put_object(Bucket=BUCKET, Key="jobs/alice/output.md", Body=b"alice's markdown")
    yield api.url + S3_PROXY_PATH, signer
    api.stop()


def _through(proxy_url: str, signed_url: str, endpoint: str, method: str = "GET", **kwargs: Any) -> Any:
    return urllib3.request(method, proxy_url + signed_url[len(endpoint) :], retries=False, **kwargs)


def _other(endpoint: str, key: str, secret: str) -> Any:
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=key, aws_secret_access_key=secret, config=Config(signature_version="s3v4"))


def test_a_get_the_api_signed_is_forwarded_and_nothing_else(proxy: tuple[str, Any], s3_endpoint: str) -> None:
    proxy_url, signer = proxy
    params = {"Bucket": BUCKET, "Key": "jobs/alice/output.md"}
    signed = signer.generate_presigned_url("get_object", Params=params, ExpiresIn=300)
    answer = _through(proxy_url, signed, s3_endpoint, headers={"Range": "bytes=0-6"})
    assert (answer.status, answer.data) == (206, b"alice's")
    # unsigned, signed with a key anybody knows (the stacks' old fixed one), for another key, or expired: refused as S3 would
    assert _through(proxy_url, f"{s3_endpoint}/{BUCKET}/jobs/alice/output.md", s3_endpoint).status == 403
    forged = _other(s3_endpoint, STACK_KEY, "offline").generate_presigned_url("get_object", Params=params, ExpiresIn=300)
    assert _through(proxy_url, forged, s3_endpoint).status == 403
    assert _through(proxy_url, signed.replace("alice/output.md", "bob/output.md"), s3_endpoint).status == 403
    assert presigned.check_query("GET", s3_endpoint, *presigned.parts(signed[len(s3_endpoint) :]), {STACK_KEY: STACK_SECRET}.get, now=datetime.now(UTC) + timedelta(seconds=301)) == "expired"


def test_a_post_is_forwarded_only_within_its_signed_policy(proxy: tuple[str, Any], s3_endpoint: str) -> None:
    proxy_url, signer = proxy
    post = signer.generate_presigned_post(
        BUCKET, "uploads/f1/a.pdf", Fields={"Content-Type": "application/pdf"}, Conditions=[{"Content-Type": "application/pdf"}, ["content-length-range", 1, 64]], ExpiresIn=300
    )

    def send(fields: dict[str, str], data: bytes) -> int:
        return int(urllib3.request("POST", proxy_url + f"/{BUCKET}", fields=[*fields.items(), ("file", ("a.pdf", data, "application/pdf"))], retries=False).status)

    assert send({**post["fields"], "key": "jobs/alice/output.md"}, b"%PDF- overwritten") == 403  # another key: alice's Markdown stays
    assert send(post["fields"], b"%PDF-" + b"x" * 100) == 403  # past content-length-range
    assert send({**post["fields"], "Content-Type": "text/html"}, b"<script>") == 403
    forged = _other(s3_endpoint, STACK_KEY, "offline").generate_presigned_post(BUCKET, "jobs/alice/output.md")
    assert send(forged["fields"], b"forged") == 403
    assert signer.get_object(Bucket=BUCKET, Key="jobs/alice/output.md")["Body"].read() == b"alice's markdown"
    assert send(post["fields"], b"%PDF-1.7 ok") == 204
    assert signer.get_object(Bucket=BUCKET, Key="uploads/f1/a.pdf")["Body"].read() == b"%PDF-1.7 ok"
