"""The lane's steps where the order of things is not the happy one (no server): late and out-of-order Bedrock events,
a stop asked of a lane that is already stopping, a job leaving a lane with no cost to write, the recovery's default
age, and lanes whose member rows are gone (written before the pool, or every member's job deleted)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from decimal import Decimal

from usecase_fakes import all_chunks, batch_jobs_of, lane_row, new_job, packed_lane, parked_job, workflows_of

from batchlane.batch.abandon import abandon
from batchlane.batch.billing import settle_stopping
from batchlane.batch.callback import on_state_change
from batchlane.batch.resume import leave_batch_lane, resume_members, resume_stranded
from batchlane.batch.stop import stop_batch_job
from batchlane.batch.submit import submit_batch_job
from batchlane.batch.wait import register_wait
from batchlane.ports import Services
from fakes import FakeUnitOfWork
from fakes.pool import lane_rows


def _stopping_lane(svc: Services) -> tuple[str, str]:
    """A submitted lane with an execution waiting on it (token-1), left overdue while its Bedrock job ran: stopping."""
    parked = parked_job(svc)
    arn = str(submit_batch_job(svc, parked.lane_id)["jobArn"])
    register_wait(svc, parked.lane_id, "token-1")
    batch_jobs_of(svc).jobs[arn].status = "InProgress"
    abandon(svc, parked.lane_id, reason="overdue")
    assert lane_row(svc, parked.lane_id).state == "stopping"
    return parked.lane_id, arn


# -- the Bedrock event -----------------------------------------------------------------------------------------
def test_a_stopping_event_bills_nothing_yet_the_stopped_event_does(svc: Services) -> None:
    lane_id, arn = _stopping_lane(svc)
    batch_jobs_of(svc).jobs[arn].status = "Stopped"  # Bedrock has ended it; its Stopped event is still on the way

    early = on_state_change(svc, {"batchJobArn": arn, "status": "Stopping"})

    assert early == {"known": True, "status": "Stopping", "woken": 0, "billedStopped": False}
    assert lane_row(svc, lane_id).state == "stopping"
    assert workflows_of(svc).answered == {}, "the execution still waits"
    assert on_state_change(svc, {"batchJobArn": arn, "status": "Stopped"})["billedStopped"] is True
    assert lane_row(svc, lane_id).state == "closed"


def test_a_late_event_wakes_the_waiting_execution_with_the_status_the_lane_kept(svc: Services) -> None:
    lane_id, arn = _stopping_lane(svc)
    batch_jobs_of(svc).jobs[arn].status = "Stopped"
    assert settle_stopping(svc, lane_row(svc, lane_id))["won"] is True  # the sweeper saw it end first: billed, nobody woken
    assert workflows_of(svc).answered == {}

    answer = on_state_change(svc, {"batchJobArn": arn, "status": "Stopping"})  # the out-of-order event arrives last

    assert answer == {"known": True, "status": "Stopped", "woken": 1, "billedStopped": False}
    assert workflows_of(svc).answered == {"token-1": {"status": "Stopped"}}


# -- stop ------------------------------------------------------------------------------------------------------
def test_a_lane_already_stopping_is_not_stopped_again(svc: Services) -> None:
    lane_id, arn = _stopping_lane(svc)

    assert stop_batch_job(svc, lane_id, reason="cancelled") is False
    assert batch_jobs_of(svc).stops == [arn], "one stop request, from the overdue wait"
    assert lane_row(svc, lane_id).reason == "overdue", "the first reason stays"


def test_a_closed_lane_is_not_stopped_even_when_its_job_is_still_known_to_bedrock(svc: Services) -> None:
    lane_id, arn = _stopping_lane(svc)
    assert on_state_change(svc, {"batchJobArn": arn, "status": "Stopped"})["billedStopped"] is True
    batch_jobs_of(svc).jobs[arn].status = "InProgress"  # whatever Bedrock says now, the lane is done with it

    assert stop_batch_job(svc, lane_id, reason="cancelled") is False
    assert batch_jobs_of(svc).stops == [arn]


# -- resume ----------------------------------------------------------------------------------------------------
def test_leaving_the_lane_without_a_cost_keeps_the_jobs_batch_cost_at_zero(svc: Services) -> None:
    job_id = new_job(svc)  # process now: nothing billed to it yet
    with svc.uow() as uow:
        assert leave_batch_lane(uow, job_id, primed=False, hold_hours=1) is True

    job = svc.uow().jobs.get_job(job_id)
    assert job is not None and job.batch_cost_usd == Decimal(0), "assembly subtracts it from the on-demand price"


def test_recovery_resumes_a_job_stranded_just_over_a_minute(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    parked = parked_job(svc)
    svc.uow().lanes.leave_lanes(parked.job_id)
    abandon(svc, parked.lane_id, reason="prepare_failed")

    fake_uow.state.clock.at += timedelta(seconds=59.5)
    assert resume_stranded(svc) == {"resumed": []}, "under a minute: its own execution may still resume it"
    fake_uow.state.clock.at += timedelta(seconds=1)
    assert resume_stranded(svc) == {"resumed": [parked.job_id]}


def _without_member_rows(svc: Services, fake_uow: FakeUnitOfWork, lane_id: str, *, job_id: str | None) -> None:
    """The lane as PostgreSQL may hold it with no batch_members rows: one written before the pool (its one job in
    ``job_id``), or one whose every member's job was deleted (ON DELETE CASCADE, ``job_id`` None)."""
    rows = lane_rows(fake_uow.state)
    row = lane_row(svc, lane_id)
    rows.members = [m for m in rows.members if m.lane_row_id != row.id]
    rows.rows[row.id] = dataclasses.replace(row, job_id=job_id, state="closed")


def test_a_lane_from_before_the_pool_resumes_its_one_job(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = new_job(svc)
    lane_id = packed_lane(svc, all_chunks(svc, job_id))
    _without_member_rows(svc, fake_uow, lane_id, job_id=job_id)
    svc.uow().lanes.leave_pool([job_id], reason="old_lane")

    assert resume_members(svc, lane_id) == {"resumed": 1, "members": 1}
    job = svc.uow().jobs.get_job(job_id)
    assert job is not None and job.status == "pending"
    assert ("conversion", job_id) in workflows_of(svc).started


def test_a_lane_whose_member_jobs_were_all_deleted_resumes_nobody(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    lane_id = packed_lane(svc, all_chunks(svc, new_job(svc)))
    _without_member_rows(svc, fake_uow, lane_id, job_id=None)

    assert resume_members(svc, lane_id) == {"resumed": 0, "members": 0}
    assert workflows_of(svc).started == []
