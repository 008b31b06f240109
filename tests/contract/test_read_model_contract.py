"""ReadModel's contract, on the fake and on PostgreSQL: what the API shows of a job (its chunks summed, its lanes summed
busiest state first and newest lane's end, its funds hold), which job is a file's current one, an owner's files and
nobody else's, and a job's spend per model."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from batchlane.domain import status as st
from batchlane.domain.status import Entity, JobStatus
from batchlane.pdf.split import plan_chunks
from batchlane.rows import FileJob, NewFolderFile


def _owner() -> str:
    return f"reads-{uuid.uuid4().hex[:8]}"


def _file(uow: Any, owner: str) -> str:
    return str(uow.jobs.insert_file(owner_id=owner, name="book.pdf", s3_key=f"uploads/{uuid.uuid4()}.pdf", size_bytes=1000).id)


def _job(uow: Any, owner: str, file_id: str | None = None, *, status: str = JobStatus.PENDING, pages: int = 6) -> str:
    job = uow.jobs.insert_job(
        file_id=file_id or _file(uow, owner), owner_id=owner, status=status, options={}, model_id="model-a", total_pages=pages, pages_per_chunk=2,
        chunks=plan_chunks(pages, 2),
    )  # fmt: skip
    return str(job.id)


def test_a_jobs_progress_sums_its_chunks_and_shows_its_hold(uow: Any) -> None:
    owner = _owner()
    file_id = _file(uow, owner)
    job_id = _job(uow, owner, file_id)
    assert uow.jobs.move_job(job_id, st.start()) is not None
    assert uow.jobs.claim_chunk(job_id, 0, "w1") and uow.jobs.claim_chunk(job_id, 1, "w1")
    assert uow.jobs.complete_chunk(job_id, 0, "w1", pages_done=2, pages_failed=0, pages_batch=0, cost_usd=Decimal("0.01"), result_key="r/0")
    assert uow.jobs.heartbeat_chunk(job_id, 1, "w1", 1)  # one page of two done so far
    assert uow.jobs.move_chunks(job_id, st.cancel(Entity.CHUNK), indexes=[2]) == 1
    uow.ledger.place_hold(job_id=job_id, owner_id=owner, amount_usd=Decimal("5"), hours=30)
    job = uow.reads.job(job_id)
    assert (job.job_id, job.file_id, job.owner_id, job.status, job.model_id) == (job_id, file_id, owner, "processing", "model-a")
    assert (job.total_pages, job.chunk_count, job.chunks_done, job.chunks_cancelled, job.pages_done, job.pages_failed) == (6, 3, 1, 1, 3, 0)
    assert (job.hold.amount_usd, job.hold.outcome, job.hold.settled_usd) == (Decimal("5"), None, None) and job.hold.expires_at is not None
    assert (job.lanes, job.retry_attempt, job.retry_pages, job.error_id, job.finished_at) == (None, None, None, None, None)
    assert job.started_at is not None
    uow.ledger.close_hold(job_id, outcome="settled", settled_usd=Decimal("1.5"))
    assert (uow.reads.job(job_id).hold.outcome, uow.reads.job(job_id).hold.settled_usd) == ("settled", Decimal("1.5"))
    assert uow.reads.job(str(uuid.uuid4())) is None


def test_a_jobs_lanes_are_summed_busiest_state_first_with_the_newest_lanes_end(uow: Any) -> None:
    owner = _owner()
    job_id = _job(uow, owner, status=JobStatus.WAITING_BATCH, pages=4)
    uow.ledger.place_hold(job_id=job_id, owner_id=owner, amount_usd=Decimal("5"), hours=30)
    first = uow.lanes.insert_lane(lane_id=str(uuid.uuid4()), model_id="model-a", deadline_hours=24, chunks=[(job_id, 0, 2)])
    uow.lanes.record_member_records(first.id, {(job_id, 0): 2})
    assert uow.lanes.close(first.lane_id, st.leave_before_submit(), end_state="skipped", reason="quota") is not None
    uow.lanes.record_accepted(first.id, {(job_id, 0): 1})
    uow.ledger.add_batch_share(job_id=job_id, lane_row_id=first.id, model_id="model-a", input_tokens=10, output_tokens=5, cost_usd=Decimal("0.1"), metadata={})
    second = uow.lanes.insert_lane(lane_id=str(uuid.uuid4()), model_id="model-a", deadline_hours=24, chunks=[(job_id, 1, 2)])
    lanes = uow.reads.job(job_id).lanes
    assert (lanes.state, lanes.end_state, lanes.reason, lanes.lanes, lanes.submitted_at) == ("preparing", None, None, 2, None)  # the newest is open
    assert (lanes.record_count, lanes.accepted_count, lanes.fallback_count, lanes.cost_usd) == (2, 1, 1, Decimal("0.1"))
    assert lanes.closed_at is not None  # the first one's
    assert uow.reads.jobs_of_file(uow.jobs.get_job(job_id).file_id) == [FileJob(job_id, "preparing")]
    assert uow.lanes.close(second.lane_id, st.leave_before_submit(), end_state="failed", reason="prepare failed") is not None
    closed = uow.reads.job(job_id).lanes
    assert (closed.state, closed.end_state, closed.reason, closed.lanes) == ("closed", "failed", "prepare failed", 2)
    assert uow.reads.jobs_of_file(uow.jobs.get_job(job_id).file_id) == [FileJob(job_id, None)]


def test_a_job_the_pool_let_go_without_a_lane_shows_a_skipped_lane(uow: Any) -> None:
    owner = _owner()
    let_go, waiting = _job(uow, owner, status=JobStatus.WAITING_BATCH), _job(uow, owner, status=JobStatus.WAITING_BATCH)
    assert uow.lanes.leave_pool([let_go], reason="deadline") == [let_go]
    lanes = uow.reads.job(let_go).lanes
    assert (lanes.state, lanes.end_state, lanes.reason, lanes.lanes, lanes.record_count, lanes.cost_usd) == ("closed", "skipped", "deadline", 0, None, None)
    assert uow.reads.job(waiting).lanes is None


def test_a_files_current_job_is_its_live_one_else_its_newest(uow: Any) -> None:
    owner = _owner()
    file_id = _file(uow, owner)
    assert uow.reads.current_job(file_id) is None
    live = _job(uow, owner, file_id)
    newer_failed = _job(uow, owner, file_id, status=JobStatus.FAILED)
    assert uow.reads.current_job(file_id).job_id == live
    assert uow.jobs.move_job(live, st.cancel()) is not None
    assert uow.reads.current_job(file_id).job_id == newer_failed
    assert {j.job_id for j in uow.reads.jobs_of_file(file_id)} == {live, newer_failed}
    assert uow.reads.jobs_of_file(str(uuid.uuid4())) == []


def test_an_owners_files_are_theirs_only_newest_first_without_the_deleted_ones(uow: Any) -> None:
    owner, other = _owner(), _owner()
    old = _file(uow, owner)
    new = _file(uow, owner)
    converting = _job(uow, owner, new)
    deleted = _file(uow, owner)
    uow.jobs.mark_file_deleted(deleted)
    folder_file = uow.folder_jobs.insert_source_file(owner_id=owner, name="f.pdf", bucket="theirs", key="in/f.pdf", size_bytes=5)
    folder_conversion = _job(uow, owner, folder_file.id)
    folder_job_id = "fj-" + uuid.uuid4().hex[:24]
    uow.folder_jobs.add(job_id=folder_job_id, owner_id=owner, name=None, spec={}, source=("theirs", "in/"), target=("out", "md/"))
    uow.folder_jobs.add_files(folder_job_id, [NewFolderFile("in/f.pdf", 5, "md/f.md")])
    uow.folder_jobs.claim_queued(folder_job_id, 1)
    uow.folder_jobs.attach_conversion(folder_job_id, "in/f.pdf", file_id=folder_file.id, conversion_job_id=folder_conversion)
    _file(uow, other)

    files = uow.reads.owner_files(owner, job_status=None, limit=10)
    assert [f.file_id for f in files] == [folder_file.id, new, old]
    assert [(f.folder_job_id, f.job.job_id if f.job else None) for f in files] == [(folder_job_id, folder_conversion), (None, converting), (None, None)]
    assert (files[1].name, files[1].size_bytes, files[1].status) == ("book.pdf", 1000, "uploaded") and files[1].created_at is not None
    assert [f.file_id for f in uow.reads.owner_files(owner, job_status="pending", limit=10)] == [folder_file.id, new]
    assert uow.reads.owner_files(owner, job_status="completed", limit=10) == []
    assert [f.file_id for f in uow.reads.owner_files(owner, job_status=None, limit=1)] == [folder_file.id]


def test_a_jobs_spend_is_summed_per_model(uow: Any) -> None:
    owner = _owner()
    job_id, other = _job(uow, owner), _job(uow, owner)
    for job, index, model, cost in ((job_id, 0, "model-b", "0.2"), (job_id, 1, "model-a", "0.1"), (job_id, 2, "model-a", "0.05"), (other, 0, "model-a", "9")):
        uow.ledger.add_chunk_cost(job_id=job, chunk_index=index, model_id=model, input_tokens=10, output_tokens=3, cost_usd=Decimal(cost), metadata={})
    spend = uow.reads.spend_by_model(job_id)
    assert [(s.model_id, s.cost_usd, s.input_tokens, s.output_tokens) for s in spend] == [
        ("model-a", Decimal("0.15"), 20, 6),
        ("model-b", Decimal("0.2"), 10, 3),
    ]
    assert uow.reads.spend_by_model(str(uuid.uuid4())) == []
