# ruff: noqa: F811  (the emulator's fixtures are imported from its test module and used as parameters)
"""The emulator's InvokeModel (Anthropic Messages body) and its two PDF modes.

Bedrock as documented: a Converse document without citations is text extraction only; an
InvokeModel Messages document (or Converse with citations on) is seen as text and image.
So an image-only page answers empty in the first mode and converts in the second.
"""

from __future__ import annotations

import base64
import io
import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError
from PIL import Image
from reportlab.lib.pagesizes import letter
from reportlab.lib.utils import ImageReader
from reportlab.pdfgen import canvas
from test_bedrock_emulator import BUCKET, MODEL, Harness, error_code, harness, output_of, page_pdf, put_jsonl, s3, submit  # noqa: F401

from batchlane.claude import ConverterConfig, answer_from_messages, build_page_request, build_pages_request, page_result
from batchlane.domain.cost import PriceTable
from batchlane.pdf.split import ChunkSpan, open_pdf
from batchlane_dev.local.bedrock import EMULATED_MODEL_LABEL, model
from batchlane_dev.local.bedrock.invoke import MAX_REQUEST_BYTES
from batchlane_dev.local.pdfgen import make_image_pdf, make_pdf

CONFIG = ConverterConfig(model_id=MODEL, max_tokens=2048, temperature=0.0)
PRICES = PriceTable({MODEL: {"input_per_mtok": 3.0, "output_per_mtok": 15.0}})


def image_page() -> bytes:
    """One page, no text layer: a 640×480 grayscale picture drawn at (50, 100)."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=letter)
    pdf.drawImage(ImageReader(Image.new("L", (640, 480), 128)), 50, 100, width=320, height=240)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def invoke(h: Harness, body: dict[str, Any] | bytes) -> dict[str, Any]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    response = h.runtime.invoke_model(modelId=MODEL, body=raw, contentType="application/json", accept="application/json")
    return dict(json.loads(response["body"].read()))


def messages_body(**overrides: Any) -> dict[str, Any]:
    body = build_page_request(chunk_index=0, page_number=1, pdf_bytes=page_pdf("Hello from the page."), config=CONFIG).body()
    body.update(overrides)
    return body


def old_converse_form(pdf: bytes, *, citations: bool = False) -> dict[str, Any]:
    """The request batchlane sent before: a Converse document block, by default without citations."""
    document: dict[str, Any] = {"format": "pdf", "name": "page-1", "source": {"bytes": pdf}}
    if citations:
        document["citations"] = {"enabled": True}
    return {
        "modelId": MODEL,
        "system": [{"text": CONFIG.system}],
        "messages": [{"role": "user", "content": [{"document": document}, {"text": CONFIG.instruction}]}],
        "inferenceConfig": {"maxTokens": CONFIG.max_tokens, "temperature": 0.0},
    }


def test_invoke_model_answers_the_messages_shape_labelled_as_emulated(harness: Callable[..., Harness]) -> None:
    h = harness()
    answer = invoke(h, messages_body())
    assert answer["type"] == "message" and answer["role"] == "assistant" and answer["model"] == EMULATED_MODEL_LABEL
    assert answer["content"] == [{"type": "text", "text": "Hello from the page."}]
    assert answer["stop_reason"] == "end_turn"
    assert answer["usage"]["input_tokens"] >= model.TOKENS_PER_DOCUMENT + model.VISUAL_TOKENS_PER_DOCUMENT
    assert answer["usage"]["output_tokens"] == -(-len("Hello from the page.") // 4)
    assert h.emu.stats["invoke_requests"] == 1


def test_an_image_only_page_fails_in_the_old_form_and_converts_in_the_new_one(harness: Callable[..., Harness]) -> None:
    h = harness()
    pdf = image_page()
    old = h.runtime.converse(**old_converse_form(pdf))
    assert old["output"]["message"]["content"][0]["text"] == "", "text extraction sees nothing on a scan"
    assert page_result(1, MODEL, answer_from_messages(old, served_by="on_demand"), PRICES).reason == "empty_text"
    new = answer_from_messages(invoke(h, build_page_request(chunk_index=0, page_number=1, pdf_bytes=pdf, config=CONFIG).body()), served_by="on_demand")
    assert new.text == "*[Figure: 640×480 grayscale image at (50, 100)]*" and new.stop_reason == "end_turn"
    assert page_result(1, MODEL, new, PRICES).status == "converted"
    cited = h.runtime.converse(**old_converse_form(pdf, citations=True))
    assert cited["output"]["message"]["content"][0]["citationsContent"]["content"][0]["text"] == new.text, "Converse with citations is visual too"


def test_every_image_of_the_image_only_document_is_described_with_its_size_and_place() -> None:
    document = open_pdf(make_image_pdf(), max_pages=10)
    seen = [model.page_markdown(page.pdf_bytes, visual=True) for page in document.pages(ChunkSpan(0, 1, 3))]
    assert seen == [
        "*[Figure: 640×480 grayscale image at (72, 300)]*",
        "*[Figure: 600×400 CMYK image at (60, 200)]*",
        "*[Figure: 850×1100 RGB image at (0, 0)]*",
    ]
    assert all(model.page_markdown(page.pdf_bytes) == "" for page in document.pages(ChunkSpan(0, 1, 3)))


def test_a_page_with_text_and_a_figure_gives_both_text_first() -> None:
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=letter)
    pdf.drawString(72, 720, "Figure 1 shows the plant.")
    pdf.drawImage(ImageReader(Image.new("RGB", (40, 30), (1, 2, 3))), 72, 400, width=40, height=30)
    pdf.showPage()
    pdf.save()
    assert model.page_markdown(buffer.getvalue(), visual=True) == "Figure 1 shows the plant.\n\n*[Figure: 40×30 RGB image at (72, 400)]*"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"anthropic_version": None}, "required key [anthropic_version] not found"),
        ({"anthropic_version": "2023-06-01"}, "anthropic_version"),
        ({"max_tokens": None}, "required key [max_tokens] not found"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"temperature": 1.5}, "temperature"),
        ({"inferenceConfig": {"maxTokens": 5}}, "extraneous key [inferenceConfig]"),
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "assistant", "content": "hi"}]}, "alternate"),
        ({"messages": [{"role": "user", "content": [{"document": {"format": "pdf"}}]}]}, "type"),
        (
            {"messages": [{"role": "user", "content": [{"type": "document", "source": {"type": "base64", "media_type": "image/png", "data": "eA=="}}]}]},
            "media_type",
        ),
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": " "}]}]}, "non-empty"),
    ],
)
def test_invoke_model_validates_the_messages_body_like_bedrock(harness: Callable[..., Harness], change: dict[str, Any], message: str) -> None:
    h = harness()
    body = messages_body()
    for key, value in change.items():
        if value is None:
            body.pop(key)
        else:
            body[key] = value
    with pytest.raises(ClientError) as exc:
        invoke(h, body)
    assert error_code(exc) == "ValidationException" and message in str(exc.value)


def test_more_than_five_documents_are_refused(harness: Callable[..., Harness]) -> None:
    h = harness()
    pages = [(n, page_pdf(f"Page {n}.")) for n in range(1, 7)]
    request = build_pages_request(chunk_index=0, pages=pages, config=CONFIG)
    with pytest.raises(ClientError) as exc:
        invoke(h, request.body())
    assert error_code(exc) == "ValidationException" and "at most 5 documents" in str(exc.value)
    assert "<!-- Page 5 -->" in invoke(h, build_pages_request(chunk_index=0, pages=pages[:5], config=CONFIG).body())["content"][0]["text"]


def test_more_than_100_pdf_pages_or_32_mb_are_refused(harness: Callable[..., Harness]) -> None:
    h = harness()
    body = messages_body()
    body["messages"][0]["content"][0]["source"]["data"] = base64.b64encode(make_pdf(101, lines_per_page=1)).decode()
    with pytest.raises(ClientError) as exc:
        invoke(h, body)
    assert error_code(exc) == "ValidationException" and "100 PDF pages" in str(exc.value)
    too_big = json.dumps(messages_body(system="x" * (MAX_REQUEST_BYTES + 1))).encode()
    with pytest.raises(ClientError) as exc:
        invoke(h, too_big)
    assert error_code(exc) == "ValidationException" and "too long" in str(exc.value)


def test_answer_faults_speak_the_messages_vocabulary(harness: Callable[..., Harness]) -> None:
    assert invoke(harness(faults="content_filter_rate=1"), messages_body())["stop_reason"] == "refusal"
    assert invoke(harness(faults="truncate_rate=1"), messages_body())["stop_reason"] == "max_tokens"
    cut = invoke(harness(), messages_body(max_tokens=2))
    assert cut["stop_reason"] == "max_tokens" and cut["content"][0]["text"] == "Hello fr"


def test_a_batch_job_of_invoke_model_records_is_answered_in_the_messages_shape(harness: Callable[..., Harness], s3: Any) -> None:
    h = harness()
    pages = {"m0c0p1": page_pdf("First record text."), "m0c0p2": image_page()}
    items = [
        {"recordId": rid, "modelInput": build_page_request(chunk_index=0, page_number=n, pdf_bytes=pdf, config=CONFIG).body()}
        for n, (rid, pdf) in enumerate(pages.items(), start=1)
    ]
    key = f"in/{uuid.uuid4().hex}.jsonl"
    put_jsonl(s3, key, items)
    arn = submit(h, f"s3://{BUCKET}/{key}", modelInvocationType="InvokeModel")
    assert h.wait_terminal(arn)["status"] == "Completed"
    files, manifest = output_of(s3, arn)
    outputs = {line["recordId"]: line["modelOutput"] for line in files[key.rsplit("/", 1)[-1] + ".out"]}
    assert outputs["m0c0p1"]["content"][0]["text"] == "First record text."
    assert outputs["m0c0p2"]["content"][0]["text"] == "*[Figure: 640×480 grayscale image at (50, 100)]*"
    assert outputs["m0c0p1"] == invoke(h, items[0]["modelInput"]), "batch and on-demand answer the same request alike"
    assert manifest is not None and manifest["successRecordCount"] == 2
    assert manifest["inputTokenCount"] == sum(o["usage"]["input_tokens"] for o in outputs.values())
    assert manifest["outputTokenCount"] == sum(o["usage"]["output_tokens"] for o in outputs.values())


def test_an_invoke_model_record_with_a_bad_body_is_an_error_line(harness: Callable[..., Harness], s3: Any) -> None:
    h = harness()
    good = build_page_request(chunk_index=0, page_number=1, pdf_bytes=page_pdf("Fine."), config=CONFIG).body()
    bad = {k: v for k, v in good.items() if k != "anthropic_version"}
    key = f"in/{uuid.uuid4().hex}.jsonl"
    put_jsonl(s3, key, [{"recordId": "ok", "modelInput": good}, {"recordId": "bad", "modelInput": bad}])
    arn = submit(h, f"s3://{BUCKET}/{key}", modelInvocationType="InvokeModel")
    assert h.wait_terminal(arn)["status"] == "PartiallyCompleted"
    lines = {line["recordId"]: line for line in output_of(s3, arn)[0][key.rsplit("/", 1)[-1] + ".out"]}
    assert "modelOutput" in lines["ok"] and "anthropic_version" in lines["bad"]["error"]["errorMessage"]
