"""The pool's rule at its edges (domain/pool.py): a lane filled to the byte, an open lane that a chunk of the pool could
still just fit, why pages wait, how much of the pool a turn reads, the base model's shared quota, and shares that round."""

from __future__ import annotations

from decimal import Decimal

from batchlane.domain.pool import OPEN_JOBS, PoolChunk, by_base_model, pack, plan_pool, read_budget, retry_batch_allowed, split_by_weight

WINDOW = 3600.0


def _chunk(job: str, pages: int, *, input_bytes: int = 0, waited_s: float = 0.0) -> PoolChunk:
    return PoolChunk(job_id=job, chunk_index=0, pages=pages, waited_s=waited_s, input_bytes=input_bytes)


def test_a_chunk_that_fills_the_bytes_left_exactly_joins_the_open_job() -> None:
    first, second = _chunk("a", 10, input_bytes=60), _chunk("b", 10, input_bytes=40)

    assert pack([first, second], max_records=100, max_bytes=100) == [[first, second]]


def test_a_lane_with_too_few_bytes_left_for_any_chunk_goes_at_once_even_before_the_window() -> None:
    heavy = _chunk("a", 10, input_bytes=95)

    plan = plan_pool([heavy], max_records=100, min_records=50, window_s=WINDOW, slots=5, max_bytes=100)

    assert plan.bedrock_jobs == [[heavy]]


def test_a_lane_with_bytes_left_for_the_lightest_chunk_waits_for_the_window() -> None:
    plan = plan_pool([_chunk("a", 10, input_bytes=90)], max_records=100, min_records=50, window_s=WINDOW, slots=5, max_bytes=100, lightest=10)

    assert (plan.bedrock_jobs, plan.waiting_pages, plan.why_waiting) == ([], 10, "window")


def test_a_lane_with_one_byte_left_waits_for_a_one_byte_chunk() -> None:
    plan = plan_pool([_chunk("a", 10, input_bytes=99)], max_records=100, min_records=50, window_s=WINDOW, slots=5, max_bytes=100, lightest=1)

    assert plan.bedrock_jobs == []


def test_a_truncated_read_sends_a_lane_no_chunk_of_the_pool_could_join_for_lack_of_bytes() -> None:
    heavy = _chunk("a", 10, input_bytes=95)

    plan = plan_pool([heavy], max_records=100, min_records=1, window_s=WINDOW, slots=5, max_bytes=100, truncated=True, smallest=1, lightest=10)

    assert plan.bedrock_jobs == [[heavy]]


def test_a_truncated_read_keeps_a_lane_the_pools_lightest_chunk_could_still_join() -> None:
    # The prefix's own chunks are heavy; the pool behind it holds one of 5 bytes, which the 5 bytes left could take
    prefix = [_chunk("a", 10, input_bytes=50, waited_s=WINDOW), _chunk("b", 10, input_bytes=45, waited_s=WINDOW)]

    plan = plan_pool(prefix, max_records=100, min_records=1, window_s=WINDOW, slots=5, max_bytes=100, truncated=True, smallest=1, lightest=5)

    assert (plan.bedrock_jobs, plan.waiting_pages) == ([], 20)


def test_a_truncated_read_keeps_a_ripe_lane_with_room_for_exactly_the_smallest_chunk_waiting_for_the_window() -> None:
    plan = plan_pool([_chunk("a", 90, waited_s=WINDOW)], max_records=100, min_records=1, window_s=WINDOW, slots=5, truncated=True, smallest=10)

    assert (plan.bedrock_jobs, plan.waiting_pages, plan.why_waiting) == ([], 90, "window")


def test_a_truncated_read_with_no_free_slot_says_its_pages_wait_for_the_quota() -> None:
    plan = plan_pool([_chunk("a", 90, waited_s=WINDOW)], max_records=100, min_records=1, window_s=WINDOW, slots=0, truncated=True, smallest=10)

    assert (plan.bedrock_jobs, plan.why_waiting) == ([], "quota")


def test_a_turn_reads_enough_pages_for_its_free_slots_and_two_more_jobs_then_room_for_every_open_job() -> None:
    assert read_budget(3, 100) == 500
    assert read_budget(0, 100) == 200
    assert read_budget(-1, 100) == 200  # more in flight than the quota: no slot, still the open job and one more
    assert read_budget(3, 100, attempt=1) == (3 + 2 + OPEN_JOBS) * 100


def test_the_profiles_of_one_base_model_share_its_count() -> None:
    counts = by_base_model({"us.anthropic.claude-x-v1:0": 2, "global.anthropic.claude-x-v1:0": 3, "anthropic.claude-y-v1:0": 1})

    assert counts == {"anthropic.claude-x-v1:0": 5, "anthropic.claude-y-v1:0": 1}


def test_a_member_that_sent_one_record_and_one_that_sent_none_split_as_one_to_nothing() -> None:
    assert split_by_weight(Decimal("1.00"), {"a": 1, "b": 0}) == {"a": Decimal("1.00"), "b": Decimal(0)}


def test_the_odd_unit_goes_to_the_largest_remainder_not_the_largest_share() -> None:
    # 2 cents over 1:1:2 — exact 0.5, 0.5, 1: c's share is whole, the odd cent goes to a remainder of one half
    shares = split_by_weight(Decimal("0.02"), {"a": 1, "b": 1, "c": 2}, unit=Decimal("0.01"))

    assert shares["c"] == Decimal("0.01") and shares["a"] + shares["b"] == Decimal("0.01")


def test_a_retry_batch_that_would_just_meet_a_deadline_is_allowed() -> None:
    assert retry_batch_allowed(10, min_records=5, already_a_retry=False, deadlines_s=[3600.0], turnaround_s=3600.0) is None
    assert retry_batch_allowed(10, min_records=5, already_a_retry=False, deadlines_s=[3599.0], turnaround_s=3600.0) == "deadline"


def test_a_job_whose_last_read_chunk_ends_a_truncated_read_does_not_leave_even_when_its_first_is_too_small() -> None:
    # Job x's first chunk (10 pages, ripe) ends alone in a lane closed by the nine full ones after it: too few
    # records, so by itself x would leave for on-demand. But x's next chunk ends the truncated read, and x may have
    # more past it that the whole pool would pack: x waits this turn.
    first = PoolChunk("x", 0, 10, WINDOW, 0)
    fulls = [PoolChunk(f"y{i}", 0, 95, WINDOW, 0) for i in range(OPEN_JOBS + 1)]
    last = PoolChunk("x", 1, 96, WINDOW, 0)
    chunks = [first, *fulls, last]
    assert pack(chunks, max_records=100)[0] == [first], "x's first chunk is alone in a lane no later chunk may join"

    truncated = plan_pool(chunks, max_records=100, min_records=50, window_s=WINDOW, slots=20, truncated=True, smallest=10, lightest=0)
    whole = plan_pool(chunks, max_records=100, min_records=50, window_s=WINDOW, slots=20)

    assert "x" not in truncated.leave and truncated.waiting_pages == 10
    assert whole.leave == ["x"], "read whole, the same pool lets x go"
