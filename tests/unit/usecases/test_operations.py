"""Cancel and process now on a job in the batch lane, on fakes of Bedrock and Step Functions and the in-memory unit
of work (no server).

A job leaving (cancel, process now) leaves every lane it rides in and the pool; a lane is stopped only
when no member waits on it any more (test_batch_lane_usecases has the shared-lane cases).
"""

from __future__ import annotations

from usecase_fakes import FakeBatchJobs, FakeWorkflows, lane_row, new_job, parked_job

from batchlane.batch.prepare import plan_prepare
from batchlane.batch.process_now import process_now
from batchlane.batch.submit import submit_batch_job
from batchlane.operations.cancel import cancel_job
from batchlane.ports import Services
from fakes import FakeUnitOfWork
from fakes.pool import lane_rows


def _stops(svc: Services) -> list[str]:
    assert isinstance(svc.batch_jobs, FakeBatchJobs)
    return svc.batch_jobs.stops


def _started(svc: Services) -> list[tuple[str, str]]:
    assert isinstance(svc.workflows, FakeWorkflows)
    return svc.workflows.started


def _member_states(svc: Services, lane_id: str) -> set[str]:
    return {m.state for m in svc.uow().lanes.members(lane_row(svc, lane_id).id)}


def _pool_left(svc: Services, job_id: str) -> tuple[bool, str | None]:
    """Whether the pool let the job go, and why (the job's pool_left_at and lane_reason, which no JobRow carries)."""
    uow = svc.uow()
    assert isinstance(uow, FakeUnitOfWork)
    pool = lane_rows(uow.state)
    return job_id in pool.pool_left_at, pool.lane_reason.get(job_id)


def test_cancel_of_a_submitted_job_stops_bedrock_releases_the_hold_and_frees_the_file(svc: Services) -> None:
    parked = parked_job(svc)
    arn = submit_batch_job(svc, parked.lane_id)["jobArn"]

    outcome = cancel_job(svc, parked.job_id)

    assert (outcome.previous_status, outcome.lane_state, outcome.batch_stop_requested, outcome.hold_released) == ("waiting_batch", "submitted", True, True)
    assert _stops(svc) == [arn], "its only member left: nobody waits on the Bedrock job"
    job = svc.uow().jobs.get_job(parked.job_id)
    assert job is not None and job.status == "cancelled"
    assert svc.uow().jobs.get_file(str(job.file_id)).status == "uploaded"
    hold = svc.uow().ledger.get_hold(parked.job_id)
    assert hold is not None and hold.outcome == "cancelled"
    assert lane_row(svc, parked.lane_id).reason == "cancelled"
    assert _member_states(svc, parked.lane_id) == {"left"}
    assert _pool_left(svc, parked.job_id) == (True, "cancelled")
    assert _started(svc) == [], "a cancelled job starts nothing"
    assert cancel_job(svc, parked.job_id).already is True


def test_cancel_while_preparing_marks_the_lane_and_stops_nothing_yet(svc: Services) -> None:
    parked = parked_job(svc)
    outcome = cancel_job(svc, parked.job_id)
    assert (outcome.lane_state, outcome.batch_stop_requested) == ("preparing", False)
    assert _stops(svc) == []
    lane = lane_row(svc, parked.lane_id)
    assert (lane.state, lane.reason) == ("preparing", "cancelled")  # submit stops the job it creates (test_batch_lane_usecases)
    assert _member_states(svc, parked.lane_id) == {"left"}


def test_cancel_of_a_job_still_in_the_pool_lets_the_pool_go_of_it(svc: Services) -> None:
    job_id = new_job(svc)
    outcome = cancel_job(svc, job_id)
    assert (outcome.lane_state, outcome.batch_stop_requested) == (None, False)
    assert _pool_left(svc, job_id) == (True, "cancelled")
    assert job_id not in {c.job_id for c in svc.uow().lanes.pool_chunks()}


def test_process_now_of_a_job_alone_in_a_running_lane_stops_bedrock_and_waits_for_what_it_processed(svc: Services) -> None:
    parked = parked_job(svc)
    arn = submit_batch_job(svc, parked.lane_id)["jobArn"]

    outcome = process_now(svc, parked.job_id)

    # Issue 38.2: Bedrock bills what it processed, so the job waits for the stop and uses those answers
    assert (outcome.lane_state, outcome.action, outcome.resumed, outcome.batch_stop_requested) == ("submitted", "stopping_batch_job", False, True)
    assert _stops(svc) == [arn]
    assert _started(svc) == [], "no on-demand conversion before the stopped job is collected"
    job = svc.uow().jobs.get_job(parked.job_id)
    assert job is not None and job.status == "waiting_batch"
    assert lane_row(svc, parked.lane_id).reason == "process_now"
    assert _member_states(svc, parked.lane_id) == {"packed"}


def test_process_now_while_preparing_leaves_the_lane_and_prepare_then_closes_it(svc: Services) -> None:
    parked = parked_job(svc)
    outcome = process_now(svc, parked.job_id)
    assert (outcome.lane_state, outcome.action, outcome.resumed, outcome.batch_stop_requested) == ("preparing", "left_batch_lane", True, False)
    assert plan_prepare(svc, parked.lane_id) == {"proceed": False, "chunks": [], "why": "members_left"}
    lane = lane_row(svc, parked.lane_id)
    assert (lane.state, lane.end_state, lane.reason) == ("closed", "skipped", "process_now")
    assert _stops(svc) == [] and _started(svc) == [("conversion", parked.job_id)]


def test_process_now_of_a_job_in_the_pool_lets_it_go_so_the_packer_never_takes_it(svc: Services) -> None:
    job_id = new_job(svc)

    outcome = process_now(svc, job_id)

    assert (outcome.lane_state, outcome.action, outcome.resumed) == (None, "left_pool", True)
    assert _pool_left(svc, job_id) == (True, "process_now")
    assert svc.uow().lanes.lanes_of_job(job_id) == [], "no lane was made for it"
    assert job_id not in {c.job_id for c in svc.uow().lanes.pool_chunks()}, "the packer reads the pool from here"
    assert _stops(svc) == [] and _started(svc) == [("conversion", job_id)]
    job = svc.uow().jobs.get_job(job_id)
    assert job is not None and job.status == "pending"
