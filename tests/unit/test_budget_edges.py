"""The budget rules at their edges (domain/budget.py): what a refusal tells its owner to do, the request that would
overflow the context window, and the raised hold of a paused job at each of its three bounds."""

from __future__ import annotations

from decimal import Decimal

import pytest

from batchlane.domain.budget import (
    CONTEXT_TOKENS,
    Holder,
    Limits,
    Standing,
    check_hold,
    check_new_job,
    check_worst_case,
    grant,
    pause_message,
    request_worst_usage,
)
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

    assert "6.00 USD of this month's budget (usdPerMonth) of 10 USD is left" in str(refused.value)
    assert "--usd-per-month N" in str(refused.value) and "budget.usdPerMonth" in str(refused.value)


def test_a_request_whose_pages_overflow_the_context_reserves_the_context_less_its_answer() -> None:
    dense_pages = [400_000, 400_000]  # 100,000 tokens of text each: together past the window

    worst = request_worst_usage(dense_pages, max_tokens=8192)

    assert worst.input_tokens == CONTEXT_TOKENS - 8192
    assert worst.output_tokens == 8192


# -- the hold arithmetic (issue 38.4) --------------------------------------------------------------
def test_a_window_is_granted_whole_when_the_month_has_room_for_it() -> None:
    assert grant(Decimal("2"), limits=LIMITS, standing=Standing(Decimal("3"), 0, 0), open_usd=Decimal("1")) == Decimal("2")


def test_a_window_is_granted_only_what_the_month_has_left_beside_every_open_hold() -> None:
    # 10 a month; 6 spent or held by the owner's other jobs; this job holds 3 beyond its spend: 1 left for its next window
    assert grant(Decimal("2"), limits=LIMITS, standing=Standing(Decimal("6"), 0, 0), open_usd=Decimal("3")) == Decimal("1")
    assert grant(Decimal("2"), limits=LIMITS, standing=Standing(Decimal("9"), 0, 0), open_usd=Decimal("3")) == Decimal(0)  # never negative
    assert grant(Decimal("2"), limits=LIMITS, standing=Standing(Decimal("6"), 0, 0), open_usd=Decimal("-1")) == Decimal(
        "2"
    )  # a spend past its hold keeps nothing open


def test_two_jobs_granted_one_after_the_other_never_hold_more_than_the_month() -> None:
    # what db/budgets does under the owner's lock: each grant sees the other's open hold in the standing
    first = grant(Decimal("7"), limits=LIMITS, standing=Standing(Decimal("1"), 0, 0), open_usd=Decimal(0))
    second = grant(Decimal("7"), limits=LIMITS, standing=Standing(Decimal("1") + first, 0, 0), open_usd=Decimal(0))
    assert (first, second) == (Decimal("7"), Decimal("2")) and Decimal("1") + first + second == LIMITS.usd_per_month


def test_a_refusal_says_the_estimate_the_worst_case_the_hold_and_the_room_left_in_one_sentence() -> None:
    with pytest.raises(BudgetExceeded) as refused:
        check_worst_case(LIMITS, Standing(Decimal("7.5"), 0, 0), estimate_usd=Decimal("1.96"), worst_usd=Decimal("18.64"), hold_usd=Decimal("1.93"), pages=10)
    sentence = str(refused.value).split(" An admin")[0]
    assert sentence == (
        "This conversion is estimated at 1.96 USD and could cost up to 18.64 USD at worst (it holds 1.93 USD of your budget at a "
        "time while it runs), but only 2.50 USD of this month's budget is left."
    )
    assert "--usd-per-month N" in str(refused.value)


def test_a_job_whose_worst_case_fits_is_not_refused_whatever_its_hold() -> None:
    # the book: a 20 USD month, a worst case of 18.64 USD: admitted (its hold grows a window at a time)
    check_worst_case(
        Limits(Decimal(20), 20, 20_000), Standing(Decimal(0), 0, 0), estimate_usd=Decimal("1.96"), worst_usd=Decimal("18.64"), hold_usd=Decimal(0), pages=117
    )


def test_a_pause_says_what_it_could_not_send_and_who_holds_the_rest() -> None:
    holders = [Holder("j-1", "atlas.pdf", Decimal("4.5")), Holder("j-2", "thesis.pdf", Decimal("1"))]
    message = pause_message(next_usd=Decimal("0.15"), left_usd=Decimal("0.03"), limits=LIMITS, holders=holders)
    assert message.startswith("Paused: its next request may cost up to 0.15 USD and 0.03 USD of this month's budget of 10 USD is left.")
    assert "atlas.pdf (j-1) holds 4.50 USD; thesis.pdf (j-2) holds 1.00 USD" in message and "batchlane resume" in message
