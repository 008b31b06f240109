"""Every batch-lane path through the REAL state-machine files in the offline stack.

Each test ends with the invariants of assert_converted_whole: the job is completed, no
page is lost (every page once, in order, with its own text), the ledger has at most one
lane, chunk rows cover exactly the on-demand pages, and total = chunks + batch.
"""

from __future__ import annotations

import json
import os
import threading
import uuid

import pytest
from batchlib import PAGES, SMALL_LANE_ENV, assert_converted_whole, batch_ledger_rows, lane_row, lanes, newest_lane, run_job, submit, wait_until
from moneylib import assert_lane_bills_the_manifest

from batchlane.config import reload_settings
from batchlane.db import jobs as job_repo
from batchlane.db import lanes as rows
from batchlane.db import ledger
from batchlane.db.lanes import TERMINAL_BEDROCK_STATUSES
from batchlane.runtime import services
from batchlane_dev.local.lambda_runtime import Invocation

FAST = "time_scale=36000,job_hours=0.5"
NON_BLANK = PAGES - PAGES // 15


def served(results: dict, lane: str) -> int:
    return sum(1 for p in results.values() if p.served_by == lane)


def test_completed_job_is_served_from_batch_at_half_price(stack_factory):
    stack_factory(FAST, extra_env=SMALL_LANE_ENV)
    report = run_job()
    results = assert_converted_whole(report["job_id"])
    assert served(results, "batch") == NON_BLANK and served(results, "on_demand") == 0
    row = newest_lane(report["job_id"])
    assert (row["end_state"], row["accepted_count"], row["fallback_count"]) == ("Completed", NON_BLANK, 0)
    [ledger_row] = batch_ledger_rows(report["job_id"])
    assert ledger_row["metadata"]["batch"] is True and ledger_row["metadata"]["batchMultiplier"] == 0.5
    assert ledger_row["metadata"]["jobArn"] == row["bedrock_job_arn"]
    # half the batch bill against what the on-demand engine bills (5 pages and one prompt a request: domain/savings.py)
    assert 47 <= report["saving_pct"] < 50
    assert services().db.one("SELECT batch_primed FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=report["job_id"])["batch_primed"] is True


@pytest.mark.parametrize(
    "faults,end_state",
    [
        ("record_error_rate=0.25", "PartiallyCompleted"),
        ("job_outcome=failed", "Failed"),
        ("job_outcome=expired", "Expired"),
        ("job_outcome=stopped", "Stopped"),
    ],
)
def test_every_bedrock_end_state_converts_the_whole_job_and_bills_once(stack_factory, faults, end_state):
    stack_factory(f"{FAST},{faults}", extra_env=SMALL_LANE_ENV)
    report = run_job()
    results = assert_converted_whole(report["job_id"])
    first, *retries = lanes(report["job_id"])
    assert first["end_state"] == end_state
    assert first["fallback_count"] > 0, "some records came back unusable or not at all"
    # What came back usable from the lane (and its retry batch, when record errors formed one) is used;
    # the rest went on-demand, each page exactly once.
    assert served(results, "batch") == report["batch"]["accepted"]
    assert served(results, "on_demand") == NON_BLANK - report["batch"]["accepted"]
    assert [r["retry_of"] for r in retries] == ([first["id"]] if end_state == "PartiallyCompleted" else [])
    assert batch_ledger_rows(report["job_id"])[0]["metadata"]["endState"] == end_state
    assert_lane_bills_the_manifest(report["job_id"])


def test_lost_terminal_event_is_ended_by_the_sweeper(stack_factory):
    stack = stack_factory(f"{FAST},drop_terminal_event=1", extra_env=SMALL_LANE_ENV, schedules=False)
    job_id, _ = submit()
    stack.registry.invoke("batch_packer", {})
    wait_until(
        lambda: (r := newest_lane(job_id)) and r["bedrock_job_arn"] and stack.bedrock.jobs[r["bedrock_job_arn"]].status in TERMINAL_BEDROCK_STATUSES,
        what="Bedrock job terminal",
    )
    wait_until(lambda: newest_lane(job_id)["task_tokens"], what="the wait to register")
    assert newest_lane(job_id)["state"] == "submitted", "without the terminal event nothing ends the wait"
    assert stack.bedrock.events.dropped >= 1
    outcome = stack.registry.invoke("batch_sweeper", {})
    assert outcome.result["woken"] == 1
    wait_until(
        lambda: services().db.one("SELECT status FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=job_id)["status"] == "completed",
        what="completion",
    )
    results = assert_converted_whole(job_id)
    assert served(results, "batch") == NON_BLANK


def test_duplicate_events_are_harmless(stack_factory):
    stack = stack_factory(f"{FAST},duplicate_events=1", extra_env=SMALL_LANE_ENV)
    report = run_job()
    assert_converted_whole(report["job_id"])
    assert len(batch_ledger_rows(report["job_id"])) == 1
    assert stack.registry.calls["batch_callback"] >= 2 * 5  # every transition twice


def test_event_arriving_before_the_token_is_stored_still_ends_the_wait(stack_factory):
    # No sweeper runs (schedules off): only the token store itself can end this wait early;
    # the wait's own timeout would end it too, but with a stop and reason "overdue".
    stack = stack_factory(FAST, extra_env=SMALL_LANE_ENV, schedules=False)
    waits = []

    def late_token(event, call_real):
        # Hold the token back until the terminal event has been recorded on the row.
        wait_until(lambda: lane_row(event["laneId"])["bedrock_status"] in TERMINAL_BEDROCK_STATUSES, what="terminal event first")
        outcome = call_real(event)
        waits.append(outcome.result)
        return outcome

    stack.registry.intercept("batch_wait", late_token)
    job_id, _ = submit()
    stack.registry.invoke("batch_packer", {})
    wait_until(
        lambda: services().db.one("SELECT status FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=job_id)["status"] == "completed",
        what="completion",
    )
    results = assert_converted_whole(job_id)
    row = newest_lane(job_id)
    assert (row["end_state"], row["reason"]) == ("Completed", None), "ended by the early event, not by the overdue stop"
    assert waits == [{"waiting": False, "status": "Completed"}], "the token store saw the terminal status and ended the wait at once"
    assert stack.bedrock.stats["stop_requests"] == 0
    assert served(results, "batch") == NON_BLANK


def test_crash_after_create_adopts_the_same_bedrock_job(stack_factory):
    stack = stack_factory(FAST, extra_env=SMALL_LANE_ENV)
    crashed = threading.Event()

    def crash_after_create(event, call_real):
        outcome = call_real(event)
        if not crashed.is_set() and event.get("action", "submit") == "submit":
            crashed.set()  # the job exists in Bedrock, but our write of its ARN is lost with the Lambda
            services().db.run(
                "UPDATE lanes SET state = 'preparing', bedrock_job_arn = NULL, bedrock_job_name = NULL WHERE lane_id = CAST(:id AS uuid)",
                id=event["laneId"],
            )
            return Invocation(error_type="Sandbox.Timedout", error_message="Task timed out after 900.00 seconds")
        return outcome

    stack.registry.intercept("batch_submit", crash_after_create)
    report = run_job()
    assert crashed.is_set()
    assert_converted_whole(report["job_id"])
    assert stack.bedrock.stats["jobs_created"] == 1, "the retried submit adopted the job instead of creating another"
    assert len(batch_ledger_rows(report["job_id"])) == 1


def test_collect_failing_five_times_bills_partial_output_and_resumes_on_demand(stack_factory):
    stack = stack_factory(FAST, extra_env=SMALL_LANE_ENV)
    attempts = []

    def broken_collect(event, call_real):
        if event.get("step", "collect") == "collect":
            attempts.append(1)
            return Invocation(error_type="RuntimeError", error_message="S3 is having a bad day")
        return call_real(event)

    stack.registry.intercept("batch_collect", broken_collect)
    report = run_job()
    assert len(attempts) == 5
    results = assert_converted_whole(report["job_id"])
    assert served(results, "on_demand") == NON_BLANK and served(results, "batch") == 0
    [ledger_row] = batch_ledger_rows(report["job_id"])
    assert ledger_row["input_tokens"] > 0, "the partial bill comes from Bedrock's own manifest"
    assert newest_lane(report["job_id"])["end_state"] == "collect_failed"
    assert services().db.one("SELECT batch_primed FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=report["job_id"])["batch_primed"] is False


def test_a_pool_too_small_for_a_bedrock_job_lets_the_job_go_on_demand(stack_factory):
    stack_factory(FAST, extra_env={**SMALL_LANE_ENV, "BATCH_CONVERSION_MIN_RECORDS": "1000"})
    report = run_job()
    results = assert_converted_whole(report["job_id"])
    assert newest_lane(report["job_id"]) is None, "60 pages cannot make a Bedrock job of 1,000 records: no lane forms"
    assert report["batch"]["reason"] == "pool_too_small" and report["batch"]["bedrock_jobs"] == 0
    assert batch_ledger_rows(report["job_id"]) == []
    assert served(results, "on_demand") == NON_BLANK


def test_too_few_records_after_blank_pages_skip_the_lane(stack_factory):
    # 60 pages reach the minimum, so a lane forms; the 4 blank pages send no record, which leaves 56
    stack_factory(FAST, extra_env={**SMALL_LANE_ENV, "BATCH_CONVERSION_MIN_RECORDS": str(NON_BLANK + 1)})
    report = run_job()
    results = assert_converted_whole(report["job_id"])
    row = newest_lane(report["job_id"])
    assert (row["state"], row["end_state"], row["reason"]) == ("closed", "skipped", "too_few_records")
    assert row["bedrock_job_arn"] is None and batch_ledger_rows(report["job_id"]) == []
    assert served(results, "on_demand") == NON_BLANK


def test_malformed_and_missing_output_lines_fall_back_on_demand(stack_factory):
    stack = stack_factory(FAST, extra_env=SMALL_LANE_ENV)
    damaged = {}

    def damage_output(event, call_real):
        if not damaged and event.get("step", "collect") == "collect":
            svc = services()
            row = lane_row(event["laneId"])
            key = next(k for k in svc.store.list_keys(f"batch/{event['laneId']}/output/") if k.endswith(".jsonl.out"))
            lines = svc.store.get_bytes(key).splitlines()
            damaged["missing"] = json.loads(lines[0])["recordId"]
            damaged["malformed"] = json.loads(lines[1])["recordId"]
            kept = [lines[1][: len(lines[1]) // 2], *lines[2:], b"{not json", b""]
            svc.store.put_bytes(key, b"\n".join(kept) + b"\n")
            assert row["state"] == "submitted"
        return call_real(event)

    stack.registry.intercept("batch_collect", damage_output)
    report = run_job()
    results = assert_converted_whole(report["job_id"])
    row = newest_lane(report["job_id"])
    assert row["fallback_count"] == 2
    for record_id in (damaged["missing"], damaged["malformed"]):
        page = int(record_id.rsplit("p", 1)[1])
        assert results[page].served_by == "on_demand"
    [ledger_row] = batch_ledger_rows(report["job_id"])
    assert ledger_row["metadata"]["outcomes"]["malformed"] == 2


def test_prompt_changed_between_prepare_and_run_goes_on_demand(stack_factory):
    stack = stack_factory(FAST, extra_env=SMALL_LANE_ENV)

    def change_prompt_then_resume(event, call_real):
        os.environ["BATCHLANE_MAX_TOKENS"] = "4096"  # part of the prompt hash
        # Only the settings change: reset_services() would close the database connections the test's
        # own poll (wait_for_job, another thread) is using mid-query.
        services().settings = reload_settings()
        return call_real(event)

    stack.registry.intercept("batch_resume", change_prompt_then_resume)
    try:
        report = run_job()
    finally:
        os.environ.pop("BATCHLANE_MAX_TOKENS", None)
    results = assert_converted_whole(report["job_id"])
    assert served(results, "batch") == 0 and served(results, "on_demand") == NON_BLANK
    [ledger_row] = batch_ledger_rows(report["job_id"])
    assert ledger_row["cost_usd"] > 0, "the batch output was still paid for, once"
    chunk_rows = [r for r in ledger.PgLedger(services().db).ledger_rows(report["job_id"]) if r.source == "chunk"]
    assert sum(r.metadata["primedMismatch"] for r in chunk_rows) == NON_BLANK


def test_two_executions_racing_for_one_lane_bill_once(stack_factory):
    stack = stack_factory(FAST, extra_env=SMALL_LANE_ENV, schedules=False)
    job_id, _ = submit()
    stack.registry.invoke("batch_packer", {})
    lane_id = str(newest_lane(job_id)["lane_id"])
    sfn = stack._client("stepfunctions", stack.env["AWS_ENDPOINT_URL"])
    sfn.start_execution(stateMachineArn=stack.state_machine_arns["batch_lane"], name=f"batch-{lane_id}-twin", input=json.dumps({"laneId": lane_id}))
    wait_until(
        lambda: services().db.one("SELECT status FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=job_id)["status"] == "completed",
        timeout_s=120,
        what="completion",
    )
    executions = sfn.list_executions(stateMachineArn=stack.state_machine_arns["batch_lane"])["executions"]
    wait_until(
        lambda: all(e["status"] != "RUNNING" for e in sfn.list_executions(stateMachineArn=stack.state_machine_arns["batch_lane"])["executions"]),
        what="both executions end",
    )
    assert len([e for e in executions if lane_id in e["name"]]) == 2
    assert_converted_whole(job_id)
    assert len(batch_ledger_rows(job_id)) == 1
    assert stack.bedrock.stats["jobs_created"] == 1


def test_wait_timeout_stops_the_job_and_collects_what_exists(stack_factory):
    # Bedrock expires the job at its timeout, but the terminal event is lost and no sweeper
    # runs: only WaitForBatch's own timeout (batch timeout + grace) can end the wait.
    stack = stack_factory("time_scale=36000,job_hours=100,drop_terminal_event=1", extra_env=SMALL_LANE_ENV, schedules=False)
    stops = []

    def record_stops(event, call_real):
        stops.append(event["reason"])
        return call_real(event)

    stack.registry.intercept("batch_stop", record_stops)
    job_id, _ = submit()
    stack.registry.invoke("batch_packer", {})
    wait_until(
        lambda: services().db.one("SELECT status FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=job_id)["status"] == "completed",
        timeout_s=120,
        what="completion",
    )
    assert stops == ["overdue"]
    results = assert_converted_whole(job_id)
    row = newest_lane(job_id)
    assert row["end_state"] == "Expired" and row["reason"] == "overdue"
    assert served(results, "batch") == row["accepted_count"] > 0
    assert len(batch_ledger_rows(job_id)) == 1


def test_throttled_creates_wait_and_retry_instead_of_failing(stack_factory):
    # More throttles than the client's own retries: the state machine's BatchSubmitBusy retry takes over.
    stack = stack_factory(f"{FAST},create_throttle=8", extra_env=SMALL_LANE_ENV)
    report = run_job()
    results = assert_converted_whole(report["job_id"])
    assert stack.bedrock.stats["create_throttled"] == 8 and stack.bedrock.stats["jobs_created"] == 1
    assert served(results, "batch") == NON_BLANK


def _strand_in_preparing(stack) -> tuple[str, str]:
    """A parked job whose lane is preparing but whose execution never ran (it died): (job id, lane id)."""
    stack.registry.intercept("batch_packer", lambda event, call_real: Invocation(result={"claimed": []}))
    job_id, _ = submit()
    chunks = [(job_id, c.chunk_index, c.last_page - c.first_page + 1) for c in job_repo.PgJobs(services().db).get_chunks(job_id)]
    lane = rows.PgLanes(services().db).insert_lane(lane_id=str(uuid.uuid4()), model_id=services().settings.batchlane_model_id, deadline_hours=1, chunks=chunks)
    services().db.run("UPDATE lanes SET created_at = now() - interval '3 hours' WHERE id = :id", id=lane.id)
    return job_id, lane.lane_id


def test_a_prepare_stuck_without_a_bedrock_job_leaves_the_lane(stack_factory):
    stack = stack_factory(FAST, extra_env=SMALL_LANE_ENV, schedules=False)
    job_id, _ = _strand_in_preparing(stack)
    assert stack.registry.invoke("batch_sweeper", {}).result["abandonedStuck"] == 1
    wait_until(
        lambda: services().db.one("SELECT status FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=job_id)["status"] == "completed",
        what="completion",
    )
    results = assert_converted_whole(job_id)
    assert served(results, "on_demand") == NON_BLANK
    assert newest_lane(job_id)["end_state"] == "prepare_failed" and batch_ledger_rows(job_id) == []


def test_a_prepare_stuck_after_its_bedrock_job_was_created_adopts_it_and_bills_it(stack_factory):
    stack = stack_factory(FAST, extra_env=SMALL_LANE_ENV, schedules=False)
    job_id, lane_id = _strand_in_preparing(stack)
    # the dead execution had prepared and created the Bedrock job before it died
    from batchlane.batch.names import bedrock_job_name
    from batchlane.batch.prepare import finish_prepare, prepare_chunk
    from batchlane.batch.submit import _create, output_uri_for

    svc = services()
    for chunk in range(3):
        prepare_chunk(svc, lane_id, job_id, chunk, "m0")
    assert finish_prepare(svc, lane_id)["action"] == "submit"
    arn = _create(
        svc,
        lane_id,
        bedrock_job_name(lane_id),
        svc.settings.batchlane_model_id,
        f"s3://{svc.store.bucket}/batch/{lane_id}/input/",
        output_uri_for(svc, lane_id),
    )
    assert stack.registry.invoke("batch_sweeper", {}).result["adoptedStuck"] == 1
    assert newest_lane(job_id)["bedrock_job_arn"] == arn
    wait_until(lambda: stack.bedrock.jobs[arn].status in TERMINAL_BEDROCK_STATUSES, what="the Bedrock job to end")
    # nobody waits on it: the sweeper collects the orphan and resumes the job
    wait_until(lambda: stack.registry.invoke("batch_sweeper", {}).result["orphansCollected"] == 1, what="the orphan to be collected")
    wait_until(
        lambda: services().db.one("SELECT status FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=job_id)["status"] == "completed",
        what="completion",
    )
    results = assert_converted_whole(job_id)
    assert served(results, "batch") == NON_BLANK and len(batch_ledger_rows(job_id)) == 1


def test_failed_records_go_to_a_retry_batch_with_new_ids_and_come_back_to_their_pages(stack_factory):
    stack = stack_factory(f"{FAST},record_error_rate=0.25", extra_env=SMALL_LANE_ENV)
    report = run_job()
    results = assert_converted_whole(report["job_id"])
    first, retry = lanes(report["job_id"])
    assert retry["retry_of"] == first["id"] and first["end_state"] == "PartiallyCompleted"
    # The retry batch sent exactly the records that failed, under ids Bedrock had not seen
    failed = [r for r in _output_lines(first) if "error" in r]
    sent = list(services().store.get_json(f"batch/{retry['lane_id']}/manifest.json")["promptHashes"])
    assert sorted(sent) == sorted(f"{r['recordId']}r1" for r in failed) and len(sent) >= 10
    # and what it brought back serves those pages (the rest of its failures go on-demand)
    retried_pages = {int(r["recordId"].rsplit("p", 1)[1]) for r in failed}
    from_retry = {n for n in retried_pages if results[n].served_by == "batch"}
    assert from_retry, "the retry batch's answers are used"
    assert served(results, "batch") == report["batch"]["accepted"] == first["accepted_count"] + retry["accepted_count"]
    assert report["batch"]["bedrock_jobs"] == 2 and stack.bedrock.stats["jobs_created"] == 2
    assert_lane_bills_the_manifest(report["job_id"])  # both lanes, each billed once
    # once billed, neither lane keeps the page images it sent
    assert _input_lines(first) == [] and _input_lines(retry) == []


def test_too_few_failed_records_go_on_demand_without_a_retry_batch(stack_factory):
    stack_factory(f"{FAST},record_error_rate=0.1", extra_env=SMALL_LANE_ENV)
    report = run_job()
    results = assert_converted_whole(report["job_id"])
    [lane] = lanes(report["job_id"])
    assert 0 < lane["fallback_count"] < 10, "fewer failures than MIN_RECORDS"
    assert batch_ledger_rows(report["job_id"])[0]["metadata"]["retryBatch"] == "too_few_to_retry"
    assert served(results, "on_demand") == lane["fallback_count"]


def _output_lines(lane: dict) -> list[dict]:
    store = services().store
    keys = [k for k in store.list_keys(f"batch/{lane['lane_id']}/output/") if k.endswith(".jsonl.out")]
    return [json.loads(line) for key in keys for line in store.iter_lines(key) if line.strip()]


def _input_lines(lane: dict) -> list[dict]:
    store = services().store
    keys = [k for k in store.list_keys(f"batch/{lane['lane_id']}/input/") if k.endswith(".jsonl")]
    return [json.loads(line) for key in keys for line in store.iter_lines(key) if line.strip()]
