"""The batch lane's rules, on fakes of Bedrock, S3 and Step Functions and the in-memory unit of work (no server).

Every step takes a lane (one Bedrock job); a lane carries chunks of one or more conversion jobs
(batch_members), and each job resumes once no lane carries it and the pool has nothing more for it.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from usecase_fakes import (
    MODEL,
    all_chunks,
    batch_jobs_of,
    lane_ledger,
    lane_row,
    new_job,
    parked_job,
    prepared_lane,
    store_of,
    workflows_of,
)

from batchlane.batch.abandon import abandon
from batchlane.batch.billing import settle_stopping
from batchlane.batch.callback import on_state_change
from batchlane.batch.collect import CollectNotReady, collect
from batchlane.batch.names import bedrock_job_name
from batchlane.batch.process_now import process_now
from batchlane.batch.resume import resume_job, resume_members, resume_stranded
from batchlane.batch.stop import stop_batch_job
from batchlane.batch.submit import BatchSubmitBusy, submit_batch_job
from batchlane.batch.wait import register_wait
from batchlane.domain.cost import Usage
from batchlane.domain.status import BedrockJobStatus
from batchlane.operations.cancel import cancel_job
from batchlane.ports import BatchJobRejected, BatchJobsBusy, BatchJobSpec, Services
from batchlane.rows import LaneOutcome, LedgerRow
from fakes import FakeUnitOfWork


def _answer(text: str, stop: str, tokens_in: int, tokens_out: int) -> dict:
    return {"content": [{"type": "text", "text": text}], "stop_reason": stop, "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out}}


def _output_prefix(svc: Services, lane_id: str, arn: str) -> str:
    row = lane_row(svc, lane_id)
    assert row.output_uri is not None
    return row.output_uri.removeprefix(f"s3://{svc.store.bucket}/").rstrip("/") + "/" + arn.rsplit("/", 1)[-1] + "/"


def _submitted(svc: Services, lane_id: str) -> str:
    return str(submit_batch_job(svc, lane_id)["jobArn"])


def _bedrock_answers(svc: Services, lane_id: str, arn: str, lines: list[dict[str, Any]], *, status: str = "Completed") -> None:
    """What Bedrock leaves when the job ends: the output lines (any order), and the job's terminal status."""
    store_of(svc).put_bytes(_output_prefix(svc, lane_id, arn) + "input-0.jsonl.out", "\n".join(json.dumps(x) for x in lines).encode())
    batch_jobs_of(svc).jobs[arn].status = status


def _ok(record_id: str, tokens_in: int = 10, tokens_out: int = 5) -> dict[str, Any]:
    return {"recordId": record_id, "modelOutput": _answer(f"# {record_id}", "end_turn", tokens_in, tokens_out)}


def _lane_bill(svc: Services, lane_id: str) -> LedgerRow:
    """The one ledger row of the lane (source batch, job_id NULL)."""
    [bill] = lane_ledger(svc, lane_id, source="batch")
    assert bill.job_id is None
    return bill


def _shares(svc: Services, lane_id: str) -> dict[str, LedgerRow]:
    return {str(r.job_id): r for r in lane_ledger(svc, lane_id, source="batch_share")}


def _member_states(svc: Services, lane_id: str) -> dict[tuple[str, int], str]:
    return {(m.job_id, m.chunk_index): m.state for m in svc.uow().lanes.members(lane_row(svc, lane_id).id)}


# --- submit ---------------------------------------------------------------------------------------


def test_submit_creates_one_job_named_after_the_lane_and_a_retry_adopts_it(svc: Services) -> None:
    parked = parked_job(svc)
    first = submit_batch_job(svc, parked.lane_id)
    again = submit_batch_job(svc, parked.lane_id)
    assert first["jobArn"] == again["jobArn"] and len(batch_jobs_of(svc).jobs) == 1
    spec = batch_jobs_of(svc).jobs[first["jobArn"]].spec
    assert spec.name == bedrock_job_name(parked.lane_id) and spec.model_id == MODEL and spec.timeout_hours == 24
    assert spec.input_uri == f"s3://{svc.store.bucket}/batch/{parked.lane_id}/input/"
    assert spec.tags["batchlane:laneId"] == parked.lane_id
    row = lane_row(svc, parked.lane_id)
    assert (row.state, row.bedrock_job_arn, row.job_id) == ("submitted", first["jobArn"], None)
    assert first["waitSeconds"] == svc.settings.batch_wait_seconds


def test_a_submit_whose_create_answered_lost_adopts_the_job_by_name(svc: Services) -> None:
    """A create that reached Bedrock but whose answer was lost: the next submit sends the same name and gets the same job."""
    parked = parked_job(svc)
    arn = batch_jobs_of(svc).create(_spec_named(svc, parked.lane_id))
    assert submit_batch_job(svc, parked.lane_id)["jobArn"] == arn
    assert lane_row(svc, parked.lane_id).bedrock_job_arn == arn and len(batch_jobs_of(svc).jobs) == 1


def test_a_throttled_create_is_busy_for_the_state_machine_to_retry_and_the_row_stays_preparing(svc: Services) -> None:
    parked = parked_job(svc)
    batch_jobs_of(svc).refuse_create = BatchJobsBusy("ServiceQuotaExceededException", "too many jobs")
    with pytest.raises(BatchSubmitBusy):
        submit_batch_job(svc, parked.lane_id)
    assert lane_row(svc, parked.lane_id).state == "preparing"


def test_a_validation_exception_fails_submit_and_the_lane_leaves_to_on_demand_with_no_bedrock_job(svc: Services) -> None:
    parked = parked_job(svc)
    batch_jobs_of(svc).refuse_create = BatchJobRejected("ValidationException", "the role cannot be assumed")
    with pytest.raises(BatchJobRejected):  # Submit's Catch (States.ALL) → SubmitFailed
        submit_batch_job(svc, parked.lane_id)
    left = abandon(svc, parked.lane_id, reason="submit_failed", error={"Error": "BatchJobRejected"})
    assert left == {"closed": True, "endState": "prepare_failed"}
    assert resume_members(svc, parked.lane_id) == {"resumed": 1, "members": 1}
    assert workflows_of(svc).started == [("conversion", parked.job_id)]
    job = svc.uow().jobs.get_job(parked.job_id)
    assert job is not None and job.status == "pending" and not job.batch_primed
    assert svc.uow().ledger.ledger_rows(parked.job_id) == [], "nothing ran on Bedrock: nothing billed"
    assert lane_ledger(svc, parked.lane_id) == []


def test_a_submit_that_failed_after_bedrock_created_the_job_adopts_it_and_stops_it(svc: Services) -> None:
    parked = parked_job(svc)
    arn = batch_jobs_of(svc).create(_spec_named(svc, parked.lane_id))  # created, but the answer never reached us
    batch_jobs_of(svc).jobs[arn].status = "InProgress"
    assert abandon(svc, parked.lane_id, reason="submit_failed") == {"closed": False, "stopping": True, "endState": "stopping"}
    assert batch_jobs_of(svc).stops == [arn]
    row = lane_row(svc, parked.lane_id)
    assert (row.state, row.bedrock_job_arn) == ("stopping", arn)


def test_a_lane_whose_members_all_left_while_preparing_creates_no_bedrock_job(svc: Services) -> None:
    # Issue 38.2: a Bedrock job nobody waits on bills its records for pages that convert on-demand (paid twice)
    parked = parked_job(svc)
    svc.uow().lanes.leave_lanes(parked.job_id)  # what cancel and process now do to the job's members
    answer = submit_batch_job(svc, parked.lane_id)
    assert answer["submitted"] is False and answer["jobArn"] is None
    assert batch_jobs_of(svc).jobs == {} and batch_jobs_of(svc).stops == []
    lane = lane_row(svc, parked.lane_id)
    assert (lane.state, lane.end_state, lane.reason) == ("closed", "skipped", "members_left")


def _spec_named(svc: Services, lane_id: str) -> BatchJobSpec:
    """The create an earlier submit of the lane sent (its answer lost)."""
    return BatchJobSpec(
        name=bedrock_job_name(lane_id),
        client_token=f"batchlane-{lane_id}",
        model_id=MODEL,
        role_arn="arn:aws:iam::123456789012:role/batch",
        input_uri=f"s3://{svc.store.bucket}/batch/{lane_id}/input/",
        output_uri=f"s3://{svc.store.bucket}/batch/{lane_id}/output/",
        timeout_hours=24,
        tags={},
    )


# --- stop -----------------------------------------------------------------------------------------


def test_stopping_a_job_that_already_ended_counts_as_stopped(svc: Services) -> None:
    parked = parked_job(svc)
    arn = _submitted(svc, parked.lane_id)
    batch_jobs_of(svc).jobs[arn].status = "Completed"
    assert stop_batch_job(svc, parked.lane_id, reason="overdue") is True  # Bedrock's ValidationException: nothing left to stop
    assert batch_jobs_of(svc).stops == []
    assert lane_row(svc, parked.lane_id).reason == "overdue"


# --- wait and callback ----------------------------------------------------------------------------


def test_an_event_that_arrives_before_the_token_ends_the_wait_when_the_token_is_stored(svc: Services) -> None:
    parked = parked_job(svc)
    arn = _submitted(svc, parked.lane_id)
    assert on_state_change(svc, {"batchJobArn": arn, "status": "Completed"}) == {"known": True, "status": "Completed", "woken": 0, "billedStopped": False}
    assert register_wait(svc, parked.lane_id, "token-1") == {"waiting": False, "status": "Completed"}
    assert workflows_of(svc).answered == {"token-1": {"status": "Completed"}}
    assert batch_jobs_of(svc).stops == [], "ended by the event, not by a stop"


def test_a_terminal_event_wakes_the_waiting_execution_once_and_a_late_event_changes_nothing(svc: Services) -> None:
    parked = parked_job(svc)
    arn = _submitted(svc, parked.lane_id)
    assert register_wait(svc, parked.lane_id, "token-1") == {"waiting": True, "status": None}
    assert on_state_change(svc, {"batchJobArn": arn, "status": "InProgress"})["woken"] == 0
    assert on_state_change(svc, {"batchJobArn": arn, "status": "Completed"})["woken"] == 1
    assert on_state_change(svc, {"batchJobArn": arn, "status": "Completed"})["woken"] == 0  # duplicate: the token was used
    assert on_state_change(svc, {"batchJobArn": arn, "status": "InProgress"})["status"] == "Completed"  # late: never overwrites
    assert workflows_of(svc).answered == {"token-1": {"status": "Completed"}}


def test_an_event_for_a_job_we_do_not_track_is_ignored(svc: Services) -> None:
    assert on_state_change(svc, {"batchJobArn": "arn:aws:bedrock:us-east-1:1:model-invocation-job/x", "status": "Completed"}) == {"known": False}


# --- collect --------------------------------------------------------------------------------------


def test_collect_bills_every_record_bedrock_returned_and_accepts_only_what_on_demand_would(svc: Services) -> None:
    parked = parked_job(svc, records=2)  # m0c0p1, m0c0p2, m0c1p51, m0c1p52, m0c2p101, m0c2p102
    job_id, lane_id = parked.job_id, parked.lane_id
    arn = _submitted(svc, lane_id)
    lines = [
        {"recordId": "m0c0p1", "modelOutput": _answer("# Page one", "end_turn", 1000, 200)},
        {"recordId": "m0c0p2", "modelOutput": _answer("cut off", "max_tokens", 1100, 8192)},  # rejected, still billed
        {"recordId": "m0c1p51", "error": {"errorCode": 400, "errorMessage": "bad"}},  # no output: not billed
        {"recordId": "m0c0p2", "modelOutput": _answer("dup", "end_turn", 5, 5)},  # duplicate: ignored
        {"recordId": "m7c0p1", "modelOutput": _answer("stray", "end_turn", 5, 5)},  # not ours: ignored
    ]  # the other three never came back: fallbacks
    _bedrock_answers(svc, lane_id, arn, lines, status="PartiallyCompleted")

    summary = collect(svc, lane_id)

    billed = Usage(1000 + 1100, 200 + 8192)
    cost = svc.prices.cost(MODEL, billed, batch=True)
    assert summary == {"closed": True, "won": True, "endState": "PartiallyCompleted", "accepted": 1, "fallback": 5, "costUsd": str(cost)}
    bill = _lane_bill(svc, lane_id)
    assert (bill.input_tokens, bill.output_tokens, bill.cost_usd) == (billed.input_tokens, billed.output_tokens, cost)
    [share] = svc.uow().ledger.ledger_rows(job_id)  # the job's own rows: its share of the lane, all of it (the only member)
    assert (share.source, share.backend, share.cost_usd) == ("batch_share", "batch", cost)
    assert (share.input_tokens, share.output_tokens) == (billed.input_tokens, billed.output_tokens)
    assert svc.uow().ledger.batch_cost_of_job(job_id) == cost
    results = {c: svc.store.get_json(f"batch/{job_id}/results/chunk-{c}.json")["results"] for c in (0, 1, 2)}
    assert [r["recordId"] for r in results[0]] == ["c0-p1"], "the member tag is stripped: the primed chunk looks up its own ids"
    assert results[0][0]["promptHash"] == "hash-c0-p1" and results[1] == [] and results[2] == []
    assert {(m.chunk_index, m.state, m.accepted) for m in svc.uow().lanes.members(lane_row(svc, lane_id).id)} == {
        (0, "collected", 1),
        (1, "collected", 0),
        (2, "collected", 0),
    }
    assert collect(svc, lane_id)["won"] is False, "a second collect finds the lane closed"
    assert len(svc.uow().ledger.ledger_rows(job_id)) == 1 and _lane_bill(svc, lane_id).id == bill.id, "billed once"


def test_collect_waits_while_bedrock_runs_and_stops_a_lane_nobody_waits_on_any_more(svc: Services) -> None:
    parked = parked_job(svc)
    arn = _submitted(svc, parked.lane_id)
    batch_jobs_of(svc).jobs[arn].status = "InProgress"
    with pytest.raises(CollectNotReady):
        collect(svc, parked.lane_id)
    assert batch_jobs_of(svc).stops == []
    svc.uow().lanes.leave_lanes(parked.job_id)  # its only member left (and the stop that should have followed was lost)
    with pytest.raises(CollectNotReady):
        collect(svc, parked.lane_id)
    assert batch_jobs_of(svc).stops == [arn]


def test_a_job_bedrock_no_longer_knows_is_collected_as_lost(svc: Services) -> None:
    parked = parked_job(svc)
    arn = _submitted(svc, parked.lane_id)
    del batch_jobs_of(svc).jobs[arn]
    assert collect(svc, parked.lane_id)["endState"] == BedrockJobStatus.LOST
    assert resume_members(svc, parked.lane_id)["resumed"] == 1


# --- abandon and the stopped job's bill -----------------------------------------------------------


def test_leaving_while_bedrock_runs_bills_the_stopped_job_once_from_its_manifest(svc: Services) -> None:
    parked = parked_job(svc)
    arn = _submitted(svc, parked.lane_id)
    batch_jobs_of(svc).jobs[arn].status = "InProgress"
    assert abandon(svc, parked.lane_id, reason="collect_failed") == {"closed": False, "stopping": True, "endState": "stopping"}
    assert batch_jobs_of(svc).stops == [arn] and svc.uow().ledger.ledger_rows(parked.job_id) == []
    assert set(_member_states(svc, parked.lane_id).values()) == {"left"}
    assert resume_job(svc, parked.job_id)["resumed"] is True  # on-demand now, the bill follows

    batch_jobs_of(svc).jobs[arn].status = "Stopped"
    store_of(svc).put_json(_output_prefix(svc, parked.lane_id, arn) + "manifest.json.out", {"inputTokenCount": 3000, "outputTokenCount": 900})
    row = lane_row(svc, parked.lane_id)
    assert settle_stopping(svc, row)["won"] is True
    assert settle_stopping(svc, row)["won"] is False
    bill = _lane_bill(svc, parked.lane_id)
    assert (bill.input_tokens, bill.output_tokens) == (3000, 900)
    [share] = svc.uow().ledger.ledger_rows(parked.job_id)
    assert (share.source, share.input_tokens, share.output_tokens, share.cost_usd) == ("batch_share", 3000, 900, bill.cost_usd)


# --- resume ---------------------------------------------------------------------------------------


def test_resume_primes_a_job_with_accepted_records_and_starts_its_conversion_once(svc: Services) -> None:
    parked = parked_job(svc)
    arn = _submitted(svc, parked.lane_id)
    _bedrock_answers(svc, parked.lane_id, arn, [_ok("m0c0p1")])
    cost = collect(svc, parked.lane_id)["costUsd"]

    assert resume_members(svc, parked.lane_id) == {"resumed": 1, "members": 1}
    assert resume_job(svc, parked.job_id)["resumed"] is False
    assert resume_members(svc, parked.lane_id) == {"resumed": 0, "members": 1}
    job = svc.uow().jobs.get_job(parked.job_id)
    assert job is not None and job.status == "pending" and job.batch_primed is True
    assert job.batch_cost_usd == Decimal(cost)
    assert {c.status for c in svc.uow().jobs.get_chunks(parked.job_id)} == {"pending"}
    assert workflows_of(svc).started == [("conversion", parked.job_id)]
    assert lane_row(svc, parked.lane_id).resumed_at is not None


def test_resume_waits_while_a_lane_carries_the_job(svc: Services) -> None:
    parked = parked_job(svc)
    _submitted(svc, parked.lane_id)
    assert resume_job(svc, parked.job_id) == {"resumed": False, "status": "waiting_batch", "why": "still in the pool or a lane"}
    assert resume_members(svc, parked.lane_id) == {"resumed": 0, "members": 1}
    assert workflows_of(svc).started == []


# --- the pool: lanes shared by jobs, jobs spread over lanes ---------------------------------------


def _two_jobs_in_one_lane(svc: Services, *, records: int = 1) -> tuple[str, str, str, str]:
    """Jobs a (3 chunks, tag m0) and b (1 chunk, tag m1) in one submitted lane; (a, b, lane, arn)."""
    a, b = new_job(svc), new_job(svc, pages=40, owner="owner-2")
    lane_id = prepared_lane(svc, [*all_chunks(svc, a), *all_chunks(svc, b)], records=records)
    return a, b, lane_id, _submitted(svc, lane_id)


def test_a_member_cancelled_while_its_lane_runs_leaves_it_running_for_the_other_who_resumes_primed(svc: Services) -> None:
    a, b, lane_id, arn = _two_jobs_in_one_lane(svc)
    batch_jobs_of(svc).jobs[arn].status = "InProgress"

    outcome = cancel_job(svc, a)

    assert (outcome.lane_state, outcome.batch_stop_requested) == ("submitted", False)
    assert batch_jobs_of(svc).stops == [], "b still waits on the Bedrock job"
    lane = lane_row(svc, lane_id)
    assert (lane.state, lane.reason) == ("submitted", None)
    assert {k: v for k, v in _member_states(svc, lane_id).items() if k[0] == a} == {(a, 0): "left", (a, 1): "left", (a, 2): "left"}
    assert _member_states(svc, lane_id)[(b, 0)] == "packed"
    with pytest.raises(CollectNotReady):
        collect(svc, lane_id)  # still running: collect does not stop a lane someone waits on
    assert batch_jobs_of(svc).stops == []

    _bedrock_answers(svc, lane_id, arn, [_ok("m0c0p1"), _ok("m0c1p51"), _ok("m1c0p1")])
    assert collect(svc, lane_id)["won"] is True
    assert resume_members(svc, lane_id) == {"resumed": 1, "members": 2}

    resumed = svc.uow().jobs.get_job(b)
    assert resumed is not None and resumed.status == "pending" and resumed.batch_primed is True
    assert [r["recordId"] for r in svc.store.get_json(f"batch/{b}/results/chunk-0.json")["results"]] == ["c0-p1"]
    assert svc.store.list_keys(f"batch/{a}/") == [], "the cancelled member's answers are not written for it"
    cancelled = svc.uow().jobs.get_job(a)
    assert cancelled is not None and cancelled.status == "cancelled"
    assert workflows_of(svc).started == [("conversion", b)], "a cancelled job starts nothing"
    shares = _shares(svc, lane_id)
    assert sum(s.cost_usd for s in shares.values()) == _lane_bill(svc, lane_id).cost_usd


def test_when_every_member_leaves_a_running_lane_it_is_stopped(svc: Services) -> None:
    a, b, lane_id, arn = _two_jobs_in_one_lane(svc)
    batch_jobs_of(svc).jobs[arn].status = "InProgress"

    assert cancel_job(svc, a).batch_stop_requested is False
    assert batch_jobs_of(svc).stops == []
    outcome = process_now(svc, b)

    # b is the last to wait on it: the Bedrock job is stopped, and b waits for what it processed (issue 38.2)
    assert (outcome.lane_state, outcome.action, outcome.resumed, outcome.batch_stop_requested) == ("submitted", "stopping_batch_job", False, True)
    assert batch_jobs_of(svc).stops == [arn]
    assert lane_row(svc, lane_id).reason == "process_now", "the last to leave says why the lane ended early"
    assert _member_states(svc, lane_id) == {(a, 0): "left", (a, 1): "left", (a, 2): "left", (b, 0): "packed"}
    assert workflows_of(svc).started == [] and svc.uow().jobs.get_job(b).status == "waiting_batch"


def test_collect_writes_results_per_member_job_and_shares_that_add_up_to_the_lane_row(svc: Services) -> None:
    a, b, c = new_job(svc), new_job(svc, pages=40, owner="owner-2"), new_job(svc, pages=10, owner="owner-3")
    # a sends 3 chunks x 1 record = 3, b 1 chunk x 1 = 1, c 1 x 1 = 1: the split 3:1:1 of an odd total
    lane_id = prepared_lane(svc, [*all_chunks(svc, a), *all_chunks(svc, b), *all_chunks(svc, c)])
    arn = _submitted(svc, lane_id)
    _bedrock_answers(svc, lane_id, arn, [_ok("m0c0p1", 1001, 333), _ok("m0c2p101", 999, 7), _ok("m1c0p1", 10, 10), _ok("m2c0p1", 17, 1)])

    summary = collect(svc, lane_id)

    assert (summary["accepted"], summary["fallback"]) == (4, 1)  # m0c1p51 never came back
    assert [r["recordId"] for r in svc.store.get_json(f"batch/{a}/results/chunk-0.json")["results"]] == ["c0-p1"]
    assert svc.store.get_json(f"batch/{a}/results/chunk-1.json")["results"] == []
    assert [r["recordId"] for r in svc.store.get_json(f"batch/{a}/results/chunk-2.json")["results"]] == ["c2-p101"]
    assert [r["recordId"] for r in svc.store.get_json(f"batch/{b}/results/chunk-0.json")["results"]] == ["c0-p1"]
    assert [r["recordId"] for r in svc.store.get_json(f"batch/{c}/results/chunk-0.json")["results"]] == ["c0-p1"]

    bill = _lane_bill(svc, lane_id)
    shares = _shares(svc, lane_id)
    assert set(shares) == {a, b, c}
    assert sum(s.cost_usd for s in shares.values()) == bill.cost_usd == Decimal(summary["costUsd"])
    assert sum(s.input_tokens for s in shares.values()) == bill.input_tokens == 1001 + 999 + 10 + 17
    assert sum(s.output_tokens for s in shares.values()) == bill.output_tokens == 333 + 7 + 10 + 1
    assert [shares[j].metadata["records"] for j in (a, b, c)] == [3, 1, 1], "shares follow the records each member sent"
    assert shares[a].cost_usd > shares[b].cost_usd
    for job_id in (a, b, c):
        assert svc.uow().ledger.batch_cost_of_job(job_id) == svc.uow().ledger.job_total(job_id) == shares[job_id].cost_usd
    assert resume_members(svc, lane_id) == {"resumed": 3, "members": 3}
    assert {j for kind, j in workflows_of(svc).started if kind == "conversion"} == {a, b, c}
    assert collect(svc, lane_id)["won"] is False and len(_shares(svc, lane_id)) == 3, "shares written once"


def test_a_job_spread_over_two_lanes_resumes_only_after_the_second_is_collected(svc: Services) -> None:
    job_id = new_job(svc)  # chunks 0, 1, 2
    first = prepared_lane(svc, [(job_id, 0)])
    first_arn = _submitted(svc, first)
    _bedrock_answers(svc, first, first_arn, [_ok("m0c0p1")])
    collect(svc, first)

    assert resume_members(svc, first) == {"resumed": 0, "members": 1}, "chunks 1 and 2 still wait in the pool"
    assert svc.uow().lanes.job_lane_outcome(job_id).settled is False
    second = prepared_lane(svc, [(job_id, 1), (job_id, 2)])
    second_arn = _submitted(svc, second)
    assert resume_job(svc, job_id)["why"] == "still in the pool or a lane"
    assert workflows_of(svc).started == []

    _bedrock_answers(svc, second, second_arn, [_ok("m0c2p101")])
    collect(svc, second)
    assert resume_members(svc, second) == {"resumed": 1, "members": 1}

    job = svc.uow().jobs.get_job(job_id)
    assert job is not None and job.status == "pending" and job.batch_primed is True
    both = _lane_bill(svc, first).cost_usd + _lane_bill(svc, second).cost_usd
    assert job.batch_cost_usd == both == svc.uow().ledger.batch_cost_of_job(job_id)
    assert svc.uow().lanes.job_lane_outcome(job_id) == LaneOutcome(settled=True, accepted=2, lanes=2)
    assert workflows_of(svc).started == [("conversion", job_id)]


def test_a_stranded_job_is_resumed_once_its_last_lane_has_been_closed_a_while_and_only_once(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    parked = parked_job(svc)
    arn = _submitted(svc, parked.lane_id)
    _bedrock_answers(svc, parked.lane_id, arn, [_ok("m0c0p1")])
    collect(svc, parked.lane_id)  # the lane closes; its execution never reaches Resume (lost)
    assert resume_stranded(svc, older_than_s=60) == {"resumed": []}  # closed just now: its own execution may still resume it
    fake_uow.state.clock.at += timedelta(seconds=61)
    assert resume_stranded(svc, older_than_s=60) == {"resumed": [parked.job_id]}
    assert resume_stranded(svc, older_than_s=60) == {"resumed": []}
    job = svc.uow().jobs.get_job(parked.job_id)
    assert job is not None and job.status == "pending" and job.batch_primed is True
    assert workflows_of(svc).started == [("conversion", parked.job_id)]


def test_records_a_second_batch_may_cure_form_one_retry_lane_with_their_inputs_and_no_other_record(svc: Services) -> None:
    svc = dataclasses.replace(svc, settings=svc.settings.model_copy(update={"batch_conversion_min_records": 2}))
    parked = parked_job(svc, records=2)  # m0c0p1, m0c0p2, m0c1p51, m0c1p52, m0c2p101, m0c2p102
    lane_id = parked.lane_id
    manifest_key = lane_row(svc, lane_id).manifest_key
    assert manifest_key is not None
    manifest = svc.store.get_json(manifest_key)
    shard = b"".join(
        json.dumps({"recordId": rid, "modelInput": {"page": rid}}, separators=(",", ":")).encode() + b"\n" for rid in manifest["promptHashes"]
    )  # as prepare writes them
    store_of(svc).put_bytes("batch/input/shard-0.jsonl", shard, "application/jsonl")
    svc.store.put_json(manifest_key, {**manifest, "shards": [{"key": "batch/input/shard-0.jsonl", "bytes": len(shard)}]})
    arn = _submitted(svc, lane_id)
    throttled = {"errorCode": 429, "errorMessage": "ThrottlingException"}
    lines = [_ok("m0c0p1"), _ok("m0c0p2"), {"recordId": "m0c1p51", "error": throttled}, {"recordId": "m0c2p101", "error": throttled}]
    lines.append({"recordId": "m0c1p52", "error": {"errorCode": 400, "errorMessage": "ValidationException"}})  # not curable
    _bedrock_answers(svc, lane_id, arn, lines, status="PartiallyCompleted")

    collect(svc, lane_id)

    first = lane_row(svc, lane_id)
    retry = svc.uow().lanes.get_row(str(uuid.uuid5(uuid.UUID(lane_id), "r1")))
    assert retry is not None and retry.retry_of == first.id and retry.model_id == MODEL
    assert sorted((m.job_id, m.chunk_index) for m in svc.uow().lanes.members(retry.id)) == [(parked.job_id, 1), (parked.job_id, 2)]
    assert retry.manifest_key is not None
    retry_manifest = svc.store.get_json(retry.manifest_key)
    assert retry_manifest["recordCount"] == 2 and retry_manifest["retryOf"] == lane_id
    [retry_shard] = retry_manifest["shards"]
    copied = [json.loads(line)["recordId"] for line in svc.store.iter_lines(retry_shard["key"])]
    assert copied == ["m0c1p51r1", "m0c2p101r1"]  # only the curable ones, renamed, each once
    assert retry.input_bytes == retry_shard["bytes"] > 0
    assert workflows_of(svc).started == [("batch", retry.lane_id)]  # its execution started, once
    assert collect(svc, lane_id)["won"] is False  # a second collect forms no second retry lane
