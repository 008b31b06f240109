"""LedgerRepository's contract, on the fake and on PostgreSQL: ledger rows and funds holds read back as typed rows,
a job's totals follow its rows, and a hold opens once, closes once and reopens for a retry."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from batchlane.domain import status as st
from batchlane.domain.status import JobStatus
from batchlane.pdf.split import plan_chunks
from batchlane.rows import Hold, LedgerRow

OWNER = "owner-ledger-contract"
MINUTE = timedelta(minutes=1)


def _job(uow: Any, *, status: str = JobStatus.PENDING, pages: int = 4) -> str:
    file_id = uow.jobs.insert_file(owner_id=OWNER, name="book.pdf", s3_key=f"uploads/{uuid.uuid4()}.pdf", size_bytes=1000).id
    job = uow.jobs.insert_job(
        file_id=file_id, owner_id=OWNER, status=status, options={}, model_id="model-a", total_pages=pages, pages_per_chunk=2,
        chunks=plan_chunks(pages, 2),
    )  # fmt: skip
    return str(job.id)


def _usage(cost: str, *, inp: int = 100, out: int = 50, **metadata: Any) -> dict[str, Any]:
    return {"model_id": "model-a", "input_tokens": inp, "output_tokens": out, "cost_usd": Decimal(cost), "metadata": metadata}


# -- the ledger ------------------------------------------------------------------------------
def test_a_jobs_rows_read_back_typed_in_booking_order_without_the_lanes_own_row(uow: Any, new_lane: Any, now: datetime) -> None:
    job = _job(uow)
    uow.ledger.add_chunk_cost(job_id=job, chunk_index=1, **_usage("0.12", inp=1200, out=300, requests=2))
    lane = new_lane(job)
    assert uow.ledger.add_batch_cost(job_id=None, lane_row_id=lane, **_usage("0.50", inp=5000, out=900))
    uow.ledger.add_batch_share(job_id=job, lane_row_id=lane, **_usage("0.20", inp=2000, out=400, records=2))

    chunk, share = uow.ledger.ledger_rows(job)
    assert isinstance(chunk, LedgerRow) and isinstance(share, LedgerRow) and chunk.id < share.id
    assert (chunk.job_id, chunk.chunk_index, chunk.lane_row_id, chunk.source, chunk.backend, chunk.model_id) == (job, 1, None, "chunk", "on_demand", "model-a")
    assert (chunk.input_tokens, chunk.output_tokens, chunk.cost_usd, chunk.metadata) == (1200, 300, Decimal("0.12"), {"requests": 2})
    assert (share.job_id, share.chunk_index, share.lane_row_id, share.source, share.backend) == (job, None, lane, "batch_share", "batch")
    assert (share.input_tokens, share.output_tokens, share.cost_usd, share.metadata) == (2000, 400, Decimal("0.20"), {"records": 2})
    assert abs(chunk.created_at - now) < MINUTE
    assert uow.ledger.ledger_rows(_job(uow)) == []


def test_a_jobs_total_is_all_its_rows_and_its_batch_cost_its_lanes(uow: Any, new_lane: Any) -> None:
    job = _job(uow)
    assert (uow.ledger.job_total(job), uow.ledger.batch_cost_of_job(job)) == (0, 0)
    uow.ledger.add_chunk_cost(job_id=job, chunk_index=0, **_usage("0.10"))
    uow.ledger.add_chunk_cost(job_id=job, chunk_index=1, **_usage("0.05"))
    assert uow.ledger.add_batch_cost(job_id=job, lane_row_id=new_lane(job), **_usage("0.30"))  # a pre-pool lane of its own
    lane = new_lane(job, 1)
    uow.ledger.add_batch_share(job_id=job, lane_row_id=lane, **_usage("0.20"))
    assert uow.ledger.job_total(job) == Decimal("0.65")
    assert uow.ledger.batch_cost_of_job(job) == Decimal("0.50")


def test_a_lane_row_and_a_share_are_booked_once(uow: Any, new_lane: Any) -> None:
    job = _job(uow)
    lane = new_lane(job)
    assert uow.ledger.add_batch_cost(job_id=None, lane_row_id=lane, **_usage("0.50")) is True
    assert uow.ledger.add_batch_cost(job_id=None, lane_row_id=lane, **_usage("0.70")) is False
    uow.ledger.add_batch_share(job_id=job, lane_row_id=lane, **_usage("0.25"))
    uow.ledger.add_batch_share(job_id=job, lane_row_id=lane, **_usage("0.25"))
    assert [r.cost_usd for r in uow.ledger.ledger_rows(job)] == [Decimal("0.25")]


def test_a_late_batch_bill_is_carried_into_a_finished_jobs_total_and_settled_hold(uow: Any, new_lane: Any) -> None:
    job = _job(uow)
    uow.ledger.place_hold(job_id=job, owner_id=OWNER, amount_usd=Decimal(2), hours=1)
    assert uow.jobs.move_job(job, st.start()) is not None
    uow.ledger.add_chunk_cost(job_id=job, chunk_index=0, **_usage("0.10"))
    assert uow.jobs.move_job(job, st.assemble()) is not None
    assert uow.jobs.move_job(job, st.settle(), total_cost_usd=Decimal("0.10")) is not None
    assert uow.ledger.close_hold(job, outcome="settled", settled_usd=Decimal("0.10"))
    # the lane that carried it bills after it finished
    uow.ledger.add_batch_share(job_id=job, lane_row_id=new_lane(job), **_usage("0.30"))
    uow.ledger.carry_late_batch_cost(job)
    done = uow.jobs.get_job(job)
    assert (done.total_cost_usd, done.batch_cost_usd) == (Decimal("0.40"), Decimal("0.30"))
    assert uow.ledger.get_hold(job).settled_usd == Decimal("0.40")


def test_a_parked_or_running_job_keeps_its_total_and_a_parked_one_its_batch_cost(uow: Any, new_lane: Any) -> None:
    parked, running = _job(uow, status=JobStatus.WAITING_BATCH), _job(uow)
    assert uow.jobs.move_job(running, st.start()) is not None
    for job in (parked, running):
        uow.ledger.add_batch_share(job_id=job, lane_row_id=new_lane(job), **_usage("0.30"))
        uow.ledger.carry_late_batch_cost(job)
    assert (uow.jobs.get_job(parked).total_cost_usd, uow.jobs.get_job(parked).batch_cost_usd) == (0, 0)
    assert (uow.jobs.get_job(running).total_cost_usd, uow.jobs.get_job(running).batch_cost_usd) == (0, Decimal("0.30"))


# -- funds holds -----------------------------------------------------------------------------
def test_a_hold_is_placed_once_and_reads_back_open(uow: Any, now: datetime) -> None:
    job = _job(uow)
    assert uow.ledger.get_hold(job) is None
    uow.ledger.place_hold(job_id=job, owner_id=OWNER, amount_usd=Decimal("1.50"), hours=2)
    uow.ledger.place_hold(job_id=job, owner_id=OWNER, amount_usd=Decimal(9), hours=9)  # a second is ignored
    hold = uow.ledger.get_hold(job)
    assert isinstance(hold, Hold)
    assert (hold.job_id, hold.owner_id, hold.amount_usd, hold.outcome, hold.settled_usd) == (job, OWNER, Decimal("1.50"), None, None)
    assert (hold.committed_usd, hold.wanted_usd) == (0, 0)
    assert abs(hold.expires_at - (now + timedelta(hours=2))) < MINUTE


def test_an_open_hold_is_extended_and_closed_once(uow: Any, now: datetime) -> None:
    job = _job(uow)
    uow.ledger.place_hold(job_id=job, owner_id=OWNER, amount_usd=Decimal(1), hours=1)
    uow.ledger.extend_hold(job, hours=30)
    assert abs(uow.ledger.get_hold(job).expires_at - (now + timedelta(hours=30))) < MINUTE
    assert uow.ledger.close_hold(job, outcome="settled", settled_usd=Decimal("0.40")) is True
    assert uow.ledger.close_hold(job, outcome="cancelled") is False  # closed already: the first outcome stays
    closed = uow.ledger.get_hold(job)
    assert (closed.outcome, closed.settled_usd) == ("settled", Decimal("0.40"))
    uow.ledger.extend_hold(job, hours=1)  # a closed hold is not extended
    assert uow.ledger.get_hold(job).expires_at == closed.expires_at
    assert uow.ledger.close_hold(str(uuid.uuid4()), outcome="released") is False


def test_a_settled_hold_reopens_for_a_retry_on_top_of_what_it_settled_at(uow: Any) -> None:
    job = _job(uow)
    uow.ledger.place_hold(job_id=job, owner_id=OWNER, amount_usd=Decimal(1), hours=1)
    assert uow.ledger.close_hold(job, outcome="settled", settled_usd=Decimal("0.40"))
    uow.ledger.reopen_hold(job, extra_usd=Decimal("0.25"), hours=1)
    hold = uow.ledger.get_hold(job)
    assert (hold.outcome, hold.amount_usd, hold.committed_usd, hold.settled_usd) == (None, Decimal("0.65"), Decimal("0.40"), None)


def test_a_batch_share_is_spent_from_the_jobs_hold_once(uow: Any, new_lane: Any) -> None:
    job = _job(uow)
    uow.ledger.place_hold(job_id=job, owner_id=OWNER, amount_usd=Decimal(1), hours=1)
    lane = new_lane(job)
    uow.ledger.add_batch_share(job_id=job, lane_row_id=lane, **_usage("0.30"))
    uow.ledger.add_batch_share(job_id=job, lane_row_id=lane, **_usage("0.30"))
    assert uow.ledger.get_hold(job).committed_usd == Decimal("0.30")
