"""A folder job's policy at its edges (domain/folder_policy.py): the live-page cap's bounds, deadlines exactly due or
in another zone, the on-demand margin, and the deadline option as written by a caller."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from batchlane.domain.budget import Limits
from batchlane.domain.errors import InputError
from batchlane.domain.folder_policy import check_deadline, deadline_lane, deadline_opt_outs, parse_deadline, waits_for_capacity

NOW = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
TURNAROUND_H = 26.0
LIMITS = Limits(usd_per_month=Decimal(250), max_live_jobs=20, max_live_pages=100)


def test_a_one_page_file_and_one_exactly_the_cap_wait_for_capacity_and_an_empty_one_does_not() -> None:
    assert waits_for_capacity("LIVE_PAGES_LIMIT", 1, LIMITS)
    assert waits_for_capacity("LIVE_PAGES_LIMIT", 100, LIMITS)
    assert not waits_for_capacity("LIVE_PAGES_LIMIT", 0, LIMITS)


def test_a_deadline_due_this_very_moment_is_refused_naming_the_field() -> None:
    with pytest.raises(InputError) as past:
        check_deadline(NOW, NOW)

    assert past.value.error_id == "DEADLINE_PAST"
    assert str(past.value) == "policy.deadline 2026-12-01T06:00:00+00:00 has already passed."


def test_a_deadline_in_another_zone_is_compared_at_its_own_offset() -> None:
    # 07:30 at +02:00 is 05:30 UTC: half an hour ago
    with pytest.raises(InputError):
        check_deadline(datetime(2026, 12, 1, 7, 30, tzinfo=timezone(timedelta(hours=2))), NOW)


def test_the_on_demand_margin_adds_to_the_batch_turnaround() -> None:
    deadline = NOW + timedelta(hours=27)

    assert deadline_lane(deadline, NOW, TURNAROUND_H, margin_hours=2.0) == "deadline"
    assert deadline_opt_outs({"deadline": deadline}, NOW, TURNAROUND_H, margin_hours=2.0) == ["deadline"]
    assert deadline_opt_outs({"deadline": deadline}, NOW, TURNAROUND_H) == []  # no margin: 27 h leave the lane room


def test_a_deadline_just_past_the_turnaround_needs_no_opt_out_without_a_margin() -> None:
    assert deadline_opt_outs({"deadline": NOW + timedelta(hours=26, minutes=30), "none": None}, NOW, TURNAROUND_H) == []


@pytest.mark.parametrize("value", [None, ""], ids=["none", "empty"])
def test_no_deadline_option_is_no_deadline(value: object) -> None:
    assert parse_deadline(value) is None


def test_a_deadline_option_is_read_as_an_aware_time_however_it_is_written() -> None:
    assert parse_deadline(datetime(2026, 12, 2, 6, 0)) == datetime(2026, 12, 2, 6, 0, tzinfo=UTC)
    assert parse_deadline("2026-12-02T06:00:00Z") == datetime(2026, 12, 2, 6, 0, tzinfo=UTC)
    assert parse_deadline("2026-12-02T08:00:00+02:00") == datetime(2026, 12, 2, 6, 0, tzinfo=UTC)


def test_a_deadline_option_that_is_not_a_date_is_refused_quoting_it() -> None:
    with pytest.raises(InputError) as refused:
        parse_deadline("next tuesday")

    assert refused.value.error_id == "DEADLINE_INVALID"
    assert "'next tuesday'" in str(refused.value)
