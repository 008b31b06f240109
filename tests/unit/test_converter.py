"""The page converter with in-memory transports (no network)."""

import json
from decimal import Decimal

from batchlane.claude import (
    CaptureTransport,
    ConverterConfig,
    ModelAnswer,
    ModelCallError,
    PrimedResult,
    PrimedTransport,
    build_page_request,
    convert_page,
)
from batchlane.domain.cost import PriceTable, Usage
from batchlane.pdf.split import Page

PRICES = PriceTable({"m": {"input_per_mtok": 3.0, "output_per_mtok": 15.0}, "m2": {"input_per_mtok": 1.0, "output_per_mtok": 5.0}})
CONFIG = ConverterConfig(model_id="m", max_tokens=1000, temperature=0.0)
PAGE = Page(number=12, chunk_index=0, pdf_bytes=b"%PDF-one-page", blank=False)


class ScriptedTransport:
    """Answers with a fixed response and remembers what it was sent."""

    def __init__(self, answer: ModelAnswer | Exception) -> None:
        self.answer = answer
        self.sent = []

    def send(self, request):
        self.sent.append(request)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_request_is_the_anthropic_messages_body_with_the_page_as_a_base64_pdf_document():
    request = build_page_request(chunk_index=2, page_number=101, pdf_bytes=b"PDF", config=CONFIG)
    body = request.body()
    assert request.record_id == "c2-p101"
    assert body == {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 1000,
        "temperature": 0.0,
        "system": CONFIG.system,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "UERG"}, "title": "page-101"},
                    {"type": "text", "text": CONFIG.instruction},
                ],
            }
        ],
    }
    # the batch record's modelInput is the same body; on-demand sends it as InvokeModel's JSON body
    assert request.model_input() == body
    kwargs = request.invoke_kwargs()
    assert kwargs["modelId"] == "m" and kwargs["contentType"] == kwargs["accept"] == "application/json"
    assert json.loads(kwargs["body"]) == body


def test_prompt_hash_ignores_pdf_bytes_but_not_the_prompt():
    a = build_page_request(chunk_index=0, page_number=1, pdf_bytes=b"A", config=CONFIG)
    b = build_page_request(chunk_index=0, page_number=1, pdf_bytes=b"B", config=CONFIG)
    c = build_page_request(chunk_index=0, page_number=1, pdf_bytes=b"A", config=ConverterConfig("m", 1000, 0.0, instruction="other"))
    assert a.prompt_hash == b.prompt_hash != c.prompt_hash


def test_on_demand_answer_is_accepted_and_priced():
    transport = ScriptedTransport(ModelAnswer("# Page", "end_turn", Usage(1000, 100), "on_demand"))
    result = convert_page(PAGE, CONFIG, transport, PRICES)
    assert (result.status, result.markdown, result.served_by) == ("converted", "# Page", "on_demand")
    assert result.cost_usd == Decimal("0.004500")


def test_blank_page_costs_no_call():
    transport = ScriptedTransport(AssertionError("must not be called"))
    result = convert_page(Page(1, 0, b"", blank=True), CONFIG, transport, PRICES)
    assert result.status == "blank" and not transport.sent and result.cost_usd == 0


def test_refusals_and_errors_become_visible_failures():
    filtered = convert_page(PAGE, CONFIG, ScriptedTransport(ModelAnswer("", "content_filtered", Usage(10, 0), "on_demand")), PRICES)
    assert filtered.status == "failed" and filtered.reason == "stop_reason=content_filtered"
    throttled = convert_page(PAGE, CONFIG, ScriptedTransport(ModelCallError("ThrottlingException", "slow down", retryable=True)), PRICES)
    assert throttled.status == "failed" and throttled.retryable and throttled.reason == "ThrottlingException"


def test_truncated_single_page_keeps_its_text():
    result = convert_page(PAGE, CONFIG, ScriptedTransport(ModelAnswer("half a page", "max_tokens", Usage(10, 1000), "on_demand")), PRICES)
    assert (result.status, result.markdown) == ("truncated", "half a page")


def test_capture_records_the_exact_on_demand_request():
    capture = CaptureTransport()
    result = convert_page(PAGE, CONFIG, capture, PRICES)
    assert result.status == "captured"
    assert capture.requests[0] == build_page_request(chunk_index=0, page_number=12, pdf_bytes=PAGE.pdf_bytes, config=CONFIG)


def _primed_for(config: ConverterConfig, text: str = "from batch") -> PrimedResult:
    request = build_page_request(chunk_index=0, page_number=12, pdf_bytes=b"anything", config=config)
    return PrimedResult(request.record_id, config.model_id, request.prompt_hash, text, "end_turn", 900, 90)


def test_primed_serves_a_matching_batch_result_at_no_chunk_cost():
    fallback = ScriptedTransport(AssertionError("must not be called"))
    primed = PrimedTransport({"c0-p12": _primed_for(CONFIG)}, fallback)
    result = convert_page(PAGE, CONFIG, primed, PRICES)
    assert (result.status, result.markdown, result.served_by, result.cost_usd) == ("converted", "from batch", "batch", 0)
    assert primed.served == 1


def test_primed_mismatch_costs_money_never_correctness():
    stale = _primed_for(ConverterConfig("m", 1000, 0.0, instruction="an older prompt"), text="stale")
    other_model = _primed_for(ConverterConfig("m2", 1000, 0.0), text="other model")
    for primed_result in (stale, other_model):
        fallback = ScriptedTransport(ModelAnswer("fresh", "end_turn", Usage(100, 10), "on_demand"))
        primed = PrimedTransport({"c0-p12": primed_result}, fallback)
        result = convert_page(PAGE, CONFIG, primed, PRICES)
        assert (result.markdown, result.served_by) == ("fresh", "on_demand")
        assert result.cost_usd > 0 and primed.mismatched == 1 and len(fallback.sent) == 1


def test_the_body_json_is_json_dumps_byte_for_byte():
    """The request body and the batch record place each page's base64 unscanned; the bytes are json.dumps's."""
    import base64
    import os

    tricky = ConverterConfig("m", 1000, 0.5, instruction='quote " backslash \\ é \u2028 \x00base64 0\x00 end', system="système\n\ttab")
    for config in (CONFIG, tricky):
        for pdf_bytes in (b"", b"PDF", os.urandom(50_001)):
            request = build_page_request(chunk_index=1, page_number=3, pdf_bytes=pdf_bytes, config=config)
            assert request.body_json() == json.dumps(request.body(), separators=(",", ":")).encode()
            assert request.invoke_kwargs()["body"] == request.body_json()
            parts = request.body_json_parts()
            assert b"".join(parts) == request.body_json()
            if config is CONFIG and pdf_bytes:  # the page's base64 is one piece, as b64encode made it
                assert base64.b64encode(pdf_bytes) in parts
