"""One acceptance rule for both lanes and both stop-reason vocabularies; one answer parser.

Stop reasons: Anthropic "Stop reasons and fallback" (Messages API) and the Bedrock
Converse API reference. A truncation keeps its text under the truncated marker; a
refusal, a tool turn or a filtered answer is a visible failure.
"""

import pytest

from batchlane.claude import ModelAnswer, PageRequest, ReadTimeoutPolicy, answer_from_messages, build_page_request, page_result
from batchlane.claude.request import REQUEST_FORMAT, ConverterConfig
from batchlane.domain.acceptance import judge
from batchlane.domain.cost import PriceTable, Usage
from batchlane.domain.markdown import PageText, render_page
from batchlane.domain.prompt import prompt_hash

PRICES = PriceTable({"m": {"input_per_mtok": 3.0, "output_per_mtok": 15.0}})
CONFIG = ConverterConfig(model_id="m", max_tokens=1000, temperature=0.0)

TRUNCATIONS = ["max_tokens", "model_context_window_exceeded"]
REFUSALS = ["refusal", "pause_turn", "tool_use", "guardrail_intervened", "content_filtered", "malformed_model_output", "malformed_tool_use"]


@pytest.mark.parametrize("stop_reason", TRUNCATIONS)
def test_a_truncated_page_keeps_its_text_under_the_truncated_marker(stop_reason):
    result = page_result(4, "m", ModelAnswer("the first half of the page", stop_reason, Usage(100, 1000), "batch"), PRICES)
    assert (result.status, result.markdown, result.reason) == ("truncated", "the first half of the page", stop_reason)
    rendered = render_page(PageText(4, result.status, result.markdown, result.reason))
    assert "the first half of the page" in rendered and "<!-- Page 4: truncated -->" in rendered
    assert not judge("the first half of the page", stop_reason).accepted  # never a batch-accepted record either


@pytest.mark.parametrize("stop_reason", REFUSALS)
def test_a_refused_or_unfinished_answer_is_a_visible_failure(stop_reason):
    result = page_result(4, "m", ModelAnswer("I can't help with that.", stop_reason, Usage(100, 10), "on_demand"), PRICES)
    assert (result.status, result.reason) == ("failed", f"stop_reason={stop_reason}")
    assert result.cost_usd > 0, "a refused on-demand answer was still paid for"


@pytest.mark.parametrize("stop_reason", ["end_turn", "stop_sequence"])
def test_a_finished_answer_is_accepted(stop_reason):
    assert judge("# Page", stop_reason).accepted
    assert not judge("  ", stop_reason).accepted


def test_the_parser_reads_the_messages_answer_text_blocks_and_usage():
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "# Title\n\n"}, {"type": "tool_use", "id": "t", "name": "x", "input": {}}, {"type": "text", "text": "Body."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3100, "output_tokens": 7},
    }
    answer = answer_from_messages(body, served_by="batch")
    assert answer == ModelAnswer("# Title\n\nBody.", "end_turn", Usage(3100, 7), "batch")


def test_the_parser_still_reads_a_converse_answer_so_an_old_batch_job_is_billed_right():
    body = {"output": {"message": {"content": [{"text": "old"}]}}, "stopReason": "max_tokens", "usage": {"inputTokens": 5, "outputTokens": 6}}
    assert answer_from_messages(body, served_by="batch") == ModelAnswer("old", "max_tokens", Usage(5, 6), "batch")


def test_the_prompt_hash_covers_the_request_format_so_an_old_converse_answer_is_never_reused():
    request = build_page_request(chunk_index=0, page_number=1, pdf_bytes=b"%PDF", config=CONFIG)
    fields = {"model_id": "m", "system": CONFIG.system, "text": CONFIG.instruction, "max_tokens": 1000, "temperature": 0.0}
    assert request.prompt_hash == prompt_hash(**fields, request_format=REQUEST_FORMAT)
    assert request.prompt_hash != prompt_hash(**fields, request_format="converse/document/text-extraction")


def test_a_request_estimates_what_a_timed_out_call_may_have_billed():
    request = PageRequest("c0-p1-3", "m", "s" * 40, "t" * 40, 8192, 0.0, (("page-1", b"a"), ("page-2", b"b"), ("page-3", b"c")), (1, 2, 3))
    assert request.estimated_input_tokens() == 3 * 3000 + 20


@pytest.mark.parametrize(
    ("max_tokens", "remaining", "expected"),
    [
        (8192, None, 465.0),  # 60 s to the first token + 8,192 tokens at 20 tokens/s, rounded down to 15 s
        (1000, None, 105.0),
        (8192, 130.0, 120.0),  # never past the invocation's end
        (8192, 42.7, 42.0),
        (8192, 0.5, None),  # no time left: do not send at all
    ],
)
def test_the_read_timeout_follows_the_request_size_and_the_time_left(max_tokens, remaining, expected):
    assert ReadTimeoutPolicy().for_request(max_tokens, remaining) == expected


def test_the_read_timeout_is_capped_at_awss_guidance():
    assert ReadTimeoutPolicy(min_tokens_per_s=1).for_request(64_000) == 3600.0
