"""BudgetRepository's contract, on the fake and on PostgreSQL: an owner's standing (this month's spend, what open holds
may still spend, live jobs and pages) counts what the ledger booked on their jobs, whatever lane booked it."""

from __future__ import annotations

import uuid
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest

from batchlane.domain import status as st
from batchlane.domain.budget import Limits
from batchlane.domain.status import ChunkStatus, Entity, JobStatus
from batchlane.pdf.split import plan_chunks
from batchlane.rows import BudgetOverride, JobMoney


def _owner() -> str:
    return f"owner-budgets-{uuid.uuid4().hex[:8]}"


def _job(uow: Any, owner: str, *, status: str = JobStatus.PENDING, pages: int = 4) -> str:
    file_id = uow.jobs.insert_file(owner_id=owner, name="book.pdf", s3_key=f"uploads/{uuid.uuid4()}.pdf", size_bytes=1000).id
    job = uow.jobs.insert_job(
        file_id=file_id, owner_id=owner, status=status, options={}, model_id="model-a", total_pages=pages, pages_per_chunk=2,
        chunks=plan_chunks(pages, 2) if pages else [],
    )  # fmt: skip
    return str(job.id)


def _usage(cost: str) -> dict[str, Any]:
    return {"model_id": "model-a", "input_tokens": 100, "output_tokens": 50, "cost_usd": Decimal(cost), "metadata": {}}


def test_the_months_spend_counts_chunk_batch_and_batch_share_rows(uow: Any, new_lane: Any) -> None:
    """A pool member's share of its lane's bill is spend like an on-demand request: leaving it out lets pool users
    overrun their budget silently. The lane's own row (no job) is split into the shares, so it is not counted again."""
    owner, other = _owner(), _owner()
    mine, theirs = _job(uow, owner), _job(uow, other)
    uow.ledger.add_chunk_cost(job_id=mine, chunk_index=0, **_usage("0.10"))
    # a Bedrock job of the job's own, from before the pool: its lane carries its job
    assert uow.ledger.add_batch_cost(job_id=mine, lane_row_id=new_lane(mine), **_usage("0.20")) is True
    # a shared lane: one row with no job, a share per member
    lane = new_lane(mine, 1)
    assert uow.ledger.add_batch_cost(job_id=None, lane_row_id=lane, **_usage("0.70")) is True
    uow.ledger.add_batch_share(job_id=mine, lane_row_id=lane, **_usage("0.40"))
    uow.ledger.add_batch_share(job_id=theirs, lane_row_id=lane, **_usage("0.30"))

    assert uow.budgets.standing(owner).committed_usd == Decimal("0.70")  # 0.10 chunk + 0.20 batch + 0.40 batch_share
    assert uow.budgets.standing(other).committed_usd == Decimal("0.30")  # its share only, never the lane's whole bill


def test_a_share_or_a_lane_row_booked_twice_counts_once(uow: Any, new_lane: Any) -> None:
    owner = _owner()
    job = _job(uow, owner)
    lane = new_lane(job)
    assert uow.ledger.add_batch_cost(job_id=None, lane_row_id=lane, **_usage("0.50")) is True
    assert uow.ledger.add_batch_cost(job_id=None, lane_row_id=lane, **_usage("0.50")) is False
    uow.ledger.add_batch_share(job_id=job, lane_row_id=lane, **_usage("0.50"))
    uow.ledger.add_batch_share(job_id=job, lane_row_id=lane, **_usage("0.50"))
    assert uow.budgets.standing(owner).committed_usd == Decimal("0.50")


def test_live_jobs_and_pages_leave_out_parked_and_ended_jobs_and_the_excluded_one(uow: Any) -> None:
    owner = _owner()
    running = _job(uow, owner, pages=4)
    assert uow.jobs.move_job(running, st.start()) is not None
    pending = _job(uow, owner, pages=6)
    _job(uow, owner, status=JobStatus.WAITING_BATCH, pages=10)  # parked for the pool: not capped
    _job(uow, owner, status=JobStatus.FAILED, pages=0)
    standing = uow.budgets.standing(owner)
    assert (standing.live_jobs, standing.live_pages, standing.committed_usd) == (2, 10, 0)
    without = uow.budgets.standing(owner, exclude_job=pending)
    assert (without.live_jobs, without.live_pages) == (1, 4)


def _hold(uow: Any, owner: str, job: str, amount: str) -> None:
    uow.ledger.place_hold(job_id=job, owner_id=owner, amount_usd=Decimal(amount), hours=1)


def test_an_open_hold_counts_what_it_may_still_spend_a_closed_or_excluded_one_nothing(uow: Any) -> None:
    owner = _owner()
    spending, overspent, closed, excluded = (_job(uow, owner) for _ in range(4))
    _hold(uow, owner, spending, "1.00")
    uow.ledger.add_chunk_cost(job_id=spending, chunk_index=0, **_usage("0.30"))  # 0.30 spent, 0.70 may follow
    _hold(uow, owner, overspent, "0.10")
    uow.ledger.add_chunk_cost(job_id=overspent, chunk_index=0, **_usage("0.25"))  # past its hold: nothing more held
    _hold(uow, owner, closed, "5.00")
    assert uow.ledger.close_hold(closed, outcome="released", settled_usd=Decimal(0))
    _hold(uow, owner, excluded, "2.00")
    assert uow.budgets.standing(owner, exclude_job=excluded).committed_usd == Decimal("1.25")  # 0.55 spent + 0.70 held
    assert uow.budgets.standing(owner).committed_usd == Decimal("3.25")
    assert uow.budgets.standing(owner).spent_usd == Decimal("0.55")  # the console's "spent" (issue 41.2); held is the rest


def test_an_override_is_set_replaced_and_read_back_and_limits_fall_back_to_the_defaults(uow: Any) -> None:
    owner = _owner()
    defaults = SimpleNamespace(batchlane_budget_usd_per_month=50, batchlane_max_live_jobs=5, batchlane_max_live_pages=500)
    assert uow.budgets.get_override(owner) is None
    assert uow.budgets.limits_for(owner, defaults) == Limits(Decimal(50), 5, 500)
    first = uow.budgets.set_override(owner, usd_per_month=Decimal("12.5"), max_live_jobs=None, max_live_pages=40, updated_by="admin-1")
    assert isinstance(first, BudgetOverride)
    assert (first.owner_id, first.usd_per_month, first.max_live_jobs, first.max_live_pages, first.updated_by) == (owner, Decimal("12.5"), None, 40, "admin-1")
    assert uow.budgets.get_override(owner) == first
    assert uow.budgets.limits_for(owner, defaults) == Limits(Decimal("12.5"), 5, 40)
    uow.budgets.set_override(owner, usd_per_month=None, max_live_jobs=2, max_live_pages=None, updated_by="admin-2")
    again = uow.budgets.get_override(owner)
    assert (again.usd_per_month, again.max_live_jobs, again.max_live_pages, again.updated_by) == (None, 2, None, "admin-2")
    assert uow.budgets.limits_for(owner, defaults) == Limits(Decimal(50), 2, 500)


def test_a_jobs_money_is_its_spend_its_open_hold_and_the_pages_of_its_completed_chunks(uow: Any) -> None:
    owner = _owner()
    job = _job(uow, owner, pages=6)
    assert uow.budgets.job_money(str(uuid.uuid4())) is None
    money = uow.budgets.job_money(job)
    assert isinstance(money, JobMoney)
    assert (money.job_id, money.owner_id, money.status, money.total_pages, money.spent_usd, money.hold_usd, money.pages_done) == (
        job, owner, JobStatus.PENDING, 6, 0, None, 0,
    )  # fmt: skip
    _hold(uow, owner, job, "2.00")
    assert uow.jobs.move_job(job, st.start()) is not None
    assert uow.jobs.claim_chunk(job, 0, "w1") is not None
    assert uow.jobs.complete_chunk(job, 0, "w1", pages_done=1, pages_failed=1, pages_batch=0, cost_usd=Decimal("0.1"), result_key="r/0")
    assert uow.jobs.claim_chunk(job, 1, "w1") is not None  # running: its pages are not done yet
    uow.ledger.add_chunk_cost(job_id=job, chunk_index=0, **_usage("0.10"))
    money = uow.budgets.job_money(job)
    assert (money.status, money.spent_usd, money.hold_usd, money.pages_done) == (JobStatus.PROCESSING, Decimal("0.10"), Decimal(2), 2)
    assert uow.ledger.close_hold(job, outcome="released")
    assert uow.budgets.job_money(job).hold_usd is None


def test_a_reservation_takes_from_the_open_hold_only_what_is_left(uow: Any) -> None:
    owner = _owner()
    job = _job(uow, owner)
    assert uow.budgets.reserve(job, Decimal("0.10")) is None  # no hold: no limit
    _hold(uow, owner, job, "1.00")
    assert uow.budgets.reserve(job, Decimal("0.60")) is True
    assert uow.budgets.reserve(job, Decimal("0.50")) is False  # 0.40 left: nothing taken, the cost kept as wanted
    hold = uow.ledger.get_hold(job)
    assert (hold.committed_usd, hold.wanted_usd) == (Decimal("0.60"), Decimal("0.50"))
    uow.budgets.settle_reservation(job, reserved=Decimal("0.60"), actual=Decimal("0.20"))  # it cost less than reserved
    assert uow.budgets.reserve(job, Decimal("0.10")) is True  # 0.20 + 0.10 + the wanted 0.50 fit: wanted cleared
    hold = uow.ledger.get_hold(job)
    assert (hold.committed_usd, hold.wanted_usd) == (Decimal("0.30"), 0)
    uow.budgets.settle_reservation(job, reserved=Decimal("0.10"), actual=Decimal("0.15"))  # or more: the counter is honest
    assert uow.ledger.get_hold(job).committed_usd == Decimal("0.35")
    assert uow.ledger.close_hold(job, outcome="settled", settled_usd=Decimal("0.35"))
    assert uow.budgets.reserve(job, Decimal("0.01")) is None


def test_a_processing_job_pauses_only_when_the_request_it_must_send_does_not_fit(uow: Any) -> None:
    owner = _owner()
    job = _job(uow, owner)
    _hold(uow, owner, job, "1.00")
    uow.ledger.add_chunk_cost(job_id=job, chunk_index=0, **_usage("1.00"))
    assert uow.budgets.reserve(job, Decimal("1.00")) is True
    assert uow.budgets.reserve(job, Decimal("0.10")) is False  # the next request did not fit
    assert uow.budgets.pause_at_hold(job) is False  # pending: not a source of pause_budget
    assert uow.jobs.move_job(job, st.start()) is not None
    assert uow.budgets.pause_at_hold(job, message="why it paused") is True
    paused = uow.jobs.get_job(job)
    assert (paused.status, paused.error_id, paused.error_message, paused.pause_settled) == (
        JobStatus.PAUSED_BUDGET,
        "BUDGET_HOLD_REACHED",
        "why it paused",
        False,
    )
    assert uow.budgets.pause_at_hold(job) is False  # paused already


def test_a_job_with_nothing_to_send_never_pauses_even_at_a_hold_of_nothing(uow: Any) -> None:
    # Issue 38.5: a blank document held 0 and paused at 0, and again at every resume
    owner = _owner()
    job = _job(uow, owner)
    _hold(uow, owner, job, "0")
    assert uow.jobs.move_job(job, st.start()) is not None
    assert uow.budgets.pause_at_hold(job) is False and uow.jobs.get_job(job).status == JobStatus.PROCESSING


def test_a_hold_grows_by_a_window_gives_back_what_was_not_spent_and_trims_to_what_it_gave_out(uow: Any) -> None:
    owner = _owner()
    job = _job(uow, owner)
    _hold(uow, owner, job, "0.50")
    assert uow.budgets.grow_hold(job, by=Decimal("2")).amount_usd == Decimal("2.50")
    assert uow.budgets.reserve(job, Decimal("1.20")) is True
    uow.budgets.settle_reservation(job, reserved=Decimal("1.20"), actual=Decimal("0.30"))
    uow.budgets.release_hold(job, granted=Decimal("2"), spent=Decimal("0.30"))  # the window closes: 1.70 of it back
    assert uow.ledger.get_hold(job).amount_usd == Decimal("0.80")
    uow.budgets.release_hold(job, granted=Decimal("5"), spent=Decimal(0))  # never below what it gave out
    assert uow.ledger.get_hold(job).amount_usd == Decimal("0.30")
    assert uow.budgets.grow_hold(job, by=Decimal("1")).amount_usd == Decimal("1.30")
    uow.budgets.trim_hold(job)
    assert uow.ledger.get_hold(job).amount_usd == Decimal("0.30")
    assert uow.ledger.close_hold(job, outcome="settled", settled_usd=Decimal("0.30"))
    assert uow.budgets.grow_hold(job, by=Decimal("1")) is None  # a closed hold does not grow


def test_the_holders_are_the_owners_other_jobs_keeping_budget_beyond_their_spend(uow: Any) -> None:
    owner = _owner()
    mine, big, small, spent = _job(uow, owner), _job(uow, owner), _job(uow, owner), _job(uow, owner)
    for job, amount in ((mine, "5"), (big, "3"), (small, "1"), (spent, "1")):
        _hold(uow, owner, job, amount)
    uow.ledger.add_chunk_cost(job_id=small, chunk_index=0, **_usage("0.25"))
    uow.ledger.add_chunk_cost(job_id=spent, chunk_index=0, **_usage("1"))
    held = uow.budgets.holders(owner, exclude_job=mine)
    assert [(h.job_id, h.held_usd) for h in held] == [(big, Decimal("3")), (small, Decimal("0.75"))]
    assert all(h.name for h in held) and uow.budgets.holders(_owner()) == []


def test_a_job_pauses_when_its_hold_cannot_carry_the_next_request_or_the_last_refused_one(uow: Any) -> None:
    owner = _owner()
    cheap, refused, free = _job(uow, owner), _job(uow, owner), _job(uow, owner)
    for job in (cheap, refused, free):
        _hold(uow, owner, job, "1.00")
        assert uow.jobs.move_job(job, st.start()) is not None
        assert uow.budgets.reserve(job, Decimal("0.70")) is True
    assert uow.budgets.pause_at_hold(cheap, next_request_usd=Decimal("0.20")) is False  # 0.30 left carries it
    assert uow.budgets.pause_at_hold(cheap, next_request_usd=Decimal("0.40")) is True  # asked explicitly
    assert uow.budgets.reserve(refused, Decimal("0.50")) is False
    assert uow.budgets.pause_at_hold(refused, next_request_usd=Decimal("0.01")) is True  # the refused 0.50 cannot be carried
    assert uow.ledger.close_hold(free, outcome="released")
    assert uow.budgets.pause_at_hold(free, next_request_usd=Decimal(5)) is False  # no open hold: no limit


def test_a_paused_job_is_settled_then_resumed_with_a_raised_hold_and_its_running_chunks_start_over(uow: Any) -> None:
    owner = _owner()
    job = _job(uow, owner, pages=6)
    _hold(uow, owner, job, "1.00")
    assert uow.budgets.mark_pause_settled(job) is False  # not paused
    assert uow.budgets.resume_paused(job, hold_usd=Decimal(2)) is None
    assert uow.jobs.move_job(job, st.start()) is not None
    assert uow.jobs.claim_chunk(job, 0, "w1") is not None
    assert uow.jobs.complete_chunk(job, 0, "w1", pages_done=2, pages_failed=0, pages_batch=0, cost_usd=Decimal("0.5"), result_key="r/0")
    assert uow.jobs.claim_chunk(job, 1, "w1") is not None  # running when the job paused
    uow.ledger.add_chunk_cost(job_id=job, chunk_index=0, **_usage("1.00"))
    assert uow.budgets.pause_at_hold(job, next_request_usd=Decimal("1.50")) is True
    assert uow.budgets.mark_pause_settled(job) is True and uow.jobs.get_job(job).pause_settled is True

    resumed = uow.budgets.resume_paused(job, hold_usd=Decimal("2.50"))
    assert (resumed.status, resumed.error_id, resumed.error_message, resumed.pause_settled, resumed.budget_resumes) == (
        JobStatus.PROCESSING, None, None, False, 1,
    )  # fmt: skip
    assert [c.status for c in uow.jobs.get_chunks(job)] == [ChunkStatus.COMPLETED, ChunkStatus.PENDING, ChunkStatus.PENDING]
    assert uow.ledger.get_hold(job).amount_usd == Decimal("2.50")
    assert uow.budgets.resume_paused(job, hold_usd=Decimal(9)) is None  # processing: resumed already
    assert uow.budgets.pause_at_hold(job) is False and uow.budgets.resume_paused(job, hold_usd=Decimal(1)) is None
    assert uow.ledger.get_hold(job).amount_usd == Decimal("2.50")  # a resume never lowers the hold


# -- every status move the budgets make is a row of domain.status's table (issue 23, point 3) --
def _observed_moves(uow: Any, job: str, before_job: str, before_chunks: list[str]) -> set[tuple[Entity, str, str]]:
    after_job = uow.jobs.get_job(job).status
    moves = {(Entity.JOB, before_job, after_job)} if after_job != before_job else set()
    after_chunks = [c.status for c in uow.jobs.get_chunks(job)]
    return moves | {(Entity.CHUNK, b, a) for b, a in zip(before_chunks, after_chunks, strict=True) if a != b}


def _allowed(entity: Entity, source: str, target: str) -> bool:
    return any(t.entity is entity and t.allows(source) and t.target == target for t in st.TRANSITIONS)


@pytest.mark.parametrize("status", list(JobStatus), ids=str)
def test_the_budgets_move_a_job_and_its_chunks_only_along_the_transition_table(uow: Any, status: JobStatus) -> None:
    """Every status a job can be in, its hold exhausted, a chunk running: pausing at the hold and resuming move the
    job (and its chunks) only from a transition's sources to its target, and only by the transitions named for them."""
    owner = _owner()
    job = _job(uow, owner, pages=4)
    _hold(uow, owner, job, "0.10")
    uow.ledger.add_chunk_cost(job_id=job, chunk_index=0, **_usage("0.50"))
    assert uow.budgets.reserve(job, Decimal("0.50")) is False  # the request it must send next does not fit
    assert uow.jobs.move_job(job, st.start()) is not None and uow.jobs.claim_chunk(job, 0, "w1") is not None
    forced = {"status": status}  # put the job in ``status`` whatever the path (the chunk stays processing)
    if status != JobStatus.PROCESSING:
        forced_move = st.Transition(Entity.JOB, "test_only", frozenset({JobStatus.PROCESSING.value}), status.value)
        assert uow.jobs.move_job(job, forced_move) is not None, forced

    moves: set[tuple[Entity, str, str]] = set()
    for act in (
        lambda: uow.budgets.pause_at_hold(job),
        lambda: uow.budgets.mark_pause_settled(job),
        lambda: uow.budgets.resume_paused(job, hold_usd=Decimal(1)),
    ):
        before_job, before_chunks = uow.jobs.get_job(job).status, [c.status for c in uow.jobs.get_chunks(job)]
        act()
        moves |= _observed_moves(uow, job, before_job, before_chunks)
    assert all(_allowed(*m) for m in moves), sorted(moves)
    theirs = {(Entity.JOB, "pause_budget"), (Entity.JOB, "resume"), (Entity.CHUNK, "resume")}  # the moves budgets is named for
    named = {(t.entity, s, t.target) for t in st.TRANSITIONS if (t.entity, t.name) in theirs for s in t.sources}
    assert moves <= named, sorted(moves - named)
    resumed = {(Entity.JOB, "paused_budget", "processing"), (Entity.CHUNK, "processing", "pending")}
    expected = {
        JobStatus.PROCESSING: {(Entity.JOB, "processing", "paused_budget"), *resumed},  # paused at its hold, then resumed
        JobStatus.PAUSED_BUDGET: resumed,  # its running chunk starts over
    }
    assert moves == expected.get(status, set())
