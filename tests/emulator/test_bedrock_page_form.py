# ruff: noqa: F811  (the emulator's fixtures are imported from its test module and used as parameters)
"""The emulator's two page forms (issue 22.1): a PDF document block refused as Bedrock's "API restrictions"
page says it may be (fault invoke_model_documents=refused), and the image form seen and counted as Claude does."""

from __future__ import annotations

import base64
import io
import json
import math
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from botocore.exceptions import ClientError
from PIL import Image
from test_bedrock_emulator import BUCKET, MODEL, Harness, error_code, harness, output_of, page_pdf, put_jsonl, s3, submit  # noqa: F401
from test_bedrock_invoke import CONFIG, image_page, invoke

from batchlane.claude import build_page_request
from batchlane.pdf.page_image import render_page_image

IMAGE = replace(CONFIG, page_form="image")
REFUSED = "time_scale=36000,invoke_model_documents=refused"


def test_with_the_fault_a_pdf_document_is_refused_and_the_image_form_of_the_same_page_converts(harness: Callable[..., Harness]) -> None:
    h = harness(REFUSED)
    request = build_page_request(chunk_index=0, page_number=1, pdf_bytes=page_pdf("Quarterly ledger totals."), config=CONFIG)
    with pytest.raises(ClientError) as refused:
        invoke(h, request.body())
    assert error_code(refused) == "ValidationException"
    assert "'document'" in refused.value.response["Error"]["Message"]
    answer = invoke(h, request.with_form("image").body())
    assert answer["content"][0]["text"].startswith("Quarterly ledger totals.")


UNWORDED = "Malformed input request: #/messages/0/content/0: extraneous key [source] is not permitted"


def test_the_refusal_can_be_worded_any_way_and_the_image_form_still_converts(harness: Callable[..., Harness]) -> None:
    """Issue 42.1: AWS publishes no wording for a refused form, so the emulator can refuse in any words (case kept)."""
    h = harness(f"{REFUSED},document_refusal_message={UNWORDED}")
    request = build_page_request(chunk_index=0, page_number=1, pdf_bytes=page_pdf("Quarterly ledger totals."), config=CONFIG)
    with pytest.raises(ClientError) as refused:
        invoke(h, request.body())
    assert error_code(refused) == "ValidationException" and refused.value.response["Error"]["Message"] == UNWORDED
    assert invoke(h, request.with_form("image").body())["content"][0]["text"].startswith("Quarterly ledger totals.")


def test_a_corrupt_pdf_page_is_refused_naming_the_document_and_only_that_page(harness: Callable[..., Harness]) -> None:
    h = harness("time_scale=36000,corrupt_pdf_pages=2")
    second = build_page_request(chunk_index=0, page_number=2, pdf_bytes=page_pdf("Second page."), config=CONFIG)
    with pytest.raises(ClientError) as corrupt:
        invoke(h, second.body())
    assert error_code(corrupt) == "ValidationException" and "document page-2" in corrupt.value.response["Error"]["Message"]
    assert invoke(h, second.with_form("image").body())["content"][0]["text"].startswith("Second page.")
    first = build_page_request(chunk_index=0, page_number=1, pdf_bytes=page_pdf("First page."), config=CONFIG)
    assert invoke(h, first.body())["content"][0]["text"].startswith("First page.")


def test_the_image_form_is_seen_with_its_picture_and_costs_width_times_height_over_750(harness: Callable[..., Harness]) -> None:
    h = harness()
    pdf = image_page()  # no text layer: a grey picture
    body = build_page_request(chunk_index=0, page_number=1, pdf_bytes=pdf, config=IMAGE).body()
    answer = invoke(h, body)
    assert answer["content"][0]["text"].startswith("*[Figure: picture area ")
    rendered = render_page_image(pdf)
    text_chars = len(body["system"]) + sum(len(b["text"]) for b in body["messages"][0]["content"] if b["type"] == "text")
    documented = rendered.width * rendered.height / 750 + text_chars / 4
    assert abs(answer["usage"]["input_tokens"] - documented) <= 0.01 * documented
    assert answer["usage"]["input_tokens"] == math.ceil(rendered.width * rendered.height / 750) + text_chars // 4


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"media_type": "image/gif"}, "does not match the provided media type"),
        ({"data": base64.b64encode(b"\0" * 3_750_001).decode()}, "exceeds 3.75 MB"),
    ],
)
def test_an_image_block_is_validated_like_bedrock(harness: Callable[..., Harness], change: dict[str, Any], message: str) -> None:
    h = harness()
    body = build_page_request(chunk_index=0, page_number=1, pdf_bytes=page_pdf("x"), config=IMAGE).body()
    body["messages"][0]["content"][0]["source"].update(change)
    with pytest.raises(ClientError) as refused:
        invoke(h, body)
    assert error_code(refused) == "ValidationException" and message in refused.value.response["Error"]["Message"]


def test_an_image_over_8000_pixels_a_side_is_refused(harness: Callable[..., Harness]) -> None:
    h = harness()
    buffer = io.BytesIO()
    Image.new("L", (8001, 10), 255).save(buffer, "PNG")
    body = build_page_request(chunk_index=0, page_number=1, pdf_bytes=page_pdf("x"), config=IMAGE).body()
    body["messages"][0]["content"][0]["source"].update({"media_type": "image/png", "data": base64.b64encode(buffer.getvalue()).decode()})
    with pytest.raises(ClientError, match="8000 pixels"):
        invoke(h, body)


def test_in_a_batch_job_the_fault_makes_pdf_records_error_lines_and_image_records_answers(harness: Callable[..., Harness], s3: Any) -> None:
    h = harness(REFUSED)
    pdf = page_pdf("Batch page text.")
    items = [
        {"recordId": "aspdf", "modelInput": build_page_request(chunk_index=0, page_number=1, pdf_bytes=pdf, config=CONFIG).body()},
        {"recordId": "asimage", "modelInput": build_page_request(chunk_index=0, page_number=1, pdf_bytes=pdf, config=IMAGE).body()},
    ]
    key = f"in/{uuid.uuid4().hex}.jsonl"
    put_jsonl(s3, key, items)
    arn = submit(h, f"s3://{BUCKET}/{key}", modelInvocationType="InvokeModel")
    assert h.wait_terminal(arn)["status"] == "PartiallyCompleted"
    lines = {line["recordId"]: line for line in output_of(s3, arn)[0][key.rsplit("/", 1)[-1] + ".out"]}
    assert "'document'" in lines["aspdf"]["error"]["errorMessage"]
    assert lines["asimage"]["modelOutput"]["content"][0]["text"].startswith("Batch page text.")
    assert json.dumps(lines["asimage"]["modelOutput"]["usage"])  # billed like any answered record
