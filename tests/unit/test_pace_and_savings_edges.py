"""Edges of two pieces of arithmetic a user pays for or waits on, written from `make mutate`'s survivors (stop 47):
the pace's free starts and lead (domain/pace.py), and the on-demand requests a batch-served job's saving is
measured against (domain/savings.py: the same groups the on-demand planner would have made)."""

from __future__ import annotations

from batchlane.domain.cost import Usage
from batchlane.domain.pace import pace_ahead, pace_starts_free
from batchlane.domain.savings import ServedAnswer, on_demand_groups, on_demand_usage


def test_the_pace_books_two_starts_ahead_when_one_interval_is_longer_than_its_lead() -> None:
    assert pace_ahead(1.0) == 2  # 0.5 s of lead is one start at a 1 s pace: the floor of 2 holds
    assert pace_ahead(0.1) == 5  # 0.5 s of lead at a 0.1 s pace


def test_a_whole_burst_behind_is_owed_the_whole_burst_even_where_floats_round_down() -> None:
    # 0.7 × 3 is 2.0999999999999996, and that over 0.7 is 2.9999999999999996: a count of the intervals passed
    # would give 3 starts where the schedule owes burst + 1 = 4.
    assert pace_starts_free(0.7 * 3, 0.7, 3) == 4


def test_a_schedule_ahead_of_now_allows_no_start_however_far_ahead() -> None:
    assert pace_starts_free(-2.5, 1.0, 3) == 0
    assert pace_starts_free(-0.01, 1.0, 3) == 0


def test_starts_owed_count_the_intervals_passed_up_to_the_burst() -> None:
    assert pace_starts_free(1.2, 0.5, 9) == 3  # two intervals passed and the one due now
    assert pace_starts_free(2.5, 1.0, 3) == 3  # just under the whole burst: one per interval, not capped below it
    assert pace_starts_free(None, 1.0, 3) == 4  # never used: the whole burst


def _answers(*outputs: int, inputs: int = 1_000) -> list[ServedAnswer]:
    return [ServedAnswer(page, Usage(inputs, out)) for page, out in enumerate(outputs, start=1)]


def test_a_request_takes_pages_until_their_output_would_pass_the_budget_and_one_that_meets_it_exactly_stays() -> None:
    groups = on_demand_groups(_answers(50, 50), page_limit=10, output_budget=100)
    assert [[a.page for a in g] for g in groups] == [[1, 2]]  # 50 + 50 is the budget, not past it
    groups = on_demand_groups(_answers(100, 50, 50), page_limit=10, output_budget=100)
    assert [[a.page for a in g] for g in groups] == [[1], [2, 3]]  # the second request starts from nothing spent


def test_every_request_is_counted_when_a_single_page_one_comes_first() -> None:
    usage = on_demand_usage(
        _answers(90, 40, 40), page_limit=10, output_budget=100, single_prompt_tokens=300, group_prompt_tokens=500, marker_tokens=lambda page: 7
    )
    assert usage == [Usage(1_000, 90), Usage(700 + 700 + 500, 40 + 7 + 40 + 7)]
    singles = on_demand_usage(_answers(10, 10, 10), page_limit=1, output_budget=100, single_prompt_tokens=300, group_prompt_tokens=500, marker_tokens=lambda page: 7)
    assert singles == [Usage(1_000, 10)] * 3


def test_a_record_no_larger_than_its_own_prompt_adds_no_input_to_a_grouped_request() -> None:
    answers = [ServedAnswer(1, Usage(300, 20)), ServedAnswer(2, Usage(250, 20)), ServedAnswer(3, Usage(1_300, 20))]
    usage = on_demand_usage(answers, page_limit=10, output_budget=100, single_prompt_tokens=300, group_prompt_tokens=500, marker_tokens=lambda page: 0)
    assert usage == [Usage(0 + 0 + 1_000 + 500, 60)]
