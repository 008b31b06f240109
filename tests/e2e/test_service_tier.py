"""The Flex lane end to end on the offline stack (issue 22.10): a job with a deadline of hours on a
flex-capable emulated model converts at Flex, the calls Flex sheds go again at default, every page is
converted, and the ledger's tiers equal what the emulator served per tier."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.db.service_tiers import record_probe
from batchlane.runtime import services
from batchlane_dev.local.jobs import submit_pdf, wait_for_job
from batchlane_dev.local.pdfgen import make_pdf, page_phrase
from batchlane_dev.report import job_report

pytestmark = pytest.mark.slow

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
PAGES = 12
SETTINGS = {
    "BATCHLANE_FLEX_DISCOUNT": "0.5",
    "BATCHLANE_PAGES_PER_REQUEST": "1",
    "BATCH_CONVERSION_MIN_PAGES": "1",
    "BATCHLANE_BACKOFF_BASE_S": "0.01",
    "BATCHLANE_BACKOFF_MAX_S": "0.05",
}


def _tiers(job_id: str) -> dict[str, dict[str, int | Decimal]]:
    """The chunk ledger rows' serviceTiers, summed."""
    out: dict[str, dict[str, int | Decimal]] = {}
    for row in ledger.PgLedger(services().db).ledger_rows(job_id):
        for tier, part in row.metadata.get("serviceTiers", {}).items():
            into = out.setdefault(tier, {"pages": 0, "inputTokens": 0, "outputTokens": 0, "costUsd": Decimal(0)})
            for key in ("pages", "inputTokens", "outputTokens"):
                into[key] += int(part[key])
            into["costUsd"] += Decimal(part["costUsd"])
    return out


def test_a_deadline_of_hours_goes_flex_falls_back_to_default_when_flex_sheds_and_the_ledger_matches_each_tier(stack_factory):
    # Given a model the account serves at Flex (the doctor's probe recorded it) and a Flex rate configured,
    # on an account where Flex sheds a third of its calls
    stack = stack_factory(f"flex_models={MODEL},flex_throttle_rate=0.35", extra_env=SETTINGS)
    svc = services()
    record_probe(svc.db, {"modelId": MODEL, "serviceTier": "flex", "accepted": True})
    # When a job due in 6 hours (too soon for a batch turnaround) converts
    deadline = (datetime.now(UTC) + timedelta(hours=6)).isoformat()
    created = submit_pdf(svc, make_pdf(PAGES), name="flex.pdf", owner_id="flex-tests", options={"deadline": deadline})
    assert created["laneDecision"] == "on_demand"
    wait_for_job(svc, created["jobId"], timeout_s=300)
    # Then every page converted
    job = job_repo.PgJobs(svc.db).get_job(created["jobId"])
    assert (job.status, job.pages_failed, job.pages_converted) == ("completed", 0, PAGES)
    markdown = svc.store.get_bytes(job.markdown_key).decode()
    assert all(page_phrase(n, PAGES) in markdown for n in range(1, PAGES + 1))
    # and Flex served most pages, the shed ones went at default
    served = stack.bedrock.served_by_tier()
    assert served["flex"]["requests"] > 0 and served["flexThrottled"]["requests"] > 0
    assert served["default"]["requests"] == served["flexThrottled"]["requests"]  # each shed call, once more at default
    # and the ledger's tiers are what the emulator served per tier, priced at each tier's rate
    tiers = _tiers(job.id)
    assert tiers["flex"]["pages"] + tiers["default"]["pages"] == PAGES
    for tier in ("flex", "default"):
        assert (tiers[tier]["inputTokens"], tiers[tier]["outputTokens"]) == (served[tier]["inputTokens"], served[tier]["outputTokens"]), tier
        assert tiers[tier]["pages"] == served[tier]["requests"]
    rate = svc.prices.rate(MODEL, "flex")
    flex_usd = (rate[0] * int(tiers["flex"]["inputTokens"]) + rate[1] * int(tiers["flex"]["outputTokens"])) / Decimal(1_000_000)
    assert abs(tiers["flex"]["costUsd"] - flex_usd) <= Decimal("0.00001") * PAGES
    assert ledger.PgLedger(svc.db).job_total(job.id) == Decimal(job.total_cost_usd) == tiers["flex"]["costUsd"] + tiers["default"]["costUsd"]
    # and the demo's report shows the pages per tier
    report = job_report(svc, job.id)["on_demand"]["tiers"]
    assert {name: t["pages"] for name, t in report.items()} == {"default": tiers["default"]["pages"], "flex": tiers["flex"]["pages"]}


def test_without_a_flex_rate_the_same_job_stays_at_the_default_tier(stack_factory, monkeypatch):
    monkeypatch.delenv("BATCHLANE_FLEX_DISCOUNT", raising=False)  # no rate from an earlier test of this process either
    stack = stack_factory(f"flex_models={MODEL}", extra_env={k: v for k, v in SETTINGS.items() if k != "BATCHLANE_FLEX_DISCOUNT"})
    svc = services()
    record_probe(svc.db, {"modelId": MODEL, "serviceTier": "flex", "accepted": True})
    deadline = (datetime.now(UTC) + timedelta(hours=6)).isoformat()
    created = submit_pdf(svc, make_pdf(4), name="no-flex.pdf", owner_id="flex-tests", options={"deadline": deadline})
    wait_for_job(svc, created["jobId"], timeout_s=300)
    assert job_repo.PgJobs(svc.db).get_job(created["jobId"]).status == "completed"
    assert set(stack.bedrock.served_by_tier()) == {"default", "flexThrottled"}
    assert set(_tiers(created["jobId"])) == {"default"}


def test_the_few_records_a_batch_job_failed_are_converted_at_flex(stack_factory):
    """The retry of a few failed records: not worth a retry batch, not urgent either."""
    from batchlib import SMALL_LANE_ENV, assert_converted_whole, lanes, run_job

    stack = stack_factory(
        f"time_scale=36000,job_hours=0.5,record_error_rate=0.1,flex_models={MODEL}",
        extra_env={**SMALL_LANE_ENV, "BATCHLANE_FLEX_DISCOUNT": "0.5", "BATCHLANE_PAGES_PER_REQUEST": "1"},
    )
    record_probe(services().db, {"modelId": MODEL, "serviceTier": "flex", "accepted": True})
    report = run_job()
    results = assert_converted_whole(report["job_id"])
    [lane] = lanes(report["job_id"])
    assert 0 < lane["fallback_count"] < 10
    fallback = [p for p in results.values() if p.served_by == "on_demand"]
    assert len(fallback) == lane["fallback_count"] and {p.service_tier for p in fallback} == {"flex"}
    assert _tiers(report["job_id"])["flex"]["pages"] == len(fallback) == stack.bedrock.served_by_tier()["flex"]["requests"]
    assert report["on_demand"]["tiers"] == {"flex": {"pages": len(fallback), "cost_usd": report["on_demand"]["cost_usd"]}}
