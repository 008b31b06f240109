"""The pool's packing rule and the share split (batchlane.domain.pool): pure, no database."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchlane.domain import pool
from batchlane.domain.limits import estimated_record_bytes
from batchlane.domain.pool import MICRO, PoolChunk, PoolPlan, plan_pool, split_by_weight
from batchlane.domain.records import BEDROCK_RECORD_ID, RETRY_SUFFIX, pooled_record_id, split_pooled_record_id

WINDOW = 900.0


def job(job_id: str, sizes: list[int], *, waited_s: float = 0.0) -> list[PoolChunk]:
    """A job's chunks in the pool, in order."""
    return [PoolChunk(job_id, i, pages, waited_s) for i, pages in enumerate(sizes)]


def plan(chunks: list[PoolChunk], *, max_records: int = 1000, min_records: int = 100, window_s: float = WINDOW, slots: int = 10) -> PoolPlan:
    return plan_pool(chunks, max_records=max_records, min_records=min_records, window_s=window_s, slots=slots)


def shape(p: PoolPlan) -> list[list[tuple[str, int]]]:
    return [[(c.job_id, c.chunk_index) for c in bedrock_job] for bedrock_job in p.bedrock_jobs]


# -- plan_pool: examples -----------------------------------------------------------------------------


def test_an_empty_pool_plans_nothing() -> None:
    assert plan([]) == PoolPlan()


def test_200_chunks_of_5_pages_form_one_full_job_at_once() -> None:
    chunks = job("a", [5] * 200)
    p = plan(chunks, max_records=1000)
    assert shape(p) == [[("a", i) for i in range(200)]]
    assert (p.leave, p.waiting_chunks, p.waiting_pages, p.why_waiting) == ([], 0, 0, None)


def test_200_chunks_of_5_pages_under_a_larger_cap_wait_for_the_window_then_go_as_one_job() -> None:
    assert plan(job("a", [5] * 200), max_records=50_000) == PoolPlan([], [], 200, 1000, "window")
    p = plan(job("a", [5] * 200, waited_s=WINDOW), max_records=50_000)
    assert shape(p) == [[("a", i) for i in range(200)]] and p.leave == [] and p.why_waiting is None


def test_full_jobs_go_at_once_and_the_partial_rest_waits_for_the_window() -> None:
    # 2,500 pages under a 1,000-record cap: two full jobs now, 500 pages wait
    p = plan(job("a", [50] * 50))
    assert [sum(c.pages for c in j) for j in p.bedrock_jobs] == [1000, 1000]
    assert (p.waiting_chunks, p.waiting_pages, p.why_waiting, p.leave) == (10, 500, "window", [])


def test_after_the_window_a_partial_job_goes_when_it_holds_at_least_min_records() -> None:
    p = plan(job("a", [50, 50]) + job("b", [20], waited_s=WINDOW), min_records=120)
    assert shape(p) == [[("a", 0), ("a", 1), ("b", 0)]], "the oldest chunk's wait ripens the whole job"
    assert p.leave == [] and p.waiting_chunks == 0


def test_after_the_window_too_few_records_send_the_jobs_that_waited_on_demand_and_the_rest_wait() -> None:
    p = plan(job("old", [30], waited_s=WINDOW + 1) + job("new", [40]), min_records=100)
    assert p.bedrock_jobs == [] and p.leave == ["old"]
    assert (p.waiting_chunks, p.waiting_pages, p.why_waiting) == (1, 40, "window")


def test_a_job_that_leaves_takes_all_its_waiting_chunks_with_it() -> None:
    p = plan(job("old", [20, 20, 20], waited_s=WINDOW), min_records=100)
    assert p.leave == ["old"] and p.waiting_chunks == 0 and p.why_waiting is None


def test_the_quota_makes_packing_wait_and_nobody_leaves_for_it() -> None:
    chunks = job("a", [500] * 6, waited_s=10 * WINDOW)  # three full jobs, long ripe
    p = plan(chunks, slots=1)
    assert len(p.bedrock_jobs) == 1 and p.leave == []
    assert (p.waiting_chunks, p.waiting_pages, p.why_waiting) == (4, 2000, "quota")
    none = plan(chunks, slots=0)
    assert none.bedrock_jobs == [] and none.leave == [] and none.why_waiting == "quota"


def test_a_job_bigger_than_one_bedrock_job_spreads_over_several_at_chunk_boundaries() -> None:
    sizes = [300, 300, 300, 300, 300, 300, 300]  # 2,100 pages, cap 1,000
    p = plan(job("big", sizes, waited_s=WINDOW), min_records=100)
    assert shape(p) == [[("big", 0), ("big", 1), ("big", 2)], [("big", 3), ("big", 4), ("big", 5)], [("big", 6)]]
    assert all(c.pages == 300 for j in p.bedrock_jobs for c in j), "a chunk is never cut"


def test_a_chunk_exactly_at_the_cap_is_a_full_job_and_one_over_it_raises() -> None:
    assert shape(plan(job("a", [1000]))) == [[("a", 0)]]
    with pytest.raises(ValueError, match="over the 1000-record cap"):
        plan(job("a", [10, 1001]))


def test_small_chunks_fill_the_gap_a_big_one_left() -> None:
    p = plan(job("a", [700, 700]) + job("b", [300, 300]), max_records=1000)
    assert shape(p)[0] == [("a", 0), ("b", 0)] and shape(p)[1] == [("a", 1), ("b", 1)]


# -- plan_pool: properties ---------------------------------------------------------------------------

MAX = 400
pool_jobs = st.lists(
    st.tuples(st.lists(st.integers(1, MAX), min_size=1, max_size=12), st.sampled_from([0.0, WINDOW / 2, WINDOW, 3 * WINDOW])),
    min_size=1,
    max_size=8,
)


def pool_of(jobs: list[tuple[list[int], float]]) -> list[PoolChunk]:
    return [c for k, (sizes, waited) in enumerate(jobs) for c in job(f"j{k}", sizes, waited_s=waited)]


@settings(max_examples=400, deadline=None)
@given(pool_jobs, st.integers(1, 3 * MAX), st.integers(0, 4))
def test_every_chunk_goes_waits_or_leaves_exactly_once_and_no_bedrock_job_breaks_a_limit(jobs, min_records, slots) -> None:  # type: ignore[no-untyped-def]
    chunks = pool_of(jobs)
    p = plan(chunks, max_records=MAX, min_records=min_records, slots=slots)
    packed = [c for j in p.bedrock_jobs for c in j]
    assert len(packed) == len(set(packed)), "no chunk packed twice"
    assert len(p.bedrock_jobs) <= slots
    smallest = min(c.pages for c in chunks)
    for bedrock_job in p.bedrock_jobs:
        size = sum(c.pages for c in bedrock_job)
        assert size <= MAX
        full = MAX - size < smallest
        assert full or (max(c.waited_s for c in bedrock_job) >= WINDOW and size >= min_records), "only full or ripe-enough jobs go"
        order = [chunks.index(c) for c in bedrock_job]
        assert order == sorted(order), "the fair order holds inside a Bedrock job"
    gone = set(packed)
    leaving = set(p.leave)
    left_behind = [c for c in chunks if c not in gone and c.job_id in leaving]
    waiting = [c for c in chunks if c not in gone and c.job_id not in leaving]
    assert (p.waiting_chunks, p.waiting_pages) == (len(waiting), sum(c.pages for c in waiting))
    assert len(packed) + len(left_behind) + len(waiting) == len(chunks)
    assert all(c.waited_s >= WINDOW for c in chunks if c.job_id in leaving), "only jobs whose window passed leave"
    assert (p.why_waiting is None) == (not waiting)


@settings(max_examples=400, deadline=None)
@given(pool_jobs, st.integers(1, 3 * MAX))
def test_the_quota_only_delays_pages_it_never_sends_them_on_demand(jobs, min_records) -> None:  # type: ignore[no-untyped-def]
    chunks = pool_of(jobs)
    free = plan(chunks, max_records=MAX, min_records=min_records, slots=10_000)
    went_free = {c for j in free.bedrock_jobs for c in j}
    for slots in (0, 1, 2):
        tight = plan(chunks, max_records=MAX, min_records=min_records, slots=slots)
        assert tight.bedrock_jobs == free.bedrock_jobs[:slots]
        assert set(tight.leave) <= set(free.leave), "nobody leaves for the quota"
        went_tight = {c for j in tight.bedrock_jobs for c in j}
        assert not any(c.job_id in tight.leave for c in went_free - went_tight), "pages held back by the quota are never let go"
        if len(free.bedrock_jobs) > slots:
            assert tight.why_waiting == "quota"


# A backlog past what a turn can pack: many jobs, bytes as well as records; the packer reads only a fair-order prefix.
backlog_jobs = st.lists(
    st.tuples(
        st.lists(st.tuples(st.integers(1, MAX), st.sampled_from([0, 1, 50, 4000])), min_size=1, max_size=6),
        st.sampled_from([0.0, WINDOW / 2, WINDOW, 3 * WINDOW]),
    ),
    min_size=1,
    max_size=40,
)


def prefix_plan(chunks: list[PoolChunk], cut: int, *, slots: int, min_records: int, max_bytes: int | None) -> PoolPlan:
    """What the packer plans from the first ``cut`` chunks, the pool's minima read over all of it (db/lanes.PgLanes.read_pool)."""
    return plan_pool(
        chunks[:cut],
        max_records=MAX,
        min_records=min_records,
        window_s=WINDOW,
        slots=slots,
        max_bytes=max_bytes,
        truncated=cut < len(chunks),
        smallest=min(c.pages for c in chunks),
        lightest=min(c.input_bytes for c in chunks),
    )


@settings(max_examples=500, deadline=None)
@given(backlog_jobs, st.integers(1, 2 * MAX), st.integers(0, 4), st.sampled_from([None, 6000, 20_000]), st.data())
def test_a_turn_that_reads_only_a_prefix_of_the_pool_sends_what_the_whole_pool_would(jobs, min_records, slots, max_bytes, data) -> None:  # type: ignore[no-untyped-def]
    chunks = [PoolChunk(f"j{k}", i, pages, waited, weight * pages) for k, (sizes, waited) in enumerate(jobs) for i, (pages, weight) in enumerate(sizes)]
    whole = plan_pool(chunks, max_records=MAX, min_records=min_records, window_s=WINDOW, slots=slots, max_bytes=max_bytes)
    # the packer's cut: every chunk whose pages before it stay under the turn's budget; and any other cut
    before = [sum(c.pages for c in chunks[:i]) for i in range(len(chunks))]
    budget_cut = sum(1 for b in before if b < pool.read_budget(slots, MAX))
    for cut in (budget_cut, data.draw(st.integers(1, len(chunks)), label="cut")):
        part = prefix_plan(chunks, cut, slots=slots, min_records=min_records, max_bytes=max_bytes)
        if cut == len(chunks):
            assert part == whole, "the whole pool read: the same plan"
            continue
        if part.short:
            assert len(part.bedrock_jobs) < slots, "short only when slots stay free: the packer then reads the whole pool"
            continue
        assert part.bedrock_jobs == whole.bedrock_jobs, "the same Bedrock jobs go, chunk for chunk"
        assert set(part.leave) <= set(whole.leave), "a job let go is one the whole pool lets go"
        gone = {c for j in part.bedrock_jobs for c in j}
        waiting = [c for c in chunks[:cut] if c not in gone and c.job_id not in part.leave]
        assert (part.waiting_chunks, part.waiting_pages) == (len(waiting), sum(c.pages for c in waiting)), "the rest of the prefix waits"


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([1, 8, 50, 100, 400]), st.lists(st.integers(1, 30), min_size=1, max_size=60), st.integers(0, 4))
def test_the_turns_budget_fills_every_free_slot_when_chunks_fill_jobs_exactly(chunk_pages, chunk_counts, slots) -> None:  # type: ignore[no-untyped-def]
    chunks = [PoolChunk(f"j{k}", i, chunk_pages, WINDOW) for k, n in enumerate(chunk_counts) for i in range(n)]
    whole = plan_pool(chunks, max_records=MAX, min_records=1, window_s=WINDOW, slots=slots)
    cut = sum(1 for i in range(len(chunks)) if i * chunk_pages < pool.read_budget(slots, MAX))
    part = prefix_plan(chunks, cut, slots=slots, min_records=1, max_bytes=None)
    assert not part.short, "the budget holds the free slots' full jobs besides the jobs still open: no second read"
    assert (part.bedrock_jobs, part.leave) == (whole.bedrock_jobs, whole.leave)


def test_a_small_remainder_does_not_take_pages_that_wait_for_the_quota_on_demand() -> None:
    # the job's full Bedrock job waits for a slot; its 1-page remainder is too small after the window
    chunks = job("a", [1, 400], waited_s=WINDOW)
    free = plan(chunks, max_records=400, min_records=2, slots=1)
    assert shape(free) == [[("a", 1)]] and free.leave == ["a"], "with a slot, the 400 pages ride and the rest goes on-demand"
    held = plan(chunks, max_records=400, min_records=2, slots=0)
    assert held.bedrock_jobs == [] and held.leave == [], "without one, the job waits for it: leaving would send all 401 pages on-demand"
    assert (held.waiting_chunks, held.waiting_pages, held.why_waiting) == (2, 401, "quota")


# -- split_by_weight ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("total", "weights", "expected"),
    [
        ("0.000010", {"a": 1, "b": 1, "c": 1}, {"a": "0.000003", "b": "0.000003", "c": "0.000004"}),  # ties: the larger key first
        ("1", {"a": 1, "b": 2}, {"a": "0.333333", "b": "0.666667"}),
        ("0.5", {"a": 3, "b": 0}, {"a": "0.5", "b": "0"}),
        ("0", {"a": 5, "b": 7}, {"a": "0", "b": "0"}),
        ("0.000001", {"a": 1, "b": 1}, {"a": "0", "b": "0.000001"}),
        ("7", {"a": 0, "b": 0}, {"a": "3.5", "b": "3.5"}),  # all weights 0: equal shares
        ("0.000005", {"a": 0, "b": 0, "c": 0}, {"a": "0.000001", "b": "0.000002", "c": "0.000002"}),
    ],
)
def test_split_by_weight_examples(total: str, weights: dict[str, int], expected: dict[str, str]) -> None:
    shares = split_by_weight(Decimal(total), weights)
    assert shares == {k: Decimal(v) for k, v in expected.items()}
    assert sum(shares.values()) == Decimal(total)


def test_split_by_weight_of_nobody_is_empty_and_whole_tokens_split_in_whole_units() -> None:
    assert split_by_weight(Decimal("1.5"), {}) == {}
    tokens = split_by_weight(Decimal(1001), {"a": 1, "b": 1, "c": 1}, unit=Decimal(1))
    assert sum(tokens.values()) == 1001 and all(v == int(v) for v in tokens.values())


@settings(max_examples=500, deadline=None)
@given(
    st.integers(0, 10**12),
    st.dictionaries(st.text("abcdefgh", min_size=1, max_size=3), st.integers(0, 50_000), min_size=1, max_size=12),
)
def test_shares_add_up_to_the_total_exactly_and_follow_the_weights_within_one_step(steps: int, weights: dict[str, int]) -> None:
    total = steps * MICRO
    shares = split_by_weight(total, weights)
    assert set(shares) == set(weights)
    assert sum(shares.values()) == total
    assert all(s >= 0 and s == s.quantize(MICRO) for s in shares.values())
    effective = weights if sum(weights.values()) > 0 else dict.fromkeys(weights, 1)
    whole = sum(effective.values())
    for k, share in shares.items():
        exact = Decimal(steps) * effective[k] / whole
        assert abs(share / MICRO - exact) < 1, f"{k}: {share} vs {exact * MICRO}"
    if sum(weights.values()) == 0:
        assert max(shares.values()) - min(shares.values()) <= MICRO, "all-zero weights: equal within one step"
    counts = Counter(shares.values())
    assert sum(counts.values()) == len(weights)


# -- the retry batch's rules ------------------------------------------------------------------


@pytest.mark.parametrize(
    "code,message,retryable",
    [
        (429, "ThrottlingException: Too many requests", True),
        (424, "ModelErrorException: the model failed", True),
        (400, "ModelErrorException: emulated record error", True),  # named, whatever the code
        (503, "ServiceUnavailableException", True),
        ("500", "", True),
        (408, "ModelTimeoutException", True),
        (400, "ValidationException: messages.0.content: too long", False),
        (403, "AccessDeniedException", False),
        (None, None, False),
    ],
)
def test_only_errors_a_second_try_may_cure_are_retried(code, message, retryable):
    assert pool.retryable_error(code, message) is retryable


def test_a_retry_batch_needs_enough_records_no_earlier_retry_and_room_before_every_deadline():
    allowed = dict(min_records=100, already_a_retry=False, deadlines_s=[None, 10_000.0], turnaround_s=5_000.0)
    assert pool.retry_batch_allowed(100, **allowed) is None
    assert pool.retry_batch_allowed(99, **allowed) == "too_few_to_retry"
    assert pool.retry_batch_allowed(500, **{**allowed, "already_a_retry": True}) == "retried_once"
    assert pool.retry_batch_allowed(500, **{**allowed, "deadlines_s": [None, 4_999.0]}) == "deadline"


def test_the_id_bedrock_sees_is_alphanumeric_as_documented_and_maps_back():
    # Bedrock user guide, "Format and upload your batch inference data": recordId is an alphanumeric string.
    sent = pooled_record_id("m12", "c3-p151")
    assert sent == "m12c3p151" and BEDROCK_RECORD_ID.match(sent) and BEDROCK_RECORD_ID.match(sent + RETRY_SUFFIX)
    assert split_pooled_record_id(sent) == ("m12", "c3-p151")
    assert split_pooled_record_id(sent + RETRY_SUFFIX) == ("m12", "c3-p151")


def test_a_retried_record_id_maps_back_to_its_job_and_page():
    assert split_pooled_record_id("m12-c3-p151-r1") == ("m12", "c3-p151")  # a lane prepared before the alphanumeric form
    assert split_pooled_record_id("m0-c0-p1") == ("m0", "c0-p1")
    assert split_pooled_record_id("c4-p201") == ("m0", "c4-p201")  # a lane from before the pool
    with pytest.raises(ValueError):
        split_pooled_record_id("m1-c3-p151-x1")


def test_lanes_are_packed_under_the_job_size_quota_as_well_as_the_record_cap():
    # 300 chunks of 50 scanned pages of ~500 KB: ~36 MB of base64 records a chunk, 10.7 GB in all, at
    # 15,000 pages far under the 50,000-record cap that alone packed them into one (too large) job.
    heavy = estimated_record_bytes(50 * 500_000, 50)
    chunks = [PoolChunk("job-a", i, 50, 10_000.0, heavy) for i in range(300)]
    cap = 5 * 10**9  # "Batch inference job size": 5 GB, decimal

    plan = pool.plan_pool(chunks, max_records=50_000, min_records=100, window_s=900, slots=100, max_bytes=cap)

    assert len(plan.bedrock_jobs) > 1 and plan.leave == [] and plan.waiting_chunks == 0
    assert sorted(c.chunk_index for job in plan.bedrock_jobs for c in job) == list(range(300)), "every chunk packed once"
    assert all(sum(c.input_bytes for c in job) <= cap for job in plan.bedrock_jobs)
    assert len(plan.bedrock_jobs) == -(-300 // (cap // heavy)), "as few lanes as the bytes allow"
