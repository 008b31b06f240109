"""The batch bill at its edges (batch/billing.py), on the fakes with no server: a stopped Bedrock job's bill at the batch
price and what its ledger row records, the estimate from output records that are partly unreadable or repeated, and the
members' shares when their record counts or own tokens are incomplete."""

from __future__ import annotations

import dataclasses
import json
import uuid
from decimal import Decimal

import pytest
from usecase_fakes import MODEL, batch_jobs_of, lane_ledger, lane_row, parked_job, store_of

from batchlane.batch.abandon import abandon
from batchlane.batch.billing import bill_members, output_prefix, settle_stopping
from batchlane.batch.resume import resume_job
from batchlane.batch.submit import submit_batch_job
from batchlane.domain.cost import Usage
from batchlane.ports import Services
from batchlane.rows import Lane, LedgerRow, Member
from fakes import FakeUnitOfWork
from fakes.ledger import money


def _prefix(svc: Services, lane_id: str, arn: str) -> str:
    uri = lane_row(svc, lane_id).output_uri
    assert uri is not None
    return uri.removeprefix(f"s3://{svc.store.bucket}/").rstrip("/") + "/" + arn.rsplit("/", 1)[-1] + "/"


def _answered(record_id: str, tokens_in: int, tokens_out: int) -> str:
    body = {
        "content": [{"type": "text", "text": f"# {record_id}"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
    }
    return json.dumps({"recordId": record_id, "modelOutput": body})


def _stopping_lane(svc: Services) -> tuple[str, str, str]:
    """A parked job (three chunks, one record each) whose lane was abandoned while Bedrock ran: the lane is ``stopping``,
    the job converts on demand, and Bedrock's job has just stopped. Returns (job id, lane id, ARN)."""
    parked = parked_job(svc)
    arn = str(submit_batch_job(svc, parked.lane_id)["jobArn"])
    batch_jobs_of(svc).jobs[arn].status = "InProgress"
    assert abandon(svc, parked.lane_id, reason="collect_failed")["endState"] == "stopping"
    assert resume_job(svc, parked.job_id)["resumed"] is True
    return parked.job_id, parked.lane_id, arn


def _bill(svc: Services, lane_id: str) -> LedgerRow:
    [bill] = lane_ledger(svc, lane_id, source="batch")
    return bill


# --- a stopped Bedrock job, settled at its terminal status ------------------------------------------------------------


def test_a_lane_whose_bedrock_job_is_still_stopping_reports_itself_unbilled(svc: Services) -> None:
    _, lane_id, arn = _stopping_lane(svc)
    batch_jobs_of(svc).jobs[arn].status = "Stopping"

    outcome = settle_stopping(svc, lane_row(svc, lane_id))

    assert outcome == {"closed": False, "won": False, "endState": "stopping", "accepted": 0, "fallback": 3, "costUsd": "0"}
    assert lane_ledger(svc, lane_id) == []


def test_settling_with_a_row_read_before_bedrock_stopped_records_the_terminal_status_it_finds(svc: Services) -> None:
    _, lane_id, arn = _stopping_lane(svc)
    read_while_stopping = lane_row(svc, lane_id)
    batch_jobs_of(svc).jobs[arn].status = "Stopped"

    assert settle_stopping(svc, read_while_stopping)["endState"] == "Stopped"

    row = lane_row(svc, lane_id)
    assert row.bedrock_status == "Stopped" and row.terminal_seen_at is not None


def test_a_stopped_job_is_billed_at_the_batch_price_and_its_lane_says_every_record_fell_back(svc: Services) -> None:
    _, lane_id, arn = _stopping_lane(svc)
    batch_jobs_of(svc).jobs[arn].status = "Stopped"
    store_of(svc).put_json(_prefix(svc, lane_id, arn) + "manifest.json.out", {"inputTokenCount": 3000, "outputTokenCount": 900})

    outcome = settle_stopping(svc, lane_row(svc, lane_id))

    at_batch_price = svc.prices.cost(MODEL, Usage(3000, 900), batch=True)
    assert at_batch_price < svc.prices.cost(MODEL, Usage(3000, 900), batch=False)
    assert _bill(svc, lane_id).cost_usd == at_batch_price
    assert outcome == {"closed": True, "won": True, "endState": "Stopped", "accepted": 0, "fallback": 3, "costUsd": str(at_batch_price)}
    row = lane_row(svc, lane_id)
    assert (row.accepted_count, row.fallback_count) == (0, 3)


def test_a_stopped_job_that_used_nothing_reports_a_zero_cost(svc: Services) -> None:
    _, lane_id, arn = _stopping_lane(svc)
    batch_jobs_of(svc).jobs[arn].status = "Stopped"
    store_of(svc).put_json(_prefix(svc, lane_id, arn) + "manifest.json.out", {"inputTokenCount": 0, "outputTokenCount": 0})

    outcome = settle_stopping(svc, lane_row(svc, lane_id))

    assert outcome["won"] is True and outcome["costUsd"] == "0"


def test_the_ledger_rows_of_a_stopped_job_say_which_bedrock_job_lane_and_model_they_bill(svc: Services) -> None:
    _, lane_id, arn = _stopping_lane(svc)
    batch_jobs_of(svc).jobs[arn].status = "Stopped"
    store_of(svc).put_json(_prefix(svc, lane_id, arn) + "manifest.json.out", {"inputTokenCount": 3000, "outputTokenCount": 900})

    settle_stopping(svc, lane_row(svc, lane_id))

    bill = _bill(svc, lane_id)
    assert bill.model_id == MODEL
    assert bill.metadata == {
        "batch": True,
        "batchMultiplier": 0.5,
        "jobArn": arn,
        "endState": "Stopped",
        "records": 3,
        "accepted": 0,
        "fallback": 3,
        "partial": True,
        "leftLane": "collect_failed",
        "usageSource": "manifest",
        "estimated": False,
        "laneId": lane_id,
        "members": 1,
    }
    [share] = lane_ledger(svc, lane_id, source="batch_share")
    assert share.model_id == MODEL
    assert share.metadata == {"batch": True, "share": True, "laneId": lane_id, "jobArn": arn, "records": 3}


def test_a_job_that_moved_on_from_its_lane_carries_the_late_share_in_its_batch_cost(svc: Services) -> None:
    job_id, lane_id, arn = _stopping_lane(svc)
    batch_jobs_of(svc).jobs[arn].status = "Stopped"
    store_of(svc).put_json(_prefix(svc, lane_id, arn) + "manifest.json.out", {"inputTokenCount": 3000, "outputTokenCount": 900})

    settle_stopping(svc, lane_row(svc, lane_id))

    job = svc.uow().jobs.get_job(job_id)
    assert job is not None and job.batch_cost_usd == _bill(svc, lane_id).cost_usd


# --- the estimate from the output records ----------------------------------------------------------------------------


def _stopped_without_manifest(svc: Services, files: dict[str, list[str]]) -> str:
    parked = parked_job(svc)
    arn = str(submit_batch_job(svc, parked.lane_id)["jobArn"])
    prefix = _prefix(svc, parked.lane_id, arn)
    for name, lines in files.items():
        store_of(svc).put_bytes(prefix + name, "\n".join(lines).encode())
    batch_jobs_of(svc).jobs[arn].status = "Stopped"
    assert abandon(svc, parked.lane_id, reason="collect_failed")["won"] is True
    return parked.lane_id


def test_an_estimated_bill_says_why_the_manifest_could_not_be_read(svc: Services) -> None:
    lane_id = _stopped_without_manifest(svc, {"input-0.jsonl.out": [_answered("m0c0p1", 1000, 200)]})

    assert _bill(svc, lane_id).metadata["estimateReason"] == "manifest.json.out unreadable: NotFound"


def test_an_unreadable_output_line_does_not_hide_the_answers_after_it_from_the_estimate(svc: Services) -> None:
    lane_id = _stopped_without_manifest(svc, {"input-0.jsonl.out": ["{not json", _answered("m0c0p1", 1000, 200), _answered("m0c1p51", 500, 100)]})

    bill = _bill(svc, lane_id)
    assert (bill.input_tokens, bill.output_tokens) == (1500, 300)


def test_a_record_answered_in_two_output_files_is_estimated_once(svc: Services) -> None:
    lane_id = _stopped_without_manifest(
        svc,
        {
            "input-0.jsonl.out": [_answered("m0c0p1", 1000, 200)],
            "input-1.jsonl.out": [_answered("m0c0p1", 1000, 200), _answered("m0c1p51", 500, 100)],
        },
    )

    bill = _bill(svc, lane_id)
    assert (bill.input_tokens, bill.output_tokens) == (1500, 300)


# --- where the output lives ------------------------------------------------------------------------------------------


def test_a_lanes_output_prefix_is_its_folder_and_the_bedrock_job_id_with_or_without_a_trailing_slash(svc: Services) -> None:
    parked = parked_job(svc)
    arn = str(submit_batch_job(svc, parked.lane_id)["jobArn"])
    row = lane_row(svc, parked.lane_id)
    job = arn.rsplit("/", 1)[-1]

    assert output_prefix(dataclasses.replace(row, output_uri="s3://unit-bucket/batch-out/lane-1"), "unit-bucket") == f"batch-out/lane-1/{job}/"
    assert output_prefix(dataclasses.replace(row, output_uri="s3://unit-bucket/batch-out/lane-1/"), "unit-bucket") == f"batch-out/lane-1/{job}/"


# --- the members' shares ---------------------------------------------------------------------------------------------


def _member(row: Lane, job_id: str, records: int | None, chunk: int = 0) -> Member:
    return Member(lane_row_id=row.id, job_id=job_id, chunk_index=chunk, member_tag="m0", pages=10, records=records, accepted=0, state="collected")


def _shares(uow: FakeUnitOfWork) -> dict[str, LedgerRow]:
    return {str(r.job_id): r for r in money(uow.state).ledger if r.source == "batch_share"}


@pytest.fixture
def parked_lane(svc: Services) -> Lane:
    parked = parked_job(svc)
    return lane_row(svc, parked.lane_id)


A, B, C = (str(uuid.UUID(int=n)) for n in (1, 2, 3))


def test_a_member_whose_records_were_never_counted_pays_nothing_of_a_lane_split_by_records(parked_lane: Lane, fake_uow: FakeUnitOfWork) -> None:
    members = [_member(parked_lane, A, 4), _member(parked_lane, B, None)]

    bill_members(fake_uow.ledger, parked_lane, members, usage=Usage(1000, 100), cost=Decimal("0.4"), model_id=MODEL)

    shares = _shares(fake_uow)
    assert (shares[A].cost_usd, shares[A].input_tokens, shares[A].output_tokens) == (Decimal("0.4"), 1000, 100)
    assert (shares[B].cost_usd, shares[B].input_tokens, shares[B].output_tokens) == (Decimal(0), 0, 0)


def test_token_shares_split_by_records_are_whole_tokens_that_add_up_to_the_lanes(parked_lane: Lane, fake_uow: FakeUnitOfWork) -> None:
    members = [_member(parked_lane, A, 1), _member(parked_lane, B, 1), _member(parked_lane, C, 1)]

    bill_members(fake_uow.ledger, parked_lane, members, usage=Usage(100, 50), cost=Decimal("0.01"), model_id=MODEL)

    shares = _shares(fake_uow).values()
    assert sum(s.input_tokens for s in shares) == 100 and sum(s.output_tokens for s in shares) == 50
    assert sorted(s.input_tokens for s in shares) == [33, 33, 34]
    assert sorted(s.output_tokens for s in shares) == [16, 17, 17]


def test_a_member_with_no_answered_records_pays_nothing_when_the_others_own_tokens_make_the_bill(
    svc: Services, parked_lane: Lane, fake_uow: FakeUnitOfWork
) -> None:
    members = [_member(parked_lane, A, 2), _member(parked_lane, B, 2)]
    usage = Usage(1000, 200)
    cost = svc.prices.cost(MODEL, usage, batch=True)

    bill_members(fake_uow.ledger, parked_lane, members, usage=usage, cost=cost, model_id=MODEL, usage_by_job={A: usage}, prices=svc.prices)

    shares = _shares(fake_uow)
    assert (shares[A].cost_usd, shares[A].input_tokens) == (cost, 1000)
    assert (shares[B].cost_usd, shares[B].input_tokens) == (Decimal(0), 0)


def test_own_tokens_that_do_not_add_up_to_the_lanes_usage_fall_back_to_a_split_by_records(
    svc: Services, parked_lane: Lane, fake_uow: FakeUnitOfWork
) -> None:
    members = [_member(parked_lane, A, 1), _member(parked_lane, B, 1)]
    usage = Usage(1000, 200)  # the manifest's count: more than the records carried
    cost = svc.prices.cost(MODEL, usage, batch=True)

    bill_members(fake_uow.ledger, parked_lane, members, usage=usage, cost=cost, model_id=MODEL, usage_by_job={A: Usage(900, 200)}, prices=svc.prices)

    shares = _shares(fake_uow)
    assert shares[A].input_tokens == shares[B].input_tokens == 500
    assert shares[A].cost_usd + shares[B].cost_usd == cost and abs(shares[A].cost_usd - shares[B].cost_usd) <= Decimal("0.000001")
