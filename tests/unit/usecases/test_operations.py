"""Cancel and process now on a job in the batch lane, on fakes of Bedrock and Step Functions (real PostgreSQL)."""

from __future__ import annotations

from usecase_fakes import FakeBatchJobs, FakeWorkflows, parked_job

from batchlane.batch.submit import submit_batch_job
from batchlane.db import batch_rows as rows
from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.operations.cancel import cancel_job
from batchlane.operations.process_now import process_now
from batchlane.runtime import Services


def _stops(svc: Services) -> list[str]:
    assert isinstance(svc.batch_jobs, FakeBatchJobs)
    return svc.batch_jobs.stops


def _started(svc: Services) -> list[tuple[str, str]]:
    assert isinstance(svc.workflows, FakeWorkflows)
    return svc.workflows.started


def test_cancel_of_a_submitted_job_stops_bedrock_releases_the_hold_and_frees_the_file(svc: Services) -> None:
    job_id = parked_job(svc)
    arn = submit_batch_job(svc, job_id)["jobArn"]

    outcome = cancel_job(svc, job_id)

    assert (outcome.previous_status, outcome.batch_row_state, outcome.batch_stop_requested, outcome.hold_released) == ("waiting_batch", "submitted", True, True)
    assert _stops(svc) == [arn]
    job = job_repo.get_job(svc.db, job_id)
    assert job is not None and job.status == "cancelled"
    assert job_repo.get_file(svc.db, str(job.file_id)).status == "uploaded"
    hold = ledger.get_hold(svc.db, job_id)
    assert hold is not None and hold["outcome"] == "cancelled"
    row = rows.get_row(svc.db, job_id)
    assert row is not None and row.reason == "cancelled"
    assert _started(svc) == [], "a cancelled job starts nothing"
    assert cancel_job(svc, job_id).already is True


def test_cancel_while_preparing_marks_the_row_and_stops_nothing_yet(svc: Services) -> None:
    job_id = parked_job(svc)
    outcome = cancel_job(svc, job_id)
    assert (outcome.batch_row_state, outcome.batch_stop_requested) == ("preparing", False)
    assert _stops(svc) == []
    row = rows.get_row(svc.db, job_id)
    assert row is not None and row.reason == "cancelled"  # submit stops the job it creates (test_batch_lane_usecases)


def test_process_now_of_a_submitted_job_stops_bedrock_and_starts_the_on_demand_conversion(svc: Services) -> None:
    job_id = parked_job(svc)
    arn = submit_batch_job(svc, job_id)["jobArn"]

    outcome = process_now(svc, job_id)

    assert (outcome.batch_row_state, outcome.action, outcome.resumed, outcome.batch_stop_requested) == ("submitted", "left_batch_lane", True, True)
    assert _stops(svc) == [arn]
    assert _started(svc) == [("conversion", job_id)]
    job = job_repo.get_job(svc.db, job_id)
    assert job is not None and job.status == "pending" and "_batchPrimed" not in (job.options or {})
    row = rows.get_row(svc.db, job_id)
    assert row is not None and row.reason == "process_now"


def test_process_now_before_any_batch_row_closes_a_skipped_row_so_the_lane_never_claims_it(svc: Services) -> None:
    job_id = parked_job(svc)
    svc.db.run("DELETE FROM conversion_batch_jobs WHERE job_id = CAST(:id AS uuid)", id=job_id)

    outcome = process_now(svc, job_id)

    assert (outcome.action, outcome.resumed) == ("skipped_row_inserted", True)
    row = rows.get_row(svc.db, job_id)
    assert row is not None and (row.state, row.end_state, row.reason) == ("closed", "skipped", "process_now")
    assert _stops(svc) == [] and _started(svc) == [("conversion", job_id)]
