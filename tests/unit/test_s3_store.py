"""S3Store reads only what it checked and deletes or says why not (issue 15, "Uploads" and "Data the user asked to delete")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from batchlane.aws.s3 import ObjectDeleteFailed, ObjectTooLarge, S3Store

BUCKET = "store-tests"


@pytest.fixture
def s3() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def test_an_object_over_the_limit_is_refused_before_a_byte_is_read(s3: Any, tmp_path: Path) -> None:
    s3.put_object(Bucket=BUCKET, Key="uploads/f/big.pdf", Body=b"%PDF" + b"x" * 2000)
    target = tmp_path / "upload.pdf"
    with pytest.raises(ObjectTooLarge) as refused:
        S3Store(s3, BUCKET).download_to("uploads/f/big.pdf", target, max_bytes=1000)
    assert refused.value.error_id == "PDF_TOO_LARGE" and not target.exists()
    assert S3Store(s3, BUCKET).download_to("uploads/f/big.pdf", target, max_bytes=4096) == 2004 and target.stat().st_size == 2004


def test_the_read_is_bound_to_the_etag_the_size_check_saw(s3: Any, tmp_path: Path) -> None:
    # Given an object replaced between the size check and the read
    s3.put_object(Bucket=BUCKET, Key="uploads/f/doc.pdf", Body=b"%PDF small")
    store = S3Store(s3, BUCKET)
    real_head = s3.head_object

    def head_then_replace(**kwargs: Any) -> Any:
        answer = real_head(**kwargs)
        s3.put_object(Bucket=BUCKET, Key="uploads/f/doc.pdf", Body=b"%PDF " + b"y" * 5000)
        return answer

    s3.head_object = head_then_replace
    # Then the read fails (412) instead of loading bytes nobody checked
    with pytest.raises(ClientError) as failed:
        store.download_to("uploads/f/doc.pdf", tmp_path / "doc.pdf", max_bytes=100)
    assert failed.value.response["Error"]["Code"] in ("PreconditionFailed", "412")


def test_delete_keys_raises_on_a_per_key_refusal_and_ignores_keys_already_gone() -> None:
    class Refusing:
        def delete_objects(self, **kwargs: Any) -> dict[str, Any]:
            keys = [o["Key"] for o in kwargs["Delete"]["Objects"]]
            return {"Errors": [{"Key": keys[0], "Code": "AccessDenied", "Message": "Access Denied"}]}

    with pytest.raises(ObjectDeleteFailed, match="AccessDenied"):
        S3Store(Refusing(), BUCKET).delete_keys(["jobs/j/output.md"])

    class AlreadyGone(Refusing):
        def delete_objects(self, **kwargs: Any) -> dict[str, Any]:
            return {"Errors": [{"Key": "jobs/j/output.md", "Code": "NoSuchKey"}]}

    S3Store(AlreadyGone(), BUCKET).delete_keys(["jobs/j/output.md"])
