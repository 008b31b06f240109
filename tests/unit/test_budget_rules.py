"""The budget rules (domain/budget.py): caps, the budget check, the worst-case hold, the raised hold."""

from __future__ import annotations

from decimal import Decimal

import pytest

from batchlane.domain.budget import (
    CONTEXT_TOKENS,
    IMAGE_TOKENS_PER_PAGE,
    Limits,
    Standing,
    check_hold,
    check_new_job,
    raised_hold,
    request_worst_usage,
    worst_case_usage,
)
from batchlane.domain.cost import Usage
from batchlane.domain.errors import BudgetExceeded, LimitReached

LIMITS = Limits(usd_per_month=Decimal("10"), max_live_jobs=2, max_live_pages=100)
PAGE = {"max_tokens": 8192, "reask": False}


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


def test_the_worst_case_holds_each_page_s_input_and_a_whole_answer() -> None:
    # Issue 21.5: not a flat 3,400 input tokens and 2 x 1,200 output for a scan, while a request may produce max_tokens.
    sparse = worst_case_usage(pages=10, blank=0, scans=0, text_chars=1_000, **PAGE)
    dense = worst_case_usage(pages=10, blank=0, scans=0, text_chars=400_000, **PAGE)
    assert dense.input_tokens == sparse.input_tokens + (400_000 - 1_000) // 4  # the text goes in: characters / 4
    assert sparse.input_tokens == 10 * (IMAGE_TOKENS_PER_PAGE + 400) + 250  # each page's image and prompt, and its text
    scans = worst_case_usage(pages=10, blank=0, scans=10, text_chars=0, **PAGE)
    assert scans.output_tokens == sparse.output_tokens == 10 * 8192  # any page may answer max_tokens, a scan too
    assert worst_case_usage(pages=10, blank=10, scans=0, text_chars=0, **PAGE) == worst_case_usage(pages=0, blank=0, scans=0, text_chars=0, **PAGE)


def test_a_page_with_no_estimate_is_held_at_the_whole_context() -> None:
    known = worst_case_usage(pages=3, blank=0, scans=3, text_chars=0, **PAGE)
    unknown = worst_case_usage(pages=3, blank=0, scans=2, text_chars=0, unknown=1, **PAGE)
    assert unknown.input_tokens == 2 * (IMAGE_TOKENS_PER_PAGE + 400) + (CONTEXT_TOKENS - 8192)
    assert unknown.input_tokens > known.input_tokens and unknown.output_tokens == known.output_tokens
    # the same bound per request: a request reserves its pages' inputs, within the context, and max_tokens out
    assert request_worst_usage([None], max_tokens=8192) == Usage(CONTEXT_TOKENS - 8192, 8192)
    assert request_worst_usage([4_000, 0], max_tokens=8192) == Usage(1000 + 2 * (IMAGE_TOKENS_PER_PAGE + 400), 8192)


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
