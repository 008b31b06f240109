"""The budget rules (domain/budget.py): caps, the budget check, the worst-case hold, the raised hold."""

from __future__ import annotations

from decimal import Decimal

import pytest

from batchlane.domain.budget import Limits, Standing, check_hold, check_new_job, raised_hold, worst_case_usage
from batchlane.domain.errors import BudgetExceeded, LimitReached

LIMITS = Limits(usd_per_month=Decimal("10"), max_live_jobs=2, max_live_pages=100)
PAGE = {"max_tokens": 8192, "scan_tokens": 1200, "reask": False}


def test_a_new_job_needs_a_live_place_and_budget_left() -> None:
    check_new_job(LIMITS, Standing(Decimal("9.99"), 1, 50))
    with pytest.raises(LimitReached) as caps:
        check_new_job(LIMITS, Standing(Decimal(0), 2, 0))
    assert caps.value.error_id == "LIVE_JOBS_LIMIT"
    with pytest.raises(BudgetExceeded):
        check_new_job(LIMITS, Standing(Decimal("10"), 0, 0))


def test_the_hold_must_fit_what_is_left_and_the_pages_the_cap() -> None:
    check_hold(LIMITS, Standing(Decimal("4"), 1, 40), hold_usd=Decimal("6"), pages=60)
    with pytest.raises(BudgetExceeded):
        check_hold(LIMITS, Standing(Decimal("4"), 1, 40), hold_usd=Decimal("6.01"), pages=10)
    with pytest.raises(LimitReached) as pages:
        check_hold(LIMITS, Standing(Decimal(0), 1, 40), hold_usd=Decimal(0), pages=61)
    assert pages.value.error_id == "LIVE_PAGES_LIMIT"


def test_the_worst_case_grows_with_the_text_and_is_capped_per_page() -> None:
    sparse = worst_case_usage(pages=10, blank=0, scans=0, text_chars=1_000, **PAGE)
    dense = worst_case_usage(pages=10, blank=0, scans=0, text_chars=40_000, **PAGE)
    assert dense.output_tokens > sparse.output_tokens and dense.input_tokens == sparse.input_tokens
    flood = worst_case_usage(pages=10, blank=0, scans=0, text_chars=10_000_000, **PAGE)
    assert flood.output_tokens == 10 * 8192  # never more than max_tokens a page
    assert worst_case_usage(pages=10, blank=10, scans=0, text_chars=0, **PAGE).input_tokens == 0  # blank pages cost nothing


def test_the_coverage_reask_doubles_the_text_pages_worst_case() -> None:
    once = worst_case_usage(pages=4, blank=0, scans=0, text_chars=8_000, **PAGE)
    twice = worst_case_usage(pages=4, blank=0, scans=0, text_chars=8_000, **{**PAGE, "reask": True})
    assert twice.output_tokens == 2 * once.output_tokens
    assert twice.input_tokens == 2 * once.input_tokens + once.output_tokens


def test_a_resumed_hold_projects_the_observed_cost_over_the_pages_left() -> None:
    # 2 USD for 10 of 100 pages: 0.2 a page, 90 left at 1.5 × → 2 + 27
    assert raised_hold(spent=Decimal(2), hold=Decimal(2), pages_done=10, pages_total=100) == Decimal("29.000000")
    # Nothing done yet: never below the hold it had plus its share again
    assert raised_hold(spent=Decimal(1), hold=Decimal(1), pages_done=0, pages_total=10) >= Decimal(2)
