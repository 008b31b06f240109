"""A slow answer is paid once: a read timeout is booked as billed and never re-sent unbooked.

Against the offline emulator over HTTP, with its latency fault (``converse_latency_ms``)
making every answer slower than the read timeout. Bedrock bills a call whose answer we
stopped waiting for; before this change the transport treated the timeout as retryable
and sent the same request again at once, and the abandoned call was booked nowhere.
"""

from __future__ import annotations

from decimal import Decimal

import boto3
import pytest
from botocore.config import Config
from ondemand_fakes import PRICES, RecordingLimiter, chunk_pages

from batchlane.aws.bedrock_runtime import BedrockRuntime
from batchlane.claude import ConverterConfig, ModelCallError, OnDemandTransport, ReadTimeoutPolicy, build_page_request
from batchlane.domain.cost import Usage
from batchlane.ondemand import BackoffPolicy, CoverageRule, GovernedTransport, GroupConverter, PlannedPage, Spend
from batchlane_dev.local.bedrock import BedrockEmulator, parse_faults

CONFIG = ConverterConfig(model_id="m", max_tokens=8192, temperature=0.0)
CREDS = {"region_name": "us-east-1", "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


@pytest.fixture
def slow_bedrock():
    emulator = BedrockEmulator(s3_client_factory=lambda: None, faults=parse_faults("converse_latency_ms=1500"))
    url = emulator.start()
    made: dict[float, object] = {}

    def client_for(seconds: float):
        config = Config(retries={"mode": "standard", "max_attempts": 0}, read_timeout=seconds, connect_timeout=5)
        return made.setdefault(seconds, boto3.client("bedrock-runtime", endpoint_url=url, config=config, **CREDS))

    yield emulator, client_for, made
    emulator.stop()


def test_a_timed_out_call_is_booked_at_its_estimate_and_not_sent_again(slow_bedrock):
    emulator, client_for, made = slow_bedrock
    page = chunk_pages(1)[0]
    # The invocation ends 1 s from "now" (an injected clock): the read timeout is 1 s (whole seconds, the least it sends with), the answer takes 1.5 s.
    inner = OnDemandTransport(BedrockRuntime(client_for), timeouts=ReadTimeoutPolicy(), ends_at=1.0, clock=lambda: 0.0)
    governed = GovernedTransport(inner, RecordingLimiter(), BackoffPolicy(base_s=0.01, max_s=0.01, budget_s=1e9, max_attempts=5), sleep=lambda s: None)
    spend = Spend()
    converter = GroupConverter(chunk_index=0, config=CONFIG, transport=governed, prices=PRICES, coverage=CoverageRule(threshold=0), spend=spend)

    results = converter.convert([PlannedPage(page, 500)])

    assert list(made) == [1.0], "the read timeout was sized from the time left"
    assert emulator.stats["invoke_requests"] == 1, "the request that may still be running was not sent again"
    result = results[page.number]
    assert (result.status, result.reason, result.retryable) == ("failed", "ReadTimeout", True)  # the chunk retries it later, booked
    request = build_page_request(chunk_index=0, page_number=page.number, pdf_bytes=page.pdf_bytes, config=CONFIG)
    booked = Usage(request.estimated_input_tokens(), CONFIG.max_tokens)
    assert spend.usage == booked and spend.counts["readTimeouts"] == 1
    assert spend.cost == PRICES.cost("m", booked) > Decimal("0.12"), "booked as a full max_tokens answer"
    assert governed.throttled == 0 and governed.exhausted == 0


def test_a_read_timeout_sized_for_the_request_waits_for_a_slow_answer(slow_bedrock):
    emulator, client_for, made = slow_bedrock
    page = chunk_pages(1)[0]
    inner = OnDemandTransport(BedrockRuntime(client_for), timeouts=ReadTimeoutPolicy())  # 465 s for 8,192 tokens: minutes, not 2
    answer = inner.send(build_page_request(chunk_index=0, page_number=page.number, pdf_bytes=page.pdf_bytes, config=CONFIG))
    assert answer.stop_reason == "end_turn" and answer.text and list(made) == [465.0]
    assert emulator.stats["invoke_requests"] == 1


def test_no_request_is_sent_when_the_invocation_has_no_time_left_to_wait(slow_bedrock):
    emulator, client_for, made = slow_bedrock
    page = chunk_pages(1)[0]
    inner = OnDemandTransport(BedrockRuntime(client_for), ends_at=0.5, clock=lambda: 0.0)
    calls = []

    class Counting:
        def send(self, request):
            calls.append(request)
            return inner.send(request)

    governed = GovernedTransport(Counting(), RecordingLimiter(), BackoffPolicy(base_s=0.01, max_s=0.01, budget_s=1e9, max_attempts=5), sleep=lambda s: None)
    with pytest.raises(ModelCallError) as caught:
        governed.send(build_page_request(chunk_index=0, page_number=1, pdf_bytes=page.pdf_bytes, config=CONFIG))
    assert caught.value.code == "InvocationEnding" and caught.value.retryable and caught.value.possibly_billed is None
    assert len(calls) == 1 and emulator.stats["invoke_requests"] == 0 and not made, "nothing sent, nothing to book, no retry in place"
