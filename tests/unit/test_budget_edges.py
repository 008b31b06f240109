"""The budget rules at their edges (domain/budget.py): what a refusal tells its owner to do, the request that would
overflow the context window, and the raised hold of a paused job at each of its three bounds."""

from __future__ import annotations

from decimal import Decimal

import pytest

from batchlane.domain.budget import CONTEXT_TOKENS, Limits, Standing, check_hold, check_new_job, raised_hold, request_worst_usage
from batchlane.domain.errors import BudgetExceeded, LimitReached

LIMITS = Limits(usd_per_month=Decimal("10"), max_live_jobs=2, max_live_pages=100)


def test_a_refusal_for_too_many_live_jobs_names_the_command_and_the_cdk_key_that_raise_the_limit() -> None:
    with pytest.raises(LimitReached) as refused:
        check_new_job(LIMITS, Standing(Decimal(0), 2, 0))

    assert "`batchlane budget --set-for USER --max-live-jobs N`" in str(refused.value)
    assert "cdk.json context budget.maxLiveJobs" in str(refused.value)


def test_a_refusal_for_a_spent_budget_says_what_is_committed_and_how_to_raise_the_monthly_budget() -> None:
    with pytest.raises(BudgetExceeded) as refused:
        check_new_job(LIMITS, Standing(Decimal("10.5"), 0, 0))

    message = str(refused.value)
    assert "budget (usdPerMonth) of 10 USD is committed (10.50 USD spent or held)" in message
    assert "`batchlane budget --set-for USER --usd-per-month N`" in message
    assert "cdk.json context budget.usdPerMonth" in message


def test_a_hold_over_the_budget_tells_how_to_raise_the_monthly_budget() -> None:
    with pytest.raises(BudgetExceeded) as refused:
        check_hold(LIMITS, Standing(Decimal("4"), 0, 0), hold_usd=Decimal("7"), pages=1)

    assert "6.00 USD of it is left" in str(refused.value)
    assert "--usd-per-month N" in str(refused.value) and "budget.usdPerMonth" in str(refused.value)


def test_a_request_whose_pages_overflow_the_context_reserves_the_context_less_its_answer() -> None:
    dense_pages = [400_000, 400_000]  # 100,000 tokens of text each: together past the window

    worst = request_worst_usage(dense_pages, max_tokens=8192)

    assert worst.input_tokens == CONTEXT_TOKENS - 8192
    assert worst.output_tokens == 8192


def test_a_job_paused_with_every_page_done_resumes_with_what_it_spent_and_no_projection() -> None:
    assert raised_hold(spent=Decimal(10), hold=Decimal(5), pages_done=20, pages_total=20) == Decimal("10.000000")
    assert raised_hold(spent=Decimal(10), hold=Decimal(5), pages_done=25, pages_total=20) == Decimal("10.000000")  # more done than planned


def test_a_job_paused_after_one_page_projects_that_page_s_cost_over_the_rest() -> None:
    # 1 USD for 1 of 11 pages: 10 left at 1.5 × 1 USD
    assert raised_hold(spent=Decimal(1), hold=Decimal(0), pages_done=1, pages_total=11) == Decimal("16.000000")


@pytest.mark.parametrize(
    ("pages_total", "expected"),
    [(1, Decimal("11.000000")), (2, Decimal("11.000000"))],
    ids=["one-page", "two-pages"],
)
def test_a_job_paused_before_any_page_is_done_resumes_with_its_hold_on_top_of_what_it_spent(pages_total: int, expected: Decimal) -> None:
    # No page done gives no per-page cost to project: the share of the hold for the pages left, all of them, is added to the spend
    assert raised_hold(spent=Decimal(1), hold=Decimal(10), pages_done=0, pages_total=pages_total) == expected


def test_a_resumed_hold_never_shrinks_below_the_hold_the_job_had() -> None:
    assert raised_hold(spent=Decimal(0), hold=Decimal(10), pages_done=5, pages_total=10) == Decimal("10.000000")
