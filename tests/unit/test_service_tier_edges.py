"""Service tiers at their edges (domain/service_tier.py): a model AWS documents as taking Flex, deadlines written
with a zone, without one or with a Z, one exactly at the urgency bound, and a chunk's breakdown over several pages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from batchlane.claude import ModelAnswer
from batchlane.claude.page import page_result
from batchlane.domain import service_tier as tiers
from batchlane.domain.cost import PriceTable, Usage
from batchlane.domain.prices import default_prices

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
NOW = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)


def _reason(options: dict[str, object], *, lane_reason: str | None = None) -> str | None:
    """The reason with the defaults a chunk processor leaves unsaid (not process-now, not batch-primed)."""
    return tiers.flex_reason(options, lane_reason=lane_reason, now=NOW, min_deadline_hours=1.0, retrying=False)


def test_a_model_aws_documents_as_taking_flex_gets_it_once_a_rate_is_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(tiers.FLEX_DOCUMENTED, "anthropic.claude-sonnet-4-5-20250929-v1:0", tiers.SUPPORTED)

    assert tiers.flex_for_model(MODEL, probe=None, rate_configured=True) == tiers.FlexVerdict(True, "documented")


def test_a_model_the_table_does_not_list_is_not_documented() -> None:
    assert tiers.documented("amazon.nova-pro-v1:0") == tiers.NOT_DOCUMENTED
    assert tiers.documented("eu.amazon.nova-pro-v1:0") == tiers.NOT_DOCUMENTED


def test_work_that_left_the_pool_goes_flex_unless_the_caller_says_process_now_or_batch_primed() -> None:
    assert _reason({}, lane_reason="pool_too_small") == "pool_too_small"


def test_work_sent_on_demand_for_its_deadline_goes_flex_even_if_the_job_no_longer_carries_one() -> None:
    assert _reason({}, lane_reason="deadline") == "deadline"


def test_a_deadline_exactly_at_the_urgency_bound_is_not_urgent() -> None:
    assert _reason({"deadline": (NOW + timedelta(hours=1)).isoformat()}) == "deadline"


def test_a_deadline_written_with_z_is_read_as_utc() -> None:
    assert _reason({"deadline": "2026-12-04T16:00:00Z"}) == "deadline"
    assert _reason({"deadline": "2026-12-04T10:30:00Z"}) is None


def test_a_deadline_with_another_zone_is_compared_in_that_zone() -> None:
    # 12:30 at +02:00 is 10:30 UTC: half an hour away, urgent
    assert _reason({"deadline": "2026-12-04T12:30:00+02:00"}) is None


def test_a_deadline_without_a_zone_is_utc() -> None:
    assert _reason({"deadline": "2026-12-04T16:00:00"}) == "deadline"
    assert _reason({"deadline": "2026-12-04T10:30:00"}) is None


def test_a_chunks_tier_breakdown_adds_up_every_on_demand_page_and_skips_batch_answered_ones() -> None:
    prices = PriceTable(default_prices())
    batch = page_result(1, MODEL, ModelAnswer("# one", "end_turn", Usage(500, 50), "batch"), prices)
    pages = [page_result(n, MODEL, ModelAnswer(f"# {n}", "end_turn", Usage(1000, 100), "on_demand"), prices) for n in (2, 3, 4)]

    breakdown = tiers.tier_breakdown([batch, *pages], {})

    one = pages[0].cost_usd
    assert breakdown == {"default": {"pages": 3, "inputTokens": 3000, "outputTokens": 300, "costUsd": str(3 * one)}}
    assert Decimal(breakdown["default"]["costUsd"]) > 0
