"""BudgetRepository's contract, on the fake and on PostgreSQL: an owner's standing (this month's spend, what open holds
may still spend, live jobs and pages) counts what the ledger booked on their jobs, whatever lane booked it."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from batchlane.domain import status as st
from batchlane.domain.status import JobStatus
from batchlane.pdf.split import plan_chunks


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
    # a Bedrock job of the job's own, from before the pool: its batch row carries its job
    assert uow.ledger.add_batch_cost(job_id=mine, batch_row_id=new_lane(mine), **_usage("0.20")) is True
    # a shared lane: one row with no job, a share per member
    lane = new_lane(mine, 1)
    assert uow.ledger.add_batch_cost(job_id=None, batch_row_id=lane, **_usage("0.70")) is True
    uow.ledger.add_batch_share(job_id=mine, batch_row_id=lane, **_usage("0.40"))
    uow.ledger.add_batch_share(job_id=theirs, batch_row_id=lane, **_usage("0.30"))

    assert uow.budgets.standing(owner).committed_usd == Decimal("0.70")  # 0.10 chunk + 0.20 batch + 0.40 batch_share
    assert uow.budgets.standing(other).committed_usd == Decimal("0.30")  # its share only, never the lane's whole bill


def test_a_share_or_a_lane_row_booked_twice_counts_once(uow: Any, new_lane: Any) -> None:
    owner = _owner()
    job = _job(uow, owner)
    lane = new_lane(job)
    assert uow.ledger.add_batch_cost(job_id=None, batch_row_id=lane, **_usage("0.50")) is True
    assert uow.ledger.add_batch_cost(job_id=None, batch_row_id=lane, **_usage("0.50")) is False
    uow.ledger.add_batch_share(job_id=job, batch_row_id=lane, **_usage("0.50"))
    uow.ledger.add_batch_share(job_id=job, batch_row_id=lane, **_usage("0.50"))
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
