"""The lane's small steps at their edges (no server): submit's answer and the job it creates, the wait and the event
that ends it, resume's answers, and stop: each answer the state machine reads, and each value Bedrock is sent."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from decimal import Decimal

import pytest
from usecase_fakes import all_chunks, batch_jobs_of, lane_row, new_job, parked_job, prepared_lane, workflows_of

from batchlane.batch.abandon import abandon
from batchlane.batch.callback import on_state_change
from batchlane.batch.names import client_request_token
from batchlane.batch.resume import leave_batch_lane, resume_job, resume_members, resume_stranded
from batchlane.batch.stop import lane_state, stop_abandoned_lanes, stop_batch_job
from batchlane.batch.submit import BatchSubmitBusy, submit_batch_job
from batchlane.batch.wait import register_wait
from batchlane.ports import BatchJobsBusy, Services
from fakes import FakeUnitOfWork


# -- submit --------------------------------------------------------------------------------------------
def test_the_bedrock_job_is_created_with_the_lanes_token_role_paths_and_tags(svc: Services) -> None:
    svc = dataclasses.replace(svc, settings=svc.settings.model_copy(update={"batch_conversion_s3_bucket": "lane-bucket"}))
    parked = parked_job(svc)

    answer = submit_batch_job(svc, parked.lane_id)

    assert answer == {"submitted": True, "jobArn": lane_row(svc, parked.lane_id).bedrock_job_arn, "waitSeconds": svc.settings.batch_wait_seconds}
    spec = batch_jobs_of(svc).jobs[answer["jobArn"]].spec
    assert spec.client_token == client_request_token(parked.lane_id)
    assert spec.role_arn == "arn:aws:iam::123456789012:role/batch"
    assert (spec.input_uri, spec.output_uri) == (f"s3://lane-bucket/batch/{parked.lane_id}/input/", f"s3://lane-bucket/batch/{parked.lane_id}/output/")
    assert spec.tags == {"batchlane:laneId": parked.lane_id, "batchlane:component": "batch-lane"}
    row = lane_row(svc, parked.lane_id)
    assert (row.bedrock_job_name, row.output_uri) == (spec.name, spec.output_uri)


def test_without_a_lane_bucket_the_jobs_files_go_to_the_main_bucket(svc: Services) -> None:
    svc = dataclasses.replace(svc, settings=svc.settings.model_copy(update={"batch_conversion_s3_bucket": "", "batchlane_bucket": "main-bucket"}))
    parked = parked_job(svc)
    spec = batch_jobs_of(svc).jobs[submit_batch_job(svc, parked.lane_id)["jobArn"]].spec
    assert spec.output_uri == f"s3://main-bucket/batch/{parked.lane_id}/output/"


def test_a_lane_that_is_gone_or_closed_is_not_submitted(svc: Services) -> None:
    parked = parked_job(svc)
    abandon(svc, parked.lane_id, reason="prepare_failed")
    for lane_id in (parked.lane_id, "00000000-0000-0000-0000-000000000000"):
        assert submit_batch_job(svc, lane_id) == {"submitted": False, "why": "row_closed"}
    assert batch_jobs_of(svc).jobs == {}


def test_a_busy_bedrock_is_reported_with_its_own_words(svc: Services) -> None:
    parked = parked_job(svc)
    batch_jobs_of(svc).refuse_create = BatchJobsBusy("ThrottlingException", "slow down")
    with pytest.raises(BatchSubmitBusy) as busy:
        submit_batch_job(svc, parked.lane_id)
    assert "slow down" in str(busy.value)


# -- wait and the event ----------------------------------------------------------------------------------
def test_a_wait_on_a_lane_that_is_not_there_ends_at_once_saying_so(svc: Services) -> None:
    assert register_wait(svc, "00000000-0000-0000-0000-000000000000", "token-1") == {"waiting": False}
    assert workflows_of(svc).answered == {"token-1": {"status": "NoLane"}}


def test_a_wait_on_a_lane_closed_before_any_status_ends_at_once_as_closed(svc: Services) -> None:
    parked = parked_job(svc)
    abandon(svc, parked.lane_id, reason="prepare_failed")

    assert register_wait(svc, parked.lane_id, "token-1") == {"waiting": False, "status": None}
    assert workflows_of(svc).answered == {"token-1": {"status": "Closed"}}


def test_an_event_without_a_job_or_a_status_is_ignored(svc: Services) -> None:
    parked = parked_job(svc)
    arn = str(submit_batch_job(svc, parked.lane_id)["jobArn"])
    assert on_state_change(svc, {"batchJobArn": arn}) == {"known": False}
    assert on_state_change(svc, {"status": "Completed"}) == {"known": False}
    assert lane_row(svc, parked.lane_id).bedrock_status is None


def test_the_terminal_event_of_a_stopping_lane_bills_it_once_and_wakes_every_waiting_execution(svc: Services) -> None:
    parked = parked_job(svc)
    arn = str(submit_batch_job(svc, parked.lane_id)["jobArn"])
    register_wait(svc, parked.lane_id, "token-1")
    register_wait(svc, parked.lane_id, "token-2")
    batch_jobs_of(svc).jobs[arn].status = "InProgress"
    abandon(svc, parked.lane_id, reason="overdue")
    assert lane_row(svc, parked.lane_id).state == "stopping"
    assert on_state_change(svc, {"batchJobArn": arn, "status": "InProgress"})["billedStopped"] is False

    answer = on_state_change(svc, {"batchJobArn": arn, "status": "Stopped"})

    assert answer == {"known": True, "status": "Stopped", "woken": 2, "billedStopped": True}
    assert workflows_of(svc).answered == {"token-1": {"status": "Stopped"}, "token-2": {"status": "Stopped"}}
    assert lane_row(svc, parked.lane_id).state == "closed"
    assert on_state_change(svc, {"batchJobArn": arn, "status": "Stopped"})["billedStopped"] is False


# -- resume -------------------------------------------------------------------------------------------------
def test_resume_answers_whether_it_resumed_primed_and_what_the_lanes_cost(svc: Services) -> None:
    job_id = new_job(svc)
    assert resume_job(svc, "00000000-0000-0000-0000-000000000000") == {"resumed": False, "status": None}
    prepared_lane(svc, all_chunks(svc, job_id))
    svc.uow().lanes.leave_lanes(job_id)
    svc.uow().lanes.leave_pool([job_id], reason="test")

    answer = resume_job(svc, job_id)

    assert answer == {"resumed": True, "primed": False, "batchCostUsd": "0"}
    assert resume_job(svc, job_id) == {"resumed": False, "status": "pending"}
    job = svc.uow().jobs.get_job(job_id)
    assert job is not None and job.batch_primed is False and job.batch_cost_usd == Decimal(0)


def test_resuming_the_members_of_a_lane_that_is_not_there_resumes_nobody(svc: Services) -> None:
    assert resume_members(svc, "00000000-0000-0000-0000-000000000000") == {"resumed": 0, "members": 0}


def test_leaving_the_lane_moves_only_a_parked_job_and_extends_its_hold(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = new_job(svc)
    uow = svc.uow()
    with uow:
        assert leave_batch_lane(uow, job_id, primed=True, hold_hours=5) is True
    hold = svc.uow().ledger.get_hold(job_id)
    assert hold is not None and hold.expires_at == fake_uow.state.clock.now() + timedelta(hours=5)
    job = svc.uow().jobs.get_job(job_id)
    assert job is not None and (job.status, job.batch_primed) == ("pending", True)
    assert {c.status for c in svc.uow().jobs.get_chunks(job_id)} == {"pending"}
    with uow:
        assert leave_batch_lane(uow, job_id, primed=True, hold_hours=5) is False, "not parked any more"


# -- stop ----------------------------------------------------------------------------------------------------
def test_a_lane_not_yet_submitted_has_nothing_to_stop_but_keeps_the_reason(svc: Services) -> None:
    parked = parked_job(svc)
    assert stop_batch_job(svc, parked.lane_id, reason="members_left") is False
    assert lane_row(svc, parked.lane_id).reason == "members_left"
    assert stop_batch_job(svc, "00000000-0000-0000-0000-000000000000", reason="x") is False


def test_a_job_bedrock_does_not_know_is_not_counted_stopped(svc: Services) -> None:
    parked = parked_job(svc)
    arn = str(submit_batch_job(svc, parked.lane_id)["jobArn"])
    del batch_jobs_of(svc).jobs[arn]
    assert stop_batch_job(svc, parked.lane_id, reason="overdue") is False


def test_a_jobs_lane_state_is_its_most_active_lanes(svc: Services) -> None:
    job_id = new_job(svc)
    first = prepared_lane(svc, [(job_id, 0)])
    second = prepared_lane(svc, [(job_id, 1)])
    arn = str(submit_batch_job(svc, second)["jobArn"])
    batch_jobs_of(svc).jobs[arn].status = "InProgress"
    abandon(svc, second, reason="overdue")  # stopping
    abandon(svc, first, reason="prepare_failed")  # closed
    assert lane_state([lane_row(svc, first), lane_row(svc, second)]) == "stopping"
    assert lane_state([lane_row(svc, first)]) == "closed"
    assert lane_state([]) is None


def test_stopping_abandoned_lanes_records_why(svc: Services) -> None:
    parked = parked_job(svc)
    arn = str(submit_batch_job(svc, parked.lane_id)["jobArn"])
    batch_jobs_of(svc).jobs[arn].status = "InProgress"
    svc.uow().lanes.leave_lanes(parked.job_id)

    assert stop_abandoned_lanes(svc, [lane_row(svc, parked.lane_id)], reason="cancelled") is True
    assert lane_row(svc, parked.lane_id).reason == "cancelled" and batch_jobs_of(svc).stops == [arn]


def test_a_stranded_job_waits_its_time_on_the_scaled_clock(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    svc = dataclasses.replace(svc, settings=svc.settings.model_copy(update={"batchlane_time_scale": 2.0}))
    parked = parked_job(svc)
    svc.uow().lanes.leave_lanes(parked.job_id)
    abandon(svc, parked.lane_id, reason="prepare_failed")  # its lane closed; its execution never resumed it
    fake_uow.state.clock.at += timedelta(seconds=40)

    assert resume_stranded(svc, older_than_s=60) == {"resumed": [parked.job_id]}, "60 s at twice the speed is 30 s"
