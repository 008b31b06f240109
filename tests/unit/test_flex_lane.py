"""filejob/service_tier_choice.py: the Flex gate reads the verdict's fields (a FlexVerdict object is always truthy)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from batchlane.claude.tiers import FlexTransport
from batchlane.domain import service_tier as tiers
from batchlane.domain.cost import PriceTable
from batchlane.filejob import service_tier_choice

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"  # not documented for Flex (domain/service_tier.py)
FAR = (datetime.now(UTC) + timedelta(hours=72)).isoformat()  # a deadline Flex may serve
NEAR = (datetime.now(UTC) + timedelta(hours=1)).isoformat()  # closer than the minimum: urgent


class Probes:
    """The ServiceTierRepository port: the doctor's recorded probe and the job's lane reason; counts its reads."""

    def __init__(self, probe: bool | None, lane_reason: str | None = None) -> None:
        self.probe, self.lane_reason, self.reads = probe, lane_reason, []

    def probed(self, model_id: str, tier: str = "flex") -> bool | None:
        self.reads.append(("probed", model_id, tier))
        return self.probe

    def record_probe(self, model_id: str, tier: str, *, accepted: bool, detail: str) -> None:
        raise AssertionError("the gate never records a probe")

    def job_lane_reason(self, job_id: str) -> str | None:
        self.reads.append(("lane_reason", job_id))
        return self.lane_reason


def _svc(*, flex: bool) -> Any:
    rates = {"input_per_mtok": 3.0, "output_per_mtok": 15.0, **({"flex_input_per_mtok": 1.5, "flex_output_per_mtok": 7.5} if flex else {})}
    return SimpleNamespace(prices=PriceTable({MODEL: rates}), settings=SimpleNamespace(batchlane_flex_min_deadline_hours=6.0))


def _job(options: dict[str, Any] | None, *, process_now: bool = False, batch_primed: bool = False) -> Any:
    """The JobRow fields the gate reads."""
    return SimpleNamespace(id="j1", model_id=MODEL, options=options, process_now=process_now, batch_primed=batch_primed)


def test_no_flex_rate_keeps_the_default_tier_and_reads_nothing() -> None:
    probes = Probes(True, "pool_too_small")
    assert service_tier_choice.flex_lane(_svc(flex=False), probes, _job(options={"deadline": FAR}), retrying=True) is None
    assert probes.reads == []


@pytest.mark.parametrize("probe", [False, None])  # refused by the doctor's probe; never probed and not documented
def test_a_model_the_verdict_refuses_never_goes_flex_even_with_a_rate_and_a_far_deadline(probe: bool | None) -> None:
    # The verdict is a dataclass: testing it instead of its `on` field would let every such model go Flex
    probes = Probes(probe, "pool_too_small")
    assert service_tier_choice.flex_lane(_svc(flex=True), probes, _job(options={"deadline": FAR}), retrying=True) is None
    assert probes.reads == [("probed", MODEL, "flex")]


def test_a_model_documented_for_flex_goes_flex_without_a_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(tiers.FLEX_DOCUMENTED, tiers.base_model(MODEL), tiers.SUPPORTED)
    assert service_tier_choice.flex_lane(_svc(flex=True), Probes(None), _job(options={"deadline": FAR}), retrying=False) == "deadline"


@pytest.mark.parametrize(
    ("job", "lane_reason", "retrying", "reason"),
    [
        (_job(options={"deadline": FAR}), None, False, "deadline"),
        (_job(options={}), "pool_too_small", False, "pool_too_small"),
        (_job(options=None), None, True, "retry"),
        (_job(options={}, batch_primed=True), None, False, "batch_fallback"),
        (_job(options={"deadline": NEAR}), "pool_too_small", True, None),  # urgent: default tier
        (_job(options={"deadline": FAR}, process_now=True), None, True, None),  # process now: default tier
        (_job(options={}), None, False, None),  # nothing says it can wait
    ],
)
def test_an_accepted_model_goes_flex_for_the_jobs_own_reason(job: Any, lane_reason: str | None, retrying: bool, reason: str | None) -> None:
    probes = Probes(True, lane_reason)
    assert service_tier_choice.flex_lane(_svc(flex=True), probes, job, retrying=retrying) == reason
    assert ("lane_reason", "j1") in probes.reads


def test_with_flex_wraps_the_transport_only_when_there_is_a_reason() -> None:
    raw = SimpleNamespace(send=lambda request: None)
    assert service_tier_choice.with_flex(None, raw) is raw  # type: ignore[arg-type]
    wrapped = service_tier_choice.with_flex("deadline", raw)  # type: ignore[arg-type]
    assert isinstance(wrapped, FlexTransport) and wrapped._inner is raw
