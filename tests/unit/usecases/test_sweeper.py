"""The sweeper on fakes: a lost event strands nothing, an overdue job is stopped, an orphan is collected and resumed."""

from __future__ import annotations

import json

import pytest
from usecase_fakes import FakeBatchJobs, FakeWorkflows, MemoryStore, parked_job

from batchlane.batch.submit import submit_batch_job
from batchlane.batch.sweeper import sweep
from batchlane.batch.wait import register_wait
from batchlane.db import batch_rows as rows
from batchlane.db import jobs as job_repo
from batchlane.runtime import Services
from tests.conftest import forget_everything


@pytest.fixture(autouse=True)
def only_this_tests_rows(migrated_url: str) -> None:
    """The sweeper reads every row: start from empty tables (tests/conftest.forget_everything)."""
    forget_everything(migrated_url)


def _submitted(svc: Services) -> tuple[str, str]:
    job_id = parked_job(svc)
    return job_id, str(submit_batch_job(svc, job_id)["jobArn"])


def _bedrock(svc: Services) -> FakeBatchJobs:
    assert isinstance(svc.batch_jobs, FakeBatchJobs)
    return svc.batch_jobs


def _workflows(svc: Services) -> FakeWorkflows:
    assert isinstance(svc.workflows, FakeWorkflows)
    return svc.workflows


def test_a_lost_terminal_event_is_found_by_asking_bedrock_and_the_wait_ends(svc: Services) -> None:
    job_id, arn = _submitted(svc)
    register_wait(svc, job_id, "token-1")
    _bedrock(svc).jobs[arn].status = "Completed"  # the event never came

    assert sweep(svc)["woken"] == 1
    assert _workflows(svc).answered == {"token-1": {"status": "Completed"}}
    assert _bedrock(svc).stops == []
    row = rows.get_row(svc.db, job_id)
    assert row is not None and row.bedrock_status == "Completed"


def test_a_job_past_its_deadline_is_stopped_as_overdue(svc: Services) -> None:
    job_id, arn = _submitted(svc)
    register_wait(svc, job_id, "token-1")
    _bedrock(svc).jobs[arn].status = "InProgress"
    svc.db.run("UPDATE conversion_batch_jobs SET deadline = now() - interval '1 minute' WHERE job_id = CAST(:id AS uuid)", id=job_id)

    assert sweep(svc)["overdue"] == 1
    assert _bedrock(svc).stops == [arn]
    row = rows.get_row(svc.db, job_id)
    assert row is not None and row.reason == "overdue"
    assert _workflows(svc).answered == {}, "the stop's terminal event (or the next sweep) ends the wait"


def test_a_terminal_row_nobody_waits_on_is_collected_and_its_job_resumed(svc: Services) -> None:
    job_id, arn = _submitted(svc)
    _bedrock(svc).jobs[arn].status = "Completed"
    row = rows.record_status(svc.db, arn, "Completed")
    assert row is not None
    svc.db.run("UPDATE conversion_batch_jobs SET terminal_seen_at = now() - interval '1 hour' WHERE job_id = CAST(:id AS uuid)", id=job_id)
    prefix = row.output_uri.removeprefix(f"s3://{svc.store.bucket}/") + arn.rsplit("/", 1)[-1] + "/"
    answer = {"content": [{"type": "text", "text": "# One"}], "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 5}}
    assert isinstance(svc.store, MemoryStore)
    svc.store.put_bytes(prefix + "input.jsonl.out", json.dumps({"recordId": "c0-p1", "modelOutput": answer}).encode())

    assert sweep(svc)["orphansCollected"] == 1
    closed = rows.get_row(svc.db, job_id)
    assert closed is not None and (closed.state, closed.accepted_count) == ("closed", 1)
    job = job_repo.get_job(svc.db, job_id)
    assert job is not None and job.status == "pending" and job.options["_batchPrimed"] is True
    assert _workflows(svc).started == [("conversion", job_id)]
