"""Bedrock service tiers (issue 22.10): which work goes Flex, which models may take it, the Flex-first
transport falling back to default when Flex sheds, and the Flex rate only where the operator set one."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from batchlane.claude import ConverterConfig, ModelAnswer, ModelCallError, build_page_request
from batchlane.claude.page import page_result
from batchlane.claude.tiers import FlexTransport
from batchlane.claude.transports import OnDemandTransport
from batchlane.domain import service_tier as tiers
from batchlane.domain.cost import PriceTable, Usage
from batchlane.domain.prices import default_prices
from batchlane.ports import ModelResponse

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
NOW = datetime(2026, 12, 2, 5, 0, tzinfo=UTC)


def _reason(
    options: dict[str, object], *, lane_reason: str | None = None, retrying: bool = False, process_now: bool = False, batch_primed: bool = False
) -> str | None:
    return tiers.flex_reason(
        options, lane_reason=lane_reason, retrying=retrying, now=NOW, min_deadline_hours=1.0, process_now=process_now, batch_primed=batch_primed
    )


def _in(hours: float) -> str:
    return (NOW + timedelta(hours=hours)).isoformat()


def test_work_that_cannot_wait_a_batch_turnaround_but_is_not_urgent_goes_flex() -> None:
    assert _reason({"deadline": _in(6)}) == "deadline"  # a deadline of hours, too near for batch
    assert _reason({}, lane_reason="pool_too_small") == "pool_too_small"
    assert _reason({}, retrying=True) == "retry"  # a retry of a few failed pages
    assert _reason({}, batch_primed=True) == "batch_fallback"  # the records a batch job did not answer


def test_urgent_work_and_plain_interactive_work_stay_at_the_default_tier() -> None:
    assert _reason({}) is None
    assert _reason({"deadline": _in(0.5)}) is None  # due within the hour: Flex may take minutes and sheds first
    assert _reason({"deadline": _in(6)}, process_now=True) is None
    assert _reason({}, retrying=True, process_now=True) is None


def test_todays_claude_models_take_flex_only_after_the_probe_accepted_it_and_a_rate_is_configured() -> None:
    assert tiers.documented(MODEL) == tiers.NOT_DOCUMENTED
    assert tiers.documented("global.anthropic.claude-haiku-4-5-20251001-v1:0") == tiers.NOT_DOCUMENTED
    assert tiers.flex_for_model(MODEL, probe=None, rate_configured=True) == tiers.FlexVerdict(False, "not_documented")
    assert tiers.flex_for_model(MODEL, probe=True, rate_configured=False) == tiers.FlexVerdict(False, "rate_missing")
    assert tiers.flex_for_model(MODEL, probe=False, rate_configured=True) == tiers.FlexVerdict(False, "probe_refused")
    assert tiers.flex_for_model(MODEL, probe=True, rate_configured=True) == tiers.FlexVerdict(True, "probe_accepted")


def test_no_flex_price_is_invented_the_operator_sets_it() -> None:
    plain = PriceTable(default_prices())
    assert plain.flex_rate(MODEL) is None
    with pytest.raises(KeyError, match="Flex rate"):
        plain.cost(MODEL, Usage(1_000_000, 0), tier="flex")
    discounted = PriceTable(default_prices(), flex_discount=Decimal("0.5"))
    assert discounted.cost(MODEL, Usage(1_000_000, 1_000_000), tier="flex") == Decimal("9.900000")  # half of 3.30 + 16.50
    own = PriceTable({MODEL: {"input_per_mtok": 3.3, "output_per_mtok": 16.5, "flex_input_per_mtok": 2.0, "flex_output_per_mtok": 10.0}})
    assert own.rate(MODEL, "flex") == (Decimal("2.0"), Decimal("10.0"))


class _Bedrock:
    """Answers like InvokeModel would: ``shed`` flex calls are throttled first."""

    def __init__(self, *, shed: str | None = None) -> None:
        self.tiers: list[str | None] = []
        self._shed = shed

    def send(self, request):  # type: ignore[no-untyped-def]
        self.tiers.append(request.service_tier)
        if request.service_tier == "flex" and self._shed:
            raise ModelCallError(self._shed, "flex not served now", retryable=True)
        tier = request.service_tier or "default"
        return ModelAnswer("# page", "end_turn", Usage(1_000_000, 0), "on_demand", tier)


def _request():  # type: ignore[no-untyped-def]
    config = ConverterConfig(model_id=MODEL, max_tokens=1024, temperature=0.0)
    return build_page_request(chunk_index=0, page_number=1, pdf_bytes=b"%PDF-1.4", config=config)


def test_the_flex_lane_sends_serviceTier_flex_on_invoke_model() -> None:
    bedrock = _Bedrock()
    answer = FlexTransport(bedrock).send(_request())
    assert bedrock.tiers == ["flex"] and answer.service_tier == "flex"
    assert _request().with_tier("flex").invoke_kwargs()["serviceTier"] == "flex"
    assert "serviceTier" not in _request().invoke_kwargs()  # the default lane sends what it always sent


@pytest.mark.parametrize("code", ["ThrottlingException", "ServiceUnavailableException"])
def test_a_flex_throttle_sends_the_same_request_at_default(code: str) -> None:
    bedrock = _Bedrock(shed=code)
    transport = FlexTransport(bedrock)
    answer = transport.send(_request())
    assert bedrock.tiers == ["flex", None] and answer.service_tier == "default" and transport.fell_back == 1


def test_flex_refused_for_the_model_falls_back_and_is_not_tried_again() -> None:
    class Refusing(_Bedrock):
        def send(self, request):  # type: ignore[no-untyped-def]
            if request.service_tier == "flex":
                self.tiers.append("flex")
                raise ModelCallError("ValidationException", "flex is not available for this model", retryable=False)
            return super().send(request)

    bedrock = Refusing()
    transport = FlexTransport(bedrock)
    transport.send(_request())
    transport.send(_request())
    assert bedrock.tiers == ["flex", None, None]


def test_a_body_error_is_not_taken_for_a_tier_refusal() -> None:
    class Broken(_Bedrock):
        def send(self, request):  # type: ignore[no-untyped-def]
            self.tiers.append(request.service_tier)
            raise ModelCallError("ValidationException", "Malformed input request", retryable=False)

    bedrock = Broken()
    transport = FlexTransport(bedrock)
    with pytest.raises(ModelCallError, match="Malformed"):
        transport.send(_request())
    with pytest.raises(ModelCallError):
        transport.send(_request())
    assert bedrock.tiers == ["flex", None, "flex", None]  # default failed too: Flex is not blamed


def test_a_read_timeout_on_flex_is_not_resent() -> None:
    class Slow(_Bedrock):
        def send(self, request):  # type: ignore[no-untyped-def]
            self.tiers.append(request.service_tier)
            raise ModelCallError("ReadTimeout", "no answer", retryable=True, possibly_billed=Usage(1, 1))

    bedrock = Slow()
    with pytest.raises(ModelCallError):
        FlexTransport(bedrock).send(_request())
    assert bedrock.tiers == ["flex"]  # it may be billed: the caller books it before anything resends


def test_a_flex_page_is_priced_at_the_flex_rate_and_the_breakdown_says_so() -> None:
    prices = PriceTable(default_prices(), flex_discount=Decimal("0.5"))
    flex = page_result(1, MODEL, ModelAnswer("# one", "end_turn", Usage(1_000_000, 0), "on_demand", "flex"), prices)
    default = page_result(2, MODEL, ModelAnswer("# two", "end_turn", Usage(1_000_000, 0), "on_demand"), prices)
    assert (flex.service_tier, flex.cost_usd) == ("flex", Decimal("1.650000"))
    assert (default.service_tier, default.cost_usd) == ("default", Decimal("3.300000"))
    breakdown = tiers.tier_breakdown([flex, default], {"default": prices.rate(MODEL), "flex": prices.rate(MODEL, "flex")})
    assert breakdown["flex"] == {
        "pages": 1,
        "inputTokens": 1_000_000,
        "outputTokens": 0,
        "costUsd": "1.650000",
        "inputPerMtok": "1.65",
        "outputPerMtok": "8.25",
    }
    assert breakdown["default"]["pages"] == 1 and breakdown["default"]["costUsd"] == "3.300000"


class _Runtime:
    """A ModelRuntime that answers at the tier it chooses, as Bedrock's response header says it (ports.ModelResponse)."""

    def __init__(self, served: str | None) -> None:
        self.served, self.asked = served, []

    def invoke_model(self, request, *, read_timeout):  # type: ignore[no-untyped-def]
        self.asked.append(request.get("serviceTier"))
        body = {"content": [{"type": "text", "text": "# page"}], "stop_reason": "end_turn", "usage": {"input_tokens": 1_000_000, "output_tokens": 0}}
        return ModelResponse(json.dumps(body).encode(), self.served)


@pytest.mark.parametrize(("served", "booked"), [("default", "default"), ("flex", "flex"), (None, "default")])
def test_an_answer_is_priced_at_the_tier_that_served_it_not_the_one_asked_for(served: str | None, booked: str) -> None:
    # Issue 38.6: InvokeModel's response says which tier served it (serviceTier, X-Amzn-Bedrock-Service-Tier)
    runtime = _Runtime(served)
    answer = OnDemandTransport(runtime).send(_request().with_tier("flex"))  # type: ignore[arg-type]
    assert runtime.asked == ["flex"] and answer.service_tier == booked
    prices = PriceTable({MODEL: {"input_per_mtok": 3.0, "output_per_mtok": 15.0}}, flex_discount=Decimal("0.5"))
    result = page_result(1, MODEL, answer, prices)
    assert result.cost_usd == (Decimal("1.5") if booked == "flex" else Decimal("3")) and result.service_tier == booked
