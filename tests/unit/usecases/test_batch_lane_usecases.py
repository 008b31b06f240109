"""The batch lane's rules, on fakes of Bedrock, S3 and Step Functions (real PostgreSQL)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from usecase_fakes import MODEL, FakeBatchJobs, FakeWorkflows, MemoryStore, parked_job

from batchlane.batch.abandon import abandon
from batchlane.batch.billing import settle_stopping
from batchlane.batch.callback import on_state_change
from batchlane.batch.collect import CollectNotReady, collect
from batchlane.batch.names import bedrock_job_name
from batchlane.batch.resume import resume_job
from batchlane.batch.stop import stop_batch_job
from batchlane.batch.submit import BatchSubmitBusy, submit_batch_job
from batchlane.batch.wait import register_wait
from batchlane.db import batch_rows as rows
from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.domain import status as st
from batchlane.domain.cost import Usage
from batchlane.ports import BatchJobRejected, BatchJobsBusy
from batchlane.runtime import Services


def _jobs(svc: Services) -> FakeBatchJobs:
    assert isinstance(svc.batch_jobs, FakeBatchJobs)
    return svc.batch_jobs


def _workflows(svc: Services) -> FakeWorkflows:
    assert isinstance(svc.workflows, FakeWorkflows)
    return svc.workflows


def _store(svc: Services) -> MemoryStore:
    assert isinstance(svc.store, MemoryStore)
    return svc.store


def _answer(text: str, stop: str, tokens_in: int, tokens_out: int) -> dict:
    return {"content": [{"type": "text", "text": text}], "stop_reason": stop, "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out}}


def _output_prefix(svc: Services, job_id: str, arn: str) -> str:
    row = rows.get_row(svc.db, job_id)
    assert row is not None
    return row.output_uri.removeprefix(f"s3://{svc.store.bucket}/").rstrip("/") + "/" + arn.rsplit("/", 1)[-1] + "/"


def _submitted(svc: Services, job_id: str) -> str:
    return str(submit_batch_job(svc, job_id)["jobArn"])


# --- submit ---------------------------------------------------------------------------------------


def test_submit_creates_one_job_named_after_the_conversion_job_and_a_retry_adopts_it(svc: Services) -> None:
    job_id = parked_job(svc)
    first = submit_batch_job(svc, job_id)
    again = submit_batch_job(svc, job_id)
    assert first["jobArn"] == again["jobArn"] and len(_jobs(svc).jobs) == 1
    spec = _jobs(svc).jobs[first["jobArn"]].spec
    assert spec.name == bedrock_job_name(job_id) and spec.model_id == MODEL and spec.timeout_hours == 24
    assert spec.input_uri == f"s3://{svc.store.bucket}/batch/{job_id}/input/"
    row = rows.get_row(svc.db, job_id)
    assert row is not None and (row.state, row.bedrock_job_arn) == ("submitted", first["jobArn"])
    assert first["waitSeconds"] == svc.settings.batch_wait_seconds


def test_a_throttled_create_is_busy_for_the_state_machine_to_retry_and_the_row_stays_preparing(svc: Services) -> None:
    job_id = parked_job(svc)
    _jobs(svc).refuse_create = BatchJobsBusy("ServiceQuotaExceededException", "too many jobs")
    with pytest.raises(BatchSubmitBusy):
        submit_batch_job(svc, job_id)
    row = rows.get_row(svc.db, job_id)
    assert row is not None and row.state == "preparing"


def test_a_validation_exception_fails_submit_and_the_lane_leaves_to_on_demand_with_no_bedrock_job(svc: Services) -> None:
    job_id = parked_job(svc)
    _jobs(svc).refuse_create = BatchJobRejected("ValidationException", "the role cannot be assumed")
    with pytest.raises(BatchJobRejected):  # Submit's Catch (States.ALL) → SubmitFailed
        submit_batch_job(svc, job_id)
    left = abandon(svc, job_id, reason="submit_failed", error={"Error": "BatchJobRejected"})
    assert left == {"closed": True, "endState": "prepare_failed"}
    assert resume_job(svc, job_id)["resumed"] is True
    assert _workflows(svc).started == [("conversion", job_id)]
    assert ledger.ledger_rows(svc.db, job_id) == [], "nothing ran on Bedrock: nothing billed"


def test_a_job_cancelled_while_preparing_is_stopped_as_soon_as_submit_created_it(svc: Services) -> None:
    job_id = parked_job(svc)
    rows.set_reason(svc.db, job_id, "cancelled")
    arn = _submitted(svc, job_id)
    assert _jobs(svc).stops == [arn]


# --- stop -----------------------------------------------------------------------------------------


def test_stopping_a_job_that_already_ended_counts_as_stopped(svc: Services) -> None:
    job_id = parked_job(svc)
    arn = _submitted(svc, job_id)
    _jobs(svc).jobs[arn].status = "Completed"
    assert stop_batch_job(svc, job_id, reason="overdue") is True  # Bedrock's ValidationException: nothing left to stop
    assert _jobs(svc).stops == []
    row = rows.get_row(svc.db, job_id)
    assert row is not None and row.reason == "overdue"


# --- wait and callback ----------------------------------------------------------------------------


def test_an_event_that_arrives_before_the_token_ends_the_wait_when_the_token_is_stored(svc: Services) -> None:
    job_id = parked_job(svc)
    arn = _submitted(svc, job_id)
    assert on_state_change(svc, {"batchJobArn": arn, "status": "Completed"}) == {"known": True, "status": "Completed", "woken": 0, "billedStopped": False}
    assert register_wait(svc, job_id, "token-1") == {"waiting": False, "status": "Completed"}
    assert _workflows(svc).answered == {"token-1": {"status": "Completed"}}
    assert _jobs(svc).stops == [], "ended by the event, not by a stop"


def test_a_terminal_event_wakes_the_waiting_execution_once_and_a_late_event_changes_nothing(svc: Services) -> None:
    job_id = parked_job(svc)
    arn = _submitted(svc, job_id)
    assert register_wait(svc, job_id, "token-1") == {"waiting": True, "status": None}
    assert on_state_change(svc, {"batchJobArn": arn, "status": "InProgress"})["woken"] == 0
    assert on_state_change(svc, {"batchJobArn": arn, "status": "Completed"})["woken"] == 1
    assert on_state_change(svc, {"batchJobArn": arn, "status": "Completed"})["woken"] == 0  # duplicate: the token was used
    assert on_state_change(svc, {"batchJobArn": arn, "status": "InProgress"})["status"] == "Completed"  # late: never overwrites
    assert _workflows(svc).answered == {"token-1": {"status": "Completed"}}


def test_an_event_for_a_job_we_do_not_track_is_ignored(svc: Services) -> None:
    assert on_state_change(svc, {"batchJobArn": "arn:aws:bedrock:us-east-1:1:model-invocation-job/x", "status": "Completed"}) == {"known": False}


# --- collect --------------------------------------------------------------------------------------


def test_collect_bills_every_record_bedrock_returned_and_accepts_only_what_on_demand_would(svc: Services) -> None:
    job_id = parked_job(svc, records=4)
    arn = _submitted(svc, job_id)
    lines = [
        {"recordId": "c0-p1", "modelOutput": _answer("# Page one", "end_turn", 1000, 200)},
        {"recordId": "c0-p2", "modelOutput": _answer("cut off", "max_tokens", 1100, 8192)},  # rejected, still billed
        {"recordId": "c0-p3", "error": {"errorCode": 400, "errorMessage": "bad"}},  # no output: not billed
        {"recordId": "c0-p2", "modelOutput": _answer("dup", "end_turn", 5, 5)},  # duplicate: ignored
    ]  # c0-p4 never came back: a fallback
    _store(svc).put_bytes(_output_prefix(svc, job_id, arn) + "input-0.jsonl.out", "\n".join(json.dumps(x) for x in lines).encode())
    _jobs(svc).jobs[arn].status = "PartiallyCompleted"

    summary = collect(svc, job_id)

    billed = Usage(1000 + 1100, 200 + 8192)
    assert summary == {
        "closed": True,
        "won": True,
        "endState": "PartiallyCompleted",
        "accepted": 1,
        "fallback": 3,
        "costUsd": str(svc.prices.cost(MODEL, billed, batch=True)),
    }
    [row] = ledger.ledger_rows(svc.db, job_id)
    assert (row["input_tokens"], row["output_tokens"]) == (billed.input_tokens, billed.output_tokens)
    assert Decimal(row["cost_usd"]) == svc.prices.cost(MODEL, billed, batch=True)
    results = svc.store.get_json(f"batch/{job_id}/results/chunk-0.json")["results"]
    assert [r["recordId"] for r in results] == ["c0-p1"]
    assert collect(svc, job_id)["won"] is False and len(ledger.ledger_rows(svc.db, job_id)) == 1, "billed once"


def test_collect_waits_while_bedrock_runs_and_stops_the_job_of_a_cancelled_conversion(svc: Services) -> None:
    job_id = parked_job(svc)
    arn = _submitted(svc, job_id)
    _jobs(svc).jobs[arn].status = "InProgress"
    with pytest.raises(CollectNotReady):
        collect(svc, job_id)
    assert _jobs(svc).stops == []
    job_repo.move_job(svc.db, job_id, st.cancel())
    with pytest.raises(CollectNotReady):
        collect(svc, job_id)
    assert _jobs(svc).stops == [arn]


def test_a_job_bedrock_no_longer_knows_is_collected_as_lost(svc: Services) -> None:
    job_id = parked_job(svc)
    arn = _submitted(svc, job_id)
    del _jobs(svc).jobs[arn]
    assert collect(svc, job_id)["endState"] == rows.LOST


# --- abandon and the stopped job's bill -----------------------------------------------------------


def test_leaving_while_bedrock_runs_bills_the_stopped_job_once_from_its_manifest(svc: Services) -> None:
    job_id = parked_job(svc)
    arn = _submitted(svc, job_id)
    _jobs(svc).jobs[arn].status = "InProgress"
    assert abandon(svc, job_id, reason="collect_failed") == {"closed": False, "stopping": True, "endState": "stopping"}
    assert _jobs(svc).stops == [arn] and ledger.ledger_rows(svc.db, job_id) == []
    assert resume_job(svc, job_id)["resumed"] is True  # on-demand now, the bill follows

    _jobs(svc).jobs[arn].status = "Stopped"
    _store(svc).put_json(_output_prefix(svc, job_id, arn) + "manifest.json.out", {"inputTokenCount": 3000, "outputTokenCount": 900})
    row = rows.get_row(svc.db, job_id)
    assert row is not None
    assert settle_stopping(svc, row)["won"] is True
    assert settle_stopping(svc, row)["won"] is False
    [bill] = ledger.ledger_rows(svc.db, job_id)
    assert (bill["input_tokens"], bill["output_tokens"]) == (3000, 900)


# --- resume ---------------------------------------------------------------------------------------


def test_resume_primes_a_job_with_accepted_records_and_starts_its_conversion_once(svc: Services) -> None:
    job_id = parked_job(svc)
    arn = _submitted(svc, job_id)
    _store(svc).put_bytes(
        _output_prefix(svc, job_id, arn) + "input-0.jsonl.out", json.dumps({"recordId": "c0-p1", "modelOutput": _answer("# One", "end_turn", 10, 10)}).encode()
    )
    _jobs(svc).jobs[arn].status = "Completed"
    cost = collect(svc, job_id)["costUsd"]

    assert resume_job(svc, job_id) == {"resumed": True, "primed": True, "batchCostUsd": cost}
    assert resume_job(svc, job_id)["resumed"] is False
    job = job_repo.get_job(svc.db, job_id)
    assert job is not None and job.status == "pending" and job.options["_batchPrimed"] is True
    assert {c.status for c in job_repo.get_chunks(svc.db, job_id)} == {"pending"}
    assert _workflows(svc).started == [("conversion", job_id)]


def test_resume_waits_while_the_batch_row_is_open(svc: Services) -> None:
    job_id = parked_job(svc)
    _submitted(svc, job_id)
    assert resume_job(svc, job_id) == {"resumed": False, "status": "waiting_batch", "why": "batch row still open"}
    assert _workflows(svc).started == []
