"""Lifecycle faults end to end on the offline stack (issue 10, points 7, 9, 12 and 13).

A Lambda that dies out of memory once, a Bedrock job still Stopping when the lane gives
up on it, a Bedrock job Bedrock no longer knows, a restart of the offline stack, and a
job big enough to outrun the emulator's old clock.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from batchlib import PAGES, SMALL_LANE_ENV, assert_converted_whole, batch_ledger_rows, newest_lane, run_job, submit, wait_until

from batchlane import keys
from batchlane.batch.names import bedrock_job_name
from batchlane.batch.submit import _create, output_uri_for
from batchlane.domain.cost import Usage
from batchlane.runtime import services
from batchlane_dev.local.bedrock.clock import auto_time_scale
from batchlane_dev.local.daemon import restart_notice
from batchlane_dev.local.lambda_runtime import Invocation
from batchlane_dev.local.stack import OfflineStack, StackOptions

FAST = "time_scale=36000,job_hours=0.5"
NON_BLANK = PAGES - PAGES // 15


def test_a_chunk_lambda_dying_out_of_memory_once_is_retried_and_the_job_converts_whole(stack_factory):
    # Step Functions reports an out-of-memory or timed-out Lambda as Lambda.Unknown
    # ("Handle Lambda service exceptions"); the offline Lambda runtime sends that errorType.
    stack = stack_factory(FAST, batch_lane=False)
    failures: list[int] = []
    chunk_one_runs: list[int] = []

    def out_of_memory_once(event, call_real):  # type: ignore[no-untyped-def]
        if event.get("chunkIndex") == 1:
            chunk_one_runs.append(1)
        if not failures and event.get("chunkIndex") == 1:
            failures.append(event["chunkIndex"])
            return Invocation(error_type="Lambda.Unknown", error_message="Runtime exited with error: signal: killed (out of memory)")
        return call_real(event)

    stack.registry.intercept("chunk_processor", out_of_memory_once)
    report = run_job()
    assert failures == [1], "the fault fired"
    assert len(chunk_one_runs) == 2, "chunk 1 ran again after its failure"
    assert_converted_whole(report["job_id"], PAGES)


# -- point 9: a Bedrock job still Stopping when the lane gives up on it -------------------------------


def _job_status(job_id: str) -> str:
    return services().db.one("SELECT status FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=job_id)["status"]


def _park_and_submit(stack) -> tuple[str, dict]:  # type: ignore[no-untyped-def]
    """A parked job whose Bedrock job is InProgress and has answered a few records."""
    job_id, _ = submit()
    stack.registry.invoke("batch_packer", {})
    row = wait_until(lambda: (r := newest_lane(job_id)) and r["state"] == "submitted" and r["task_tokens"] and r, what="the wait to start")
    wait_until(lambda: stack.bedrock.jobs[row["bedrock_job_arn"]].processed >= 2, what="a few records processed")
    return job_id, row


@pytest.mark.parametrize("billed_by", ["event", "sweeper"])
def test_a_lane_giving_up_while_bedrock_stops_bills_the_processed_records_once_at_the_terminal_status(stack_factory, billed_by):
    # Stopping lasts an emulated 2 h (1 s here); a record takes ~0.9 s, the job's own 24 h timeout 12 s.
    faults = "time_scale=7200,job_hours=100,stopping_s=7200" + (",drop_terminal_event=1" if billed_by == "sweeper" else "")
    stack = stack_factory(faults, extra_env=SMALL_LANE_ENV, schedules=False)
    job_id, row = _park_and_submit(stack)
    arn = row["bedrock_job_arn"]

    # What CollectFailed then Resume do (collect gave up 5 times), while Bedrock still runs the job.
    left = stack.registry.invoke("batch_abandon", {"laneId": str(row["lane_id"]), "reason": "collect_failed"}).result
    assert left == {"closed": False, "stopping": True, "endState": "stopping"}
    assert stack.bedrock.jobs[arn].status == "Stopping"
    assert batch_ledger_rows(job_id) == [], "no bill before manifest.json.out exists"
    assert stack.registry.invoke("batch_resume", {"laneId": str(row["lane_id"])}).result["resumed"] == 1  # on-demand at once

    wait_until(lambda: stack.bedrock.jobs[arn].status == "Stopped", what="Bedrock to finish stopping")
    if billed_by == "sweeper":  # the terminal event was lost
        assert stack.registry.invoke("batch_sweeper", {}).result["billedStopped"] == 1
    wait_until(lambda: newest_lane(job_id)["state"] == "closed", what="the stopped job's bill")
    wait_until(lambda: _job_status(job_id) == "completed", what="completion")

    manifest = stack.bedrock.jobs[arn].manifest()
    assert manifest["processedRecordCount"] >= 2
    processed_price = services().prices.cost(row["model_id"], Usage(manifest["inputTokenCount"], manifest["outputTokenCount"]), batch=True)
    [bill] = batch_ledger_rows(job_id)
    assert Decimal(bill["cost_usd"]) == processed_price > 0
    closed = newest_lane(job_id)
    assert (closed["end_state"], closed["reason"], closed["accepted_count"]) == ("Stopped", "collect_failed", 0)
    results = assert_converted_whole(job_id)  # total = chunks + the late batch bill
    assert all(p.served_by == "on_demand" for p in results.values() if p.status != "blank")
    assert stack.registry.invoke("batch_sweeper", {}).result["billedStopped"] == 0, "billed once"
    assert len(batch_ledger_rows(job_id)) == 1


def test_an_overdue_job_stopped_by_the_sweeper_bills_the_records_it_processed_once(stack_factory):
    stack = stack_factory("time_scale=7200,job_hours=100,stopping_s=7200", extra_env=SMALL_LANE_ENV, schedules=False)
    job_id, row = _park_and_submit(stack)
    arn = row["bedrock_job_arn"]
    services().db.run("UPDATE lanes SET deadline = now() - interval '1 second' WHERE id = :id", id=row["id"])
    assert stack.registry.invoke("batch_sweeper", {}).result["overdue"] == 1
    assert stack.bedrock.jobs[arn].status == "Stopping"
    wait_until(lambda: _job_status(job_id) == "completed", what="completion")

    manifest = stack.bedrock.jobs[arn].manifest()
    processed_price = services().prices.cost(row["model_id"], Usage(manifest["inputTokenCount"], manifest["outputTokenCount"]), batch=True)
    [bill] = batch_ledger_rows(job_id)
    assert Decimal(bill["cost_usd"]) == processed_price > 0
    closed = newest_lane(job_id)
    assert (closed["end_state"], closed["reason"]) == ("Stopped", "overdue")
    assert closed["accepted_count"] == manifest["successRecordCount"] > 0, "what it processed is used, not only paid for"
    assert_converted_whole(job_id)


def test_a_submit_that_failed_after_bedrock_created_the_job_stops_and_bills_that_job(stack_factory):
    # The submit Lambda dies right after CreateModelInvocationJob, every time: SubmitFailed.
    stack = stack_factory("time_scale=7200,job_hours=100,stopping_s=7200", extra_env=SMALL_LANE_ENV, schedules=False)
    created: list[str] = []

    def crash_after_create(event, call_real):  # type: ignore[no-untyped-def]
        svc, lane_id = services(), event["laneId"]
        if event.get("action") == "stop":
            return call_real(event)
        created.append(
            _create(
                svc,
                lane_id,
                bedrock_job_name(lane_id),
                svc.settings.batchlane_model_id,
                f"s3://{svc.store.bucket}/{keys.batch_input_prefix(lane_id)}",
                output_uri_for(svc, lane_id),
            )
        )
        return Invocation(error_type="RuntimeError", error_message="the submit Lambda died after create")

    stack.registry.intercept("batch_submit", crash_after_create)
    job_id, _ = submit()
    stack.registry.invoke("batch_packer", {})
    wait_until(lambda: _job_status(job_id) == "completed", what="completion on-demand")
    arn = created[0]
    assert len(set(created)) == 1, "one Bedrock job (same client token)"
    wait_until(lambda: newest_lane(job_id)["state"] == "closed", what="the adopted job's bill")
    row = newest_lane(job_id)
    assert (row["bedrock_job_arn"], row["reason"], row["end_state"]) == (arn, "submit_failed", "Stopped")
    assert stack.bedrock.jobs[arn].status == "Stopped", "the job we could not submit cleanly was stopped, not left running"
    assert len(batch_ledger_rows(job_id)) == 1
    assert_converted_whole(job_id)


# -- point 12: a Bedrock job that Bedrock no longer knows; a restarted offline stack -------------------


def test_a_bedrock_job_bedrock_no_longer_knows_is_lost_collected_and_resumed_not_waited_on(stack_factory):
    stack = stack_factory("time_scale=3600,job_hours=100", extra_env=SMALL_LANE_ENV, schedules=False)
    job_id, row = _park_and_submit(stack)
    stack.bedrock.control.forget(row["bedrock_job_arn"])  # GetModelInvocationJob: ResourceNotFoundException

    swept = stack.registry.invoke("batch_sweeper", {}).result
    assert (swept["lost"], swept["woken"], swept["errors"]) == (1, 1, 0)
    wait_until(lambda: _job_status(job_id) == "completed", what="completion")
    closed = newest_lane(job_id)
    assert closed["end_state"] == "Lost" and closed["bedrock_status"] == "Lost"
    assert_converted_whole(job_id)
    assert len(batch_ledger_rows(job_id)) == 1


def test_a_restarted_offline_stack_starts_from_empty_tables_and_says_so(migrated_url, tmp_path):
    options = StackOptions(workdir=tmp_path, faults="time_scale=36000", database_url=migrated_url, extra_env=SMALL_LANE_ENV, schedule_speedup=1e-6)
    with OfflineStack(options):
        job_id, _ = submit()  # parked, with its chunk PDFs in the emulated S3
        assert _job_status(job_id) == "waiting_batch"
    with OfflineStack(options) as again:
        assert again.forgotten_rows["large_conversion_jobs"] == 1 and again.forgotten_rows["chunk_jobs"] >= 1
        assert services().db.one("SELECT count(*) AS n FROM large_conversion_jobs")["n"] == 0
        notice = restart_notice({"forgottenRows": again.forgotten_rows})
        assert "starting from empty tables" in notice and "1 job(s)" in notice
        # and the restarted stack works: a new job converts whole
        report = run_job(timeout_s=120)
        assert_converted_whole(report["job_id"])


# -- point 13: one clock for the batch pace and the timeouts ------------------------------------------


@pytest.mark.parametrize("scale", ["36000", "auto"])
def test_a_job_that_outran_the_old_fixed_clock_completes_within_the_timeout_on_the_auto_clock(stack_factory, scale):
    # This "machine" spends 60 ms on each batch record: 56 records need ~3.4 s of real time, more
    # than the wait's timeout at the old fixed scale (24 h, no grace, at 36000x: 2.4 s).
    slow = "records_per_hour=100,record_cost_ms=60"
    assert NON_BLANK * 0.060 > 24 * 3600 / 36000
    stack = stack_factory(f"time_scale={scale},{slow}", extra_env={**SMALL_LANE_ENV, "BATCH_CONVERSION_GRACE_HOURS": "0"})
    report = run_job(timeout_s=240)
    results = assert_converted_whole(report["job_id"])
    row = newest_lane(report["job_id"])
    job = stack.bedrock.jobs[row["bedrock_job_arn"]]
    if scale == "36000":  # the old way: the emulator falls behind the clock our wait runs on
        assert job.behind_s > 3600 and row["reason"] == "overdue" and row["fallback_count"] > 0
        return
    assert stack.faults.time_scale == auto_time_scale(100, 60) == pytest.approx(300)
    assert job.behind_s < 600, "the emulator kept up with the one clock (sleep jitter aside)"
    assert (row["end_state"], row["accepted_count"], row["fallback_count"]) == ("Completed", NON_BLANK, 0)
    assert all(p.served_by == "batch" for p in results.values() if p.status != "blank")
    # half the batch bill against what the on-demand engine bills (5 pages and one prompt a request: domain/savings.py)
    assert 47 <= report["saving_pct"] < 50
