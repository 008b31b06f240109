"""The emulator refuses what Bedrock refuses for its size: on-demand a ValidationException, in a batch job that record's error."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from typing import Any

import pytest
import test_bedrock_emulator as emulator_tests
from botocore.exceptions import ClientError
from test_bedrock_emulator import BUCKET, MODEL, Harness, converse_body, error_code, output_of, page_pdf, put_jsonl, submit

from batchlane.domain.limits import MAX_PAGE_BYTES, MAX_REQUEST_BYTES, encoded_size
from batchlane_dev.local.bedrock import limits

# The emulator tests' fixtures (a moto S3 server, a running emulator), shared rather than copied.
s3, harness = emulator_tests.s3, emulator_tests.harness
OVER_A_DOCUMENT = b"%PDF-1.4\n" + os.urandom(4_600_000)  # never parsed: the size check comes first


def messages_body(pdf: bytes) -> dict[str, Any]:
    """The Anthropic Messages body (InvokeModel, and InvokeModel batch records)."""
    document = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": base64.b64encode(pdf).decode()}}
    return {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": [document, {"type": "text", "text": "Hi"}]}],
    }


def test_a_converse_document_over_4_5_mb_and_any_body_over_20_mb_are_refused():
    assert "4.5 MB" in limits.size_error(converse_body(("page-1", OVER_A_DOCUMENT)))
    assert limits.size_error(converse_body(("page-1", OVER_A_DOCUMENT[:4_400_000]))) is None
    # Messages body: AWS lifts the 4.5 MB cap for PDFs to Claude 4+, the request size still holds
    assert limits.size_error(messages_body(OVER_A_DOCUMENT)) is None
    assert "maximum request size" in limits.size_error(messages_body(os.urandom(15_100_000)))
    # raw bytes (boto3's own Converse shape) count the same as their base64
    assert "4.5 MB" in limits.size_error(converse_body(("page-1", OVER_A_DOCUMENT), encode=False))


def test_the_runtime_limits_are_within_what_bedrock_accepts():
    """A page at batchlane's limit is a document Bedrock takes; five such pages would not fit one request."""
    assert MAX_PAGE_BYTES <= limits.MAX_DOCUMENT_BYTES and MAX_REQUEST_BYTES <= limits.MAX_BODY_BYTES
    assert 5 * encoded_size(MAX_PAGE_BYTES) > MAX_REQUEST_BYTES


def test_converse_refuses_an_oversized_document_with_a_validation_exception(harness: Callable[..., Harness]) -> None:
    h = harness()
    with pytest.raises(ClientError) as exc:
        h.runtime.converse(modelId=MODEL, **{k: v for k, v in converse_body(("page-1", OVER_A_DOCUMENT), encode=False).items()})
    assert error_code(exc) == "ValidationException" and "4.5 MB" in str(exc.value)


def test_an_oversized_batch_record_is_that_records_error_and_the_others_are_answered(harness: Callable[..., Harness], s3: Any) -> None:
    h = harness()
    items = [{"recordId": f"ok{i}", "modelInput": converse_body((f"page-{i}", page_pdf(f"Record ok{i} says hello.")))} for i in range(3)]
    items.append({"recordId": "big", "modelInput": converse_body(("page-9", OVER_A_DOCUMENT))})
    put_jsonl(s3, "in/limits/part-0.jsonl", items)
    arn = submit(h, f"s3://{BUCKET}/in/limits/")
    job = h.wait_terminal(arn)
    assert job["status"] == "PartiallyCompleted"
    lines = {line["recordId"]: line for line in output_of(s3, arn)[0]["part-0.jsonl.out"]}
    assert "4.5 MB" in lines["big"]["error"]["errorMessage"] and "modelOutput" not in lines["big"]
    assert all("modelOutput" in lines[f"ok{i}"] for i in range(3))
