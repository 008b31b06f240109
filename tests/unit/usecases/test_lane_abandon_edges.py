"""Leaving a lane without results, at its edges (no server): the answer each state gives, the reason kept with the
error that caused it, and a submitted job that already ended billed at once from Bedrock's own manifest."""

from __future__ import annotations

import pytest
from usecase_fakes import MODEL, batch_jobs_of, lane_ledger, lane_row, parked_job

from batchlane.batch.abandon import abandon, adopt_created_job
from batchlane.batch.billing import output_prefix
from batchlane.batch.names import bedrock_job_name
from batchlane.batch.submit import output_uri_for, submit_batch_job
from batchlane.domain.cost import Usage
from batchlane.ports import BatchJobSpec, Services


def test_abandoning_a_lane_that_is_not_there_closes_nothing(svc: Services) -> None:
    assert abandon(svc, "00000000-0000-0000-0000-000000000000", reason="prepare_failed") == {"closed": False}


@pytest.mark.parametrize(
    ("reason", "error", "end_state", "kept"),
    [
        ("prepare_failed", {"Error": "Lambda.Timeout"}, "prepare_failed", "prepare_failed: Lambda.Timeout"),
        ("prepare_failed", None, "prepare_failed", "prepare_failed"),
        ("job_cancelled", None, "skipped", "job_cancelled"),  # the user moved the job: a skip, not a failure
        ("too_few_records", {"error": "lower-case key is not the state machine's"}, "skipped", "too_few_records"),
    ],
)
def test_a_lane_left_before_submit_keeps_why_with_the_error_that_caused_it(
    svc: Services, reason: str, error: dict[str, str] | None, end_state: str, kept: str
) -> None:
    parked = parked_job(svc)

    assert abandon(svc, parked.lane_id, reason=reason, error=error) == {"closed": True, "endState": end_state}

    row = lane_row(svc, parked.lane_id)
    assert (row.state, row.end_state, row.reason) == ("closed", end_state, kept)


def test_a_submitted_job_that_already_ended_is_billed_at_once_from_its_manifest(svc: Services) -> None:
    parked = parked_job(svc, records=2)  # 6 records
    arn = str(submit_batch_job(svc, parked.lane_id)["jobArn"])
    batch_jobs_of(svc).jobs[arn].status = "Completed"
    row = lane_row(svc, parked.lane_id)
    svc.store.put_json(output_prefix(row, svc.store.bucket) + "manifest.json.out", {"inputTokenCount": 7000, "outputTokenCount": 900})

    answer = abandon(svc, parked.lane_id, reason="collect_failed", error={"Error": "States.Timeout"})

    assert answer == {"closed": True, "won": True, "endState": "collect_failed"}
    cost = svc.prices.cost(MODEL, Usage(7000, 900), batch=True)
    [bill] = lane_ledger(svc, parked.lane_id, source="batch")
    assert (bill.input_tokens, bill.output_tokens, bill.cost_usd, bill.model_id) == (7000, 900, cost, MODEL)
    meta = bill.metadata
    assert (meta["endState"], meta["records"], meta["accepted"], meta["fallback"], meta["partial"], meta["error"]) == (
        "collect_failed",
        6,
        0,
        6,
        True,
        "States.Timeout",
    )
    closed = lane_row(svc, parked.lane_id)
    assert (closed.state, closed.end_state, closed.reason, closed.bedrock_status) == ("closed", "collect_failed", "collect_failed", "Completed")
    assert (closed.accepted_count, closed.fallback_count, closed.cost_usd) == (0, 6, cost)

    assert abandon(svc, parked.lane_id, reason="collect_failed") == {"closed": True, "won": False, "endState": "collect_failed"}
    assert len(lane_ledger(svc, parked.lane_id, source="batch")) == 1, "billed once"


def test_a_submitted_job_still_running_is_stopped_and_the_lane_waits_stopping(svc: Services) -> None:
    parked = parked_job(svc)
    arn = str(submit_batch_job(svc, parked.lane_id)["jobArn"])
    batch_jobs_of(svc).jobs[arn].status = "InProgress"

    assert abandon(svc, parked.lane_id, reason="collect_failed") == {"closed": False, "stopping": True, "endState": "stopping"}

    row = lane_row(svc, parked.lane_id)
    assert (row.state, row.reason, row.bedrock_status) == ("stopping", "collect_failed", "Stopping")
    assert batch_jobs_of(svc).stops == [arn]


def test_a_job_created_under_the_lanes_name_is_adopted_with_where_it_writes(svc: Services) -> None:
    parked = parked_job(svc)
    assert adopt_created_job(svc, parked.lane_id) is None, "no such job: nothing adopted"
    name = bedrock_job_name(parked.lane_id)
    spec = BatchJobSpec(
        name=name, client_token="t", model_id=MODEL, role_arn="arn:aws:iam::123456789012:role/batch", input_uri="s3://b/i/", output_uri="s3://b/o/",
        timeout_hours=24, tags={},
    )  # fmt: skip
    arn = batch_jobs_of(svc).create(spec)  # a create whose answer never reached the lane

    adopted = adopt_created_job(svc, parked.lane_id)

    assert adopted is not None and adopted.state == "submitted"
    assert (adopted.bedrock_job_arn, adopted.bedrock_job_name, adopted.output_uri) == (arn, name, output_uri_for(svc, parked.lane_id))
