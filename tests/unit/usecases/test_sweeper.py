"""The sweeper on fakes: a lost event strands nothing, an overdue job is stopped, an orphan is collected and resumed."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from usecase_fakes import FakeBatchJobs, MemoryStore, Parked, backdate_lane, lane_ledger, lane_row, new_job, parked_job, prepared_lane, workflows_of

from batchlane.batch.submit import submit_batch_job
from batchlane.batch.sweeper import sweep
from batchlane.batch.wait import register_wait
from batchlane.ports import Services
from fakes import FakeUnitOfWork


@pytest.fixture
def svc(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> Services:
    """A fresh fake unit of work (the sweeper reads every row: only this test's), its clock on the wall clock's time:
    the sweeper compares the rows' deadlines and first-terminal times with time.time(), as PostgreSQL's now() would be."""
    fake_uow.state.clock.at = datetime.now(UTC)
    return svc_on_fakes


def _submitted(svc: Services) -> tuple[Parked, str]:
    parked = parked_job(svc)
    return parked, str(submit_batch_job(svc, parked.lane_id)["jobArn"])


def _bedrock(svc: Services) -> FakeBatchJobs:
    assert isinstance(svc.batch_jobs, FakeBatchJobs)
    return svc.batch_jobs


def test_a_lost_terminal_event_is_found_by_asking_bedrock_and_the_wait_ends(svc: Services) -> None:
    parked, arn = _submitted(svc)
    register_wait(svc, parked.lane_id, "token-1")
    _bedrock(svc).jobs[arn].status = "Completed"  # the event never came

    assert sweep(svc)["woken"] == 1
    assert workflows_of(svc).answered == {"token-1": {"status": "Completed"}}
    assert _bedrock(svc).stops == []
    assert lane_row(svc, parked.lane_id).bedrock_status == "Completed"


def test_a_lane_past_its_deadline_is_stopped_as_overdue(svc: Services) -> None:
    parked, arn = _submitted(svc)
    register_wait(svc, parked.lane_id, "token-1")
    _bedrock(svc).jobs[arn].status = "InProgress"
    backdate_lane(svc, parked.lane_id, deadline=timedelta(minutes=1))

    assert sweep(svc)["overdue"] == 1
    assert _bedrock(svc).stops == [arn]
    assert lane_row(svc, parked.lane_id).reason == "overdue"
    assert workflows_of(svc).answered == {}, "the stop's terminal event (or the next sweep) ends the wait"


def test_a_terminal_lane_nobody_waits_on_is_collected_and_its_members_resumed(svc: Services) -> None:
    parked, arn = _submitted(svc)
    other = new_job(svc, pages=40, owner="owner-2")
    shared = prepared_lane(svc, [(other, 0)])
    _bedrock(svc).jobs[arn].status = "Completed"
    row = svc.uow().lanes.record_status(arn, "Completed")
    assert row is not None and row.output_uri is not None
    backdate_lane(svc, parked.lane_id, terminal_seen_at=timedelta(hours=1))
    prefix = row.output_uri.removeprefix(f"s3://{svc.store.bucket}/") + arn.rsplit("/", 1)[-1] + "/"
    answer = {"content": [{"type": "text", "text": "# One"}], "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 5}}
    assert isinstance(svc.store, MemoryStore)
    svc.store.put_bytes(prefix + "input.jsonl.out", json.dumps({"recordId": "m0c0p1", "modelOutput": answer}).encode())

    assert sweep(svc)["orphansCollected"] == 1
    closed = lane_row(svc, parked.lane_id)
    assert (closed.state, closed.accepted_count) == ("closed", 1)
    job = svc.uow().jobs.get_job(parked.job_id)
    assert job is not None and job.status == "pending" and job.batch_primed is True
    assert workflows_of(svc).started == [("conversion", parked.job_id)]
    assert lane_row(svc, shared).state == "preparing", "a lane still preparing (younger than the stuck limit) is left alone"


def test_a_stopping_lane_is_billed_once_its_job_has_ended(svc: Services) -> None:
    parked, arn = _submitted(svc)
    _bedrock(svc).jobs[arn].status = "InProgress"
    svc.uow().lanes.mark_stopping(parked.lane_id, reason="collect_failed")
    assert sweep(svc)["billedStopped"] == 0, "still running: no manifest.json.out to bill from"
    _bedrock(svc).jobs[arn].status = "Stopped"
    assert sweep(svc)["billedStopped"] == 1
    assert sweep(svc)["billedStopped"] == 0
    closed = lane_row(svc, parked.lane_id)
    assert (closed.state, closed.end_state) == ("closed", "Stopped")
    assert len(lane_ledger(svc, parked.lane_id, source="batch")) == 1


def test_a_prepare_stuck_for_hours_leaves_the_lane_and_its_members_go_on_demand(svc: Services) -> None:
    parked = parked_job(svc)
    backdate_lane(svc, parked.lane_id, created_at=timedelta(hours=3))

    assert sweep(svc)["abandonedStuck"] == 1

    lane = lane_row(svc, parked.lane_id)
    assert (lane.state, lane.end_state, lane.reason) == ("closed", "prepare_failed", "prepare_stuck")
    job = svc.uow().jobs.get_job(parked.job_id)
    assert job is not None and job.status == "pending"
    assert workflows_of(svc).started == [("conversion", parked.job_id)]
