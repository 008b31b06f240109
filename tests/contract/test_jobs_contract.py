"""JobRepository's contract, on the fake and on PostgreSQL: files, jobs and chunks move only as domain.status allows.

Only the port's methods are used, so a rule the fake forgets (or the SQL loses) fails here on one side.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from batchlane.domain import status as st
from batchlane.domain.status import ChunkStatus, Entity, FileStatus, JobStatus
from batchlane.pdf.split import plan_chunks
from batchlane.ports import UniqueViolation

OWNER = "owner-jobs-contract"


def _file(uow: Any) -> str:
    return str(uow.jobs.insert_file(owner_id=OWNER, name="book.pdf", s3_key=f"uploads/{uuid.uuid4()}.pdf", size_bytes=1000).id)


def _job(uow: Any, *, status: str = JobStatus.PENDING, pages: int = 6, per_chunk: int = 2) -> str:
    file_id = _file(uow)
    job = uow.jobs.insert_job(
        file_id=file_id,
        owner_id=OWNER,
        status=status,
        options={"highFidelity": True},
        model_id="model-a",
        total_pages=pages,
        pages_per_chunk=per_chunk,
        chunks=plan_chunks(pages, per_chunk) if pages else [],
    )
    return str(job.id)


def _processing(uow: Any) -> str:
    job_id = _job(uow)
    assert uow.jobs.move_job(job_id, st.start()) is not None
    return job_id


def _completed(uow: Any) -> str:
    """A job whose every chunk was converted, assembled and settled: what a user sees as done."""
    job_id = _processing(uow)
    for chunk in uow.jobs.get_chunks(job_id):
        assert uow.jobs.claim_chunk(job_id, chunk.chunk_index, "w1") is not None
        assert uow.jobs.complete_chunk(
            job_id, chunk.chunk_index, "w1", pages_done=2, pages_failed=0, pages_batch=0, cost_usd=Decimal("0.01"), result_key=f"r/{chunk.chunk_index}"
        )
    assert uow.jobs.move_job(job_id, st.assemble()) is not None
    assert uow.jobs.move_job(job_id, st.settle(), total_cost_usd=Decimal("0.03")) is not None
    return job_id


# -- files ---------------------------------------------------------------------------------
def test_a_file_follows_its_job_only_along_the_table(uow: Any) -> None:
    file_id = _file(uow)
    assert uow.jobs.get_file(file_id).status == FileStatus.UPLOADED
    assert uow.jobs.move_file(file_id, st.settle(Entity.FILE)) is False  # uploaded is not converting
    assert uow.jobs.move_file(file_id, st.convert()) is True
    assert uow.jobs.move_file(file_id, st.settle(Entity.FILE)) is True
    assert uow.jobs.get_file(file_id).status == FileStatus.CONVERTED
    assert uow.jobs.get_file(str(uuid.uuid4())) is None


def test_a_move_of_another_entity_is_refused(uow: Any) -> None:
    job_id = _job(uow)
    with pytest.raises(ValueError, match="not a transition"):
        uow.jobs.move_job(job_id, st.start(Entity.CHUNK))


# -- jobs ----------------------------------------------------------------------------------
def test_a_new_job_has_its_chunks_in_its_status(uow: Any) -> None:
    job_id = _job(uow, pages=5, per_chunk=2)
    job = uow.jobs.get_job(job_id)
    assert (job.status, job.chunk_count, job.total_pages, job.options) == (JobStatus.PENDING, 3, 5, {"highFidelity": True})
    assert job.finished_at is None and job.started_at is None
    assert [(c.chunk_index, c.first_page, c.last_page, c.status) for c in uow.jobs.get_chunks(job_id)] == [
        (0, 1, 2, "pending"),
        (1, 3, 4, "pending"),
        (2, 5, 5, "pending"),
    ]
    assert uow.jobs.live_job_of_file(str(job.file_id)) == job_id


def test_a_job_refused_at_intake_is_finished_and_not_live(uow: Any) -> None:
    job_id = _job(uow, status=JobStatus.FAILED, pages=0)
    job = uow.jobs.get_job(job_id)
    assert job.finished_at is not None and uow.jobs.get_chunks(job_id) == []
    assert uow.jobs.live_job_of_file(str(job.file_id)) is None


def test_the_split_parks_or_queues_and_writes_the_chunks(uow: Any) -> None:
    parked = _job(uow, status=JobStatus.SPLITTING, pages=0)
    assert uow.jobs.get_chunks(parked) == []
    job = uow.jobs.finish_split(parked, parked=True, total_pages=4, chunks=plan_chunks(4, 2))
    assert (job.status, job.total_pages, job.chunk_count) == (JobStatus.WAITING_BATCH, 4, 2)
    assert {c.status for c in uow.jobs.get_chunks(parked)} == {ChunkStatus.WAITING_BATCH}
    queued = _job(uow, status=JobStatus.SPLITTING, pages=0)
    assert uow.jobs.finish_split(queued, parked=False, total_pages=2, chunks=plan_chunks(2, 2)).status == JobStatus.PENDING


def test_a_split_that_ends_after_a_cancel_writes_nothing(uow: Any) -> None:
    job_id = _job(uow, status=JobStatus.SPLITTING, pages=0)
    assert uow.jobs.move_job(job_id, st.cancel()) is not None
    assert uow.jobs.finish_split(job_id, parked=False, total_pages=4, chunks=plan_chunks(4, 2)) is None
    assert uow.jobs.get_job(job_id).status == JobStatus.CANCELLED and uow.jobs.get_chunks(job_id) == []


def test_a_move_from_outside_its_sources_changes_nothing(uow: Any) -> None:
    job_id = _job(uow)
    assert uow.jobs.move_job(job_id, st.settle(), total_cost_usd=Decimal(5)) is None  # pending is not assembling
    job = uow.jobs.get_job(job_id)
    assert (job.status, job.total_cost_usd) == (JobStatus.PENDING, 0)
    assert uow.jobs.move_job(str(uuid.uuid4()), st.start()) is None


def test_starting_stamps_started_at_and_finishing_finished_at(uow: Any) -> None:
    job_id = _processing(uow)
    started = uow.jobs.get_job(job_id)
    assert started.status == JobStatus.PROCESSING and started.started_at is not None and started.finished_at is None
    failed = uow.jobs.move_job(job_id, st.fail(), error_id="BOOM", error_message="it broke")
    assert (failed.status, failed.error_id, failed.error_message) == (JobStatus.FAILED, "BOOM", "it broke")
    assert failed.finished_at is not None and failed.started_at == started.started_at
    assert uow.jobs.live_job_of_file(str(failed.file_id)) is None


def test_a_completed_job_is_never_reopened_into_processing(uow: Any) -> None:
    """A late start (a redelivered Step Functions task) or resume must not take a finished job back:
    planted bug (issue 23.10), a completed → processing move caught before only by the table's restatement."""
    job_id = _completed(uow)
    assert uow.jobs.move_job(job_id, st.start()) is None
    assert uow.jobs.move_job(job_id, st.resume()) is None
    assert uow.jobs.move_job(job_id, st.assemble()) is None
    job = uow.jobs.get_job(job_id)
    assert (job.status, job.total_cost_usd) == (JobStatus.COMPLETED, Decimal("0.03")) and job.finished_at is not None


def test_a_late_chunk_worker_cannot_reopen_or_rewrite_a_completed_job(uow: Any) -> None:
    """A worker whose lease was taken over comes back after the job completed: nothing it does moves the job or its chunks."""
    job_id = _completed(uow)
    assert uow.jobs.claim_chunk(job_id, 0, "late") is None  # the job is not processing
    assert uow.jobs.move_chunks(job_id, st.start(Entity.CHUNK)) == 0
    assert uow.jobs.complete_chunk(job_id, 0, "late", pages_done=0, pages_failed=2, pages_batch=0, cost_usd=Decimal(1), result_key="late") is False
    assert uow.jobs.heartbeat_chunk(job_id, 0, "late", 0) is False
    assert uow.jobs.get_job(job_id).status == JobStatus.COMPLETED
    first = uow.jobs.get_chunks(job_id)[0]
    assert (first.status, first.result_key, first.pages_failed) == (ChunkStatus.COMPLETED, "r/0", 0)


def test_jobs_in_a_status_unchanged_for_long_are_the_stalled_ones(uow: Any) -> None:
    job_id = _job(uow, status=JobStatus.SPLITTING, pages=0)
    assert job_id in uow.jobs.jobs_in(JobStatus.SPLITTING, unchanged_for_s=0)
    assert job_id not in uow.jobs.jobs_in(JobStatus.SPLITTING, unchanged_for_s=3600)
    assert job_id not in uow.jobs.jobs_in(JobStatus.PENDING, unchanged_for_s=0)


def test_a_second_live_job_of_one_file_is_refused(uow: Any) -> None:
    job_id = _job(uow)
    file_id = str(uow.jobs.get_job(job_id).file_id)
    with pytest.raises(UniqueViolation) as refused:  # what the API answers 409 CONVERSION_IN_PROGRESS on
        uow.jobs.insert_job(
            file_id=file_id, owner_id=OWNER, status=JobStatus.PENDING, options={}, model_id="m", total_pages=2, pages_per_chunk=2, chunks=plan_chunks(2, 2)
        )
    assert refused.value.constraint == "one_live_job_per_file"


def test_a_finished_job_is_not_made_live_again_beside_a_newer_live_job_of_its_file(uow: Any) -> None:
    done = _completed(uow)
    file_id = str(uow.jobs.get_job(done).file_id)
    uow.jobs.insert_job(  # the file converted again: allowed, the first job is finished
        file_id=file_id, owner_id=OWNER, status=JobStatus.PENDING, options={}, model_id="m", total_pages=2, pages_per_chunk=2, chunks=plan_chunks(2, 2)
    )
    with pytest.raises(UniqueViolation) as refused:  # a retry of the first job's pages would make two live jobs
        uow.jobs.move_job(done, st.retry())
    assert refused.value.constraint == "one_live_job_per_file"


# -- chunks --------------------------------------------------------------------------------
def test_a_chunk_is_claimed_only_while_its_job_is_processing(uow: Any) -> None:
    job_id = _job(uow)
    assert uow.jobs.claim_chunk(job_id, 0, "w1") is None  # pending job
    assert uow.jobs.move_job(job_id, st.start()) is not None
    claimed = uow.jobs.claim_chunk(job_id, 0, "w1")
    assert (claimed.status, claimed.worker_id, claimed.attempts) == (ChunkStatus.PROCESSING, "w1", 1) and claimed.heartbeat_at is not None
    assert uow.jobs.claim_chunk(job_id, 9, "w1") is None


def test_a_taken_over_chunk_belongs_to_the_new_worker_only(uow: Any) -> None:
    job_id = _processing(uow)
    assert uow.jobs.claim_chunk(job_id, 0, "old") is not None
    taken = uow.jobs.claim_chunk(job_id, 0, "new")  # a previous attempt's processing is taken over
    assert (taken.worker_id, taken.attempts) == ("new", 2)
    assert uow.jobs.chunk_still_owned(job_id, 0, "old") is False and uow.jobs.chunk_still_owned(job_id, 0, "new") is True
    assert uow.jobs.heartbeat_chunk(job_id, 0, "old", 1) is False
    assert uow.jobs.heartbeat_chunk(job_id, 0, "new", 1) is True
    assert uow.jobs.complete_chunk(job_id, 0, "old", pages_done=2, pages_failed=0, pages_batch=0, cost_usd=Decimal(1), result_key="old") is False
    assert uow.jobs.complete_chunk(job_id, 0, "new", pages_done=2, pages_failed=0, pages_batch=1, cost_usd=Decimal("0.5"), result_key="new") is True
    chunk = uow.jobs.get_chunk(job_id, 0)
    assert (chunk.status, chunk.result_key, chunk.pages_done, chunk.pages_batch, chunk.cost_usd) == (ChunkStatus.COMPLETED, "new", 2, 1, Decimal("0.5"))
    assert uow.jobs.claim_chunk(job_id, 0, "third") is None  # completed is not claimable


def test_spend_adds_up_on_the_chunk(uow: Any) -> None:
    job_id = _processing(uow)
    uow.jobs.claim_chunk(job_id, 1, "w")
    uow.jobs.add_chunk_spend(job_id, 1, Decimal("0.25"))
    uow.jobs.complete_chunk(job_id, 1, "w", pages_done=2, pages_failed=0, pages_batch=0, cost_usd=Decimal("0.5"), result_key="k")
    assert uow.jobs.get_chunk(job_id, 1).cost_usd == Decimal("0.75")


def test_chunks_move_with_the_job_only_from_their_sources_and_indexes(uow: Any) -> None:
    job_id = _processing(uow)
    uow.jobs.claim_chunk(job_id, 0, "w")
    uow.jobs.complete_chunk(job_id, 0, "w", pages_done=2, pages_failed=0, pages_batch=0, cost_usd=Decimal(0), result_key="k")
    assert uow.jobs.move_chunks(job_id, st.fail(Entity.CHUNK), indexes=[1], error="page 3 broke") == 1
    assert uow.jobs.move_chunks(job_id, st.cancel(Entity.CHUNK)) == 2  # failed 1 and pending 2; completed 0 stays
    assert [(c.status, c.error) for c in uow.jobs.get_chunks(job_id)] == [
        (ChunkStatus.COMPLETED, None),
        (ChunkStatus.CANCELLED, "page 3 broke"),
        (ChunkStatus.CANCELLED, None),
    ]


# -- the unit of work over jobs -------------------------------------------------------------
def test_a_raising_block_leaves_the_job_as_it_was(uow: Any) -> None:
    job_id = _job(uow)
    with pytest.raises(RuntimeError), uow:
        uow.jobs.move_job(job_id, st.start())
        uow.jobs.move_chunks(job_id, st.cancel(Entity.CHUNK))
        raise RuntimeError("the use case failed half way")
    assert uow.jobs.get_job(job_id).status == JobStatus.PENDING
    assert {c.status for c in uow.jobs.get_chunks(job_id)} == {ChunkStatus.PENDING}
    with uow:
        uow.jobs.lock_job(job_id)
        uow.jobs.move_job(job_id, st.start())
    assert uow.jobs.get_job(job_id).status == JobStatus.PROCESSING


# -- the job's own state: typed columns, never the user's options (issue 23.3) ---------------
def test_the_users_options_never_hold_the_jobs_state(uow: Any) -> None:
    file_id = _file(uow)
    for internal in ({"_batchPrimed": True}, {"_processNow": True}, {"_batchCostUsd": "1.5"}, {"_retry": {"attempt": 1, "pages": [3]}}):
        with pytest.raises(ValueError, match="columns"):
            uow.jobs.insert_job(
                file_id=file_id, owner_id=OWNER, status=JobStatus.SPLITTING, options=internal, model_id="m", total_pages=0, pages_per_chunk=2, chunks=[]
            )
    job_id = _job(uow)
    with pytest.raises(ValueError, match="columns"):
        uow.jobs.move_job(job_id, st.start(), options={"highFidelity": True, "_pauseSettled": True})
    assert uow.jobs.get_job(job_id).status == JobStatus.PENDING


def test_process_now_and_a_page_limit_are_columns_set_at_creation_or_while_splitting(uow: Any) -> None:
    file_id = _file(uow)
    job = uow.jobs.insert_job(
        file_id=file_id,
        owner_id=OWNER,
        status=JobStatus.SPLITTING,
        options={"parser": "auto"},
        model_id="m",
        total_pages=0,
        pages_per_chunk=2,
        chunks=[],
        process_now=True,
        max_pages=40,
    )
    assert (job.process_now, job.max_pages, job.options) == (True, 40, {"parser": "auto"})
    plain = _job(uow, status=JobStatus.SPLITTING, pages=0)
    assert uow.jobs.get_job(plain).process_now is False and uow.jobs.get_job(plain).max_pages is None
    assert uow.jobs.mark_process_now(plain, only_if=JobStatus.SPLITTING).process_now is True
    queued = _job(uow)
    assert uow.jobs.mark_process_now(queued, only_if=JobStatus.SPLITTING) is None  # split already: too late
    assert uow.jobs.get_job(queued).process_now is False


def test_leaving_the_batch_lane_records_primed_answers_and_the_lanes_cost(uow: Any) -> None:
    job_id = _job(uow, status=JobStatus.WAITING_BATCH)
    job = uow.jobs.move_job(job_id, st.leave_batch_lane(), batch_primed=True, batch_cost_usd=Decimal("0.0123"))
    assert (job.status, job.batch_primed, job.batch_cost_usd, job.options) == (JobStatus.PENDING, True, Decimal("0.0123"), {"highFidelity": True})


def test_a_retrys_scope_is_on_the_job_while_it_runs(uow: Any) -> None:
    job_id = _completed(uow)
    assert uow.jobs.get_job(job_id).retry_attempt is None
    job = uow.jobs.move_job(job_id, st.retry(), retry_attempt=1, retry_pages=[3, 5])
    assert (job.status, job.retry_attempt, job.retry_pages) == (JobStatus.PENDING, 1, (3, 5))
    assert uow.jobs.get_job(job_id).retry_pages == (3, 5)
    cleared = uow.jobs.clear_retry(job_id)
    assert (cleared.retry_attempt, cleared.retry_pages) == (None, None)


def test_a_parked_job_is_due_once_its_deadline_is_within_the_margin_soonest_first(uow: Any, now: datetime) -> None:
    """The pool lets a parked job go on-demand when its deadline is less than the margin away (or past): the
    margin is added to now, so a deadline inside the margin is due and one beyond it waits."""
    margin = timedelta(hours=1)

    def parked(deadline: datetime | None, *, status: str = JobStatus.WAITING_BATCH) -> str:
        file_id = _file(uow)
        options = {"deadline": deadline.isoformat()} if deadline is not None else {}
        job = uow.jobs.insert_job(
            file_id=file_id, owner_id=OWNER, status=status, options=options, model_id="model-a", total_pages=2, pages_per_chunk=2,
            chunks=plan_chunks(2, 2),
        )  # fmt: skip
        return str(job.id)

    soon = parked(now + margin / 2)
    past = parked(now - timedelta(minutes=10))
    later = parked(now + 2 * margin)
    undated = parked(None)
    not_parked = parked(now + margin / 4, status=JobStatus.PENDING)

    due = [job_id for job_id in uow.jobs.jobs_due(margin_s=margin.total_seconds()) if job_id in {soon, past, later, undated, not_parked}]
    assert due == [past, soon]
    assert [j for j in uow.jobs.jobs_due(margin_s=3 * margin.total_seconds()) if j in {soon, past, later}] == [past, soon, later]


def test_live_jobs_are_counted_per_status_and_finished_ones_not_at_all(uow: Any) -> None:
    """The sweeper's JobsByState gauge: each live status counts its jobs; a finished job is in no count."""
    before = uow.jobs.count_live_by_status()
    _job(uow)
    _job(uow, status=JobStatus.WAITING_BATCH)
    _job(uow, status=JobStatus.WAITING_BATCH)
    _processing(uow)
    _completed(uow)
    after = uow.jobs.count_live_by_status()
    assert after.get(JobStatus.PENDING, 0) - before.get(JobStatus.PENDING, 0) == 1
    assert after.get(JobStatus.WAITING_BATCH, 0) - before.get(JobStatus.WAITING_BATCH, 0) == 2
    assert after.get(JobStatus.PROCESSING, 0) - before.get(JobStatus.PROCESSING, 0) == 1
    assert JobStatus.COMPLETED not in after and JobStatus.CANCELLED not in after
    assert all(count > 0 for count in after.values())


def test_a_deleted_file_is_stamped_once(uow: Any) -> None:
    file_id = _file(uow)
    uow.jobs.mark_file_deleted(file_id)
    deleted = uow.jobs.get_file(file_id).deleted_at
    assert deleted is not None
    uow.jobs.mark_file_deleted(file_id)
    assert uow.jobs.get_file(file_id).deleted_at == deleted
    uow.jobs.mark_file_deleted(str(uuid.uuid4()))  # no such file: nothing to do


def test_the_sweep_reads_unchanged_jobs_in_its_statuses_but_never_a_settled_pause(uow: Any) -> None:
    """The recovery sweep's candidates: a pause already settled waits for its owner, its workflow ended on purpose."""
    pending, processing, done = _job(uow), _processing(uow), _completed(uow)
    paused, settled = _processing(uow), _processing(uow)
    assert uow.jobs.move_job(paused, st.pause_budget()) is not None
    assert uow.jobs.move_job(settled, st.pause_budget(), pause_settled=True) is not None
    statuses = [JobStatus.PENDING, JobStatus.PROCESSING, JobStatus.PAUSED_BUDGET]
    swept = {job.id for job in uow.jobs.jobs_to_sweep(statuses, unchanged_for_s=0, limit=100_000)}
    assert {pending, processing, paused} <= swept
    assert not {done, settled} & swept
    assert not {pending, processing, paused} & {job.id for job in uow.jobs.jobs_to_sweep(statuses, unchanged_for_s=3600, limit=100_000)}
    assert pending not in {job.id for job in uow.jobs.jobs_to_sweep([JobStatus.PROCESSING], unchanged_for_s=0, limit=100_000)}
    assert len(uow.jobs.jobs_to_sweep(statuses, unchanged_for_s=0, limit=2)) == 2
    assert uow.jobs.jobs_to_sweep(statuses, unchanged_for_s=0, limit=0) == []
