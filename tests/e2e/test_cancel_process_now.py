"""Cancel and Process now through the real state machines (offline stack), including the races.

Where a test needs the workflow to stand still at one point (the batch job being
submitted, the lane about to resume, the packer not yet run), it holds that Lambda
with a gate on the offline Lambda runtime instead of relying on timing; where it needs
work in flight (a chunk converting, a Bedrock job part-way), the emulator is slowed
down and the test polls with a deadline for the state it needs before acting.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from decimal import Decimal
from typing import Any

from batchlib import BLANK_EVERY, PAGES, SMALL_LANE_ENV, assert_converted_whole, batch_ledger_rows, newest_lane, submit, wait_until
from botocore.exceptions import ClientError
from moneylib import assert_lane_bills_the_manifest, assert_ledger_equals_tokens_served, assert_total_is_the_ledger

from batchlane.aws.clients import client
from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.runtime import services
from batchlane_dev.local.jobs import submit_pdf
from batchlane_dev.local.lambda_runtime import Invocation
from batchlane_dev.local.pdfgen import make_pdf

FAST = "time_scale=36000,job_hours=0.5"
SLOW_BATCH = "time_scale=3600,job_hours=20"  # a Bedrock job takes ~20 s: long enough to act on it part-way


class Gate:
    """Hold (or skip) every call of one function until released."""

    def __init__(self, stack: Any, function: str, *, skip_with: dict[str, Any] | None = None) -> None:
        self.entered = threading.Event()
        self.released = threading.Event()
        self.calls = 0
        registry, original = stack.registry, stack.registry.invoke

        def invoke(target: str, event: Any) -> Invocation:
            if registry.logical_name(target) == function and not self.released.is_set():
                self.calls += 1
                self.entered.set()
                if skip_with is not None:
                    return Invocation(result=skip_with)
                self.released.wait(120)
            return original(target, event)

        registry.invoke = invoke

    def wait_entered(self, timeout_s: float = 60) -> None:
        assert self.entered.wait(timeout_s), "the gated function was never called"

    def release(self) -> None:
        self.released.set()


def api(stack: Any, method: str, path: str, body: Any = None, *, user: str = "tester;groups=batchlane-priority") -> tuple[int, dict[str, Any]]:
    """As ``tester``, a member of the group that may force on-demand (process-now), unless ``user`` says otherwise."""
    request = urllib.request.Request(
        stack.env["BATCHLANE_API_URL"] + path,
        data=json.dumps(body if body is not None else {}).encode() if method == "POST" else None,
        method=method,
        headers={"Authorization": f"Bearer local:{user}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def job(job_id: str) -> job_repo.JobRow:
    found = job_repo.PgJobs(services().db).get_job(job_id)
    assert found is not None
    return found


def file_of(job_id: str) -> str:
    return str(job(job_id).file_id)


def execution_status(kind: str, job_id: str) -> str | None:
    """The status of the job's execution of ``kind``; for ``batch``, of the newest lane that carried it."""
    svc = services()
    arn = {"conversion": svc.workflows.conversion_arn, "batch": svc.workflows.batch_lane_arn, "intake": svc.workflows.intake_arn}[kind] or ""
    name = job_id
    if kind == "batch":
        lane = newest_lane(job_id)
        if lane is None:
            return None
        name = str(lane["lane_id"])
    try:
        return str(client("stepfunctions").describe_execution(executionArn=f"{arn.replace(':stateMachine:', ':execution:')}:{kind}-{name}")["status"])
    except ClientError:
        return None


def bedrock_job(stack: Any, job_id: str) -> Any:
    row = newest_lane(job_id)
    return stack.bedrock.jobs.get(row["bedrock_job_arn"]) if row and row["bedrock_job_arn"] else None


def assert_all_pages_on_demand(job_id: str) -> None:
    done = job(job_id)
    assert done.status == "completed", (done.status, done.error_id, done.error_message)
    assert (done.pages_converted, done.pages_failed, done.pages_batch) == (PAGES, 0, 0)
    assert not done.batch_primed
    hold = ledger.PgLedger(services().db).get_hold(job_id)
    assert hold is not None and hold.outcome == "settled"


def assert_nothing_charged(job_id: str) -> None:
    """Cancelled: nothing more is spent, and what was spent before (issue 38.2) is its total, as the ledger and the budget count it."""
    done = job(job_id)
    assert done.status == "cancelled"
    spent = ledger.PgLedger(services().db).job_total(job_id)
    assert Decimal(done.total_cost_usd) == spent, "a cancelled job reports what it spent, as its owner's budget counts it"
    hold = ledger.PgLedger(services().db).get_hold(job_id)
    assert hold is not None and hold.outcome == "cancelled" and (hold.settled_usd or 0) == spent
    assert job_repo.PgJobs(services().db).get_file(str(done.file_id)).status == "uploaded"


# -- cancel ---------------------------------------------------------------------------------
def test_cancel_while_a_chunk_runs_stops_it_books_the_spend_and_charges_nothing(stack_factory):
    # Given an on-demand job whose chunks take seconds (one page a request, 0.3 s a request)
    stack = stack_factory(
        "time_scale=36000,converse_latency_ms=300",
        batch_lane=False,
        extra_env={"BATCHLANE_PAGES_PER_CHUNK": "20", "BATCHLANE_CHUNK_CONCURRENCY": "1", "BATCHLANE_PAGES_PER_REQUEST": "1"},
    )
    job_id, _ = submit()
    running = wait_until(
        lambda: [c for c in job_repo.PgJobs(services().db).get_chunks(job_id) if c.status == "processing" and c.pages_done >= 2],
        what="a chunk part-way through its pages",
    )
    # When the user cancels
    status, body = api(stack, "POST", f"/api/v1/files/{file_of(job_id)}/cancel")
    assert status == 200 and body["previousStatus"] == "processing", body
    # Then the workflow ends, the running chunk stopped early and never completed
    wait_until(lambda: execution_status("conversion", job_id) not in (None, "RUNNING"), what="the conversion execution to end")
    assert execution_status("conversion", job_id) == "SUCCEEDED", "a cancel is not a failed execution (no alarm)"
    chunks = {c.chunk_index: c for c in job_repo.PgJobs(services().db).get_chunks(job_id)}
    stopped = chunks[running[0].chunk_index]
    assert stopped.status == "cancelled"
    assert stopped.pages_done < 20, "the chunk went on converting after the cancel"
    assert all(c.status in ("cancelled", "completed") for c in chunks.values())
    # its partial spend is on the ledger, and is what the cancelled job cost
    chunk_rows = [r for r in ledger.PgLedger(services().db).ledger_rows(job_id) if r.source == "chunk" and r.chunk_index == stopped.chunk_index]
    assert chunk_rows and sum(r.cost_usd for r in chunk_rows) > 0
    assert Decimal(stopped.cost_usd) == sum(r.cost_usd for r in chunk_rows)
    assert_ledger_equals_tokens_served(stack, [job_id])  # every call Bedrock answered is booked, exactly
    assert_nothing_charged(job_id)


def _act_while_the_batch_job_runs(stack_factory: Any, action: str) -> tuple[Any, str]:
    """A parked job whose Bedrock job is part-way; ``action`` called on it must ask for the stop."""
    stack = stack_factory(SLOW_BATCH, extra_env=SMALL_LANE_ENV, schedules=False)
    job_id, _ = submit()
    wait_until(lambda: (b := bedrock_job(stack, job_id)) is not None and b.processed >= 3, what="the Bedrock job part-way")
    status, body = api(stack, "POST", f"/api/v1/files/{file_of(job_id)}/{action}")
    assert status == 200 and body["laneState"] == "submitted" and body["batchStopRequested"] is True, body
    return stack, job_id


def test_cancel_while_the_batch_job_runs_stops_it_bills_its_output_once_and_charges_nothing(stack_factory):
    stack, job_id = _act_while_the_batch_job_runs(stack_factory, "cancel")
    row = wait_until(lambda: (r := newest_lane(job_id))["state"] == "closed" and r, what="the stopped batch job to be collected")
    assert row["end_state"] == "Stopped" and row["reason"] == "cancelled"
    billed = batch_ledger_rows(job_id)
    assert len(billed) == 1 and Decimal(billed[0]["cost_usd"]) > 0, "the paid partial output is billed, once"
    assert_lane_bills_the_manifest(job_id)  # exactly what the stopped job's manifest.json.out counts
    wait_until(lambda: execution_status("batch", job_id) not in (None, "RUNNING"), what="the batch-lane execution to end")
    assert_nothing_charged(job_id)
    assert_ledger_equals_tokens_served(stack, [job_id])
    assert execution_status("conversion", job_id) is None, "a cancelled job is never converted"
    # cancelled is terminal everywhere: the packer, the sweeper and the recovery leave it alone
    for function in ("batch_packer", "batch_sweeper", "recovery"):
        assert not stack.registry.invoke(function, {}).failed
    assert job(job_id).status == "cancelled" and len(batch_ledger_rows(job_id)) == 1
    assert execution_status("conversion", job_id) is None


def test_a_job_cancelled_before_the_packer_ran_is_never_claimed(stack_factory):
    stack = stack_factory(FAST, extra_env=SMALL_LANE_ENV, schedules=False)
    gate = Gate(stack, "batch_packer", skip_with={"claimed": []})
    job_id, _ = submit()
    gate.wait_entered()
    assert job(job_id).status == "waiting_batch" and newest_lane(job_id) is None
    assert api(stack, "POST", f"/api/v1/files/{file_of(job_id)}/cancel")[0] == 200
    gate.release()
    for function in ("batch_packer", "batch_sweeper", "recovery"):
        outcome = stack.registry.invoke(function, {})
        assert not outcome.failed, outcome
    assert job_id not in stack.registry.invoke("batch_packer", {}).result["claimed"]
    assert newest_lane(job_id) is None and execution_status("batch", job_id) is None and execution_status("conversion", job_id) is None
    assert_nothing_charged(job_id)


def test_cancel_while_preparing_leaves_the_lane_without_a_bedrock_job(stack_factory):
    stack = stack_factory(FAST, extra_env=SMALL_LANE_ENV, schedules=False)
    gate = Gate(stack, "batch_prepare")
    job_id, _ = submit()
    gate.wait_entered()
    assert newest_lane(job_id)["state"] == "preparing"
    status, body = api(stack, "POST", f"/api/v1/files/{file_of(job_id)}/cancel")
    assert status == 200 and body["laneState"] == "preparing"
    gate.release()
    row = wait_until(lambda: (r := newest_lane(job_id))["state"] == "closed" and r, what="the row to close")
    assert row["bedrock_job_arn"] is None and row["reason"] == "cancelled"
    assert batch_ledger_rows(job_id) == [] and not stack.bedrock.jobs
    assert_nothing_charged(job_id)


# -- process now ------------------------------------------------------------------------------
def test_process_now_before_the_packer_converts_on_demand_and_the_packer_never_takes_it(stack_factory):
    stack = stack_factory(FAST, extra_env=SMALL_LANE_ENV, schedules=False)
    gate = Gate(stack, "batch_packer", skip_with={"claimed": []})
    job_id, _ = submit()
    gate.wait_entered()
    status, body = api(stack, "POST", f"/api/v1/files/{file_of(job_id)}/process-now")
    assert status == 200 and body["action"] == "left_pool", body
    gate.release()
    assert job_id not in stack.registry.invoke("batch_packer", {}).result["claimed"]
    wait_until(lambda: job(job_id).status in ("completed", "failed"), what="the on-demand conversion")
    assert_all_pages_on_demand(job_id)
    assert newest_lane(job_id) is None, "no lane ever carried it"
    assert services().db.one("SELECT lane_reason FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=job_id)["lane_reason"] == "process_now"
    status, view = api(stack, "GET", f"/api/v1/files/{file_of(job_id)}/conversion")
    assert status == 200 and view["batch"]["reason"] == "process_now", view
    assert execution_status("batch", job_id) is None and not stack.bedrock.jobs
    assert_total_is_the_ledger(job_id)
    assert_ledger_equals_tokens_served(stack, [job_id])


def test_process_now_while_preparing_creates_no_bedrock_job_and_converts_on_demand(stack_factory):
    stack = stack_factory(FAST, extra_env=SMALL_LANE_ENV, schedules=False)
    gate = Gate(stack, "batch_submit")
    job_id, _ = submit()
    gate.wait_entered()  # prepared, about to create the Bedrock job
    assert newest_lane(job_id)["state"] == "preparing"
    status, body = api(stack, "POST", f"/api/v1/files/{file_of(job_id)}/process-now")
    assert status == 200 and body["laneState"] == "preparing" and body["resumed"] is True, body
    gate.release()
    wait_until(lambda: job(job_id).status in ("completed", "failed"), what="the on-demand conversion")
    row = wait_until(lambda: (r := newest_lane(job_id))["state"] == "closed" and r, what="the lane to close")
    assert_all_pages_on_demand(job_id)
    # Issue 38.2: nobody waits on the lane any more, so Submit creates no Bedrock job: no record is billed
    # for a page that converts on-demand (before, it created the job and stopped it: those pages paid twice)
    assert (row["end_state"], row["reason"], row["bedrock_job_arn"]) == ("skipped", "process_now", None)
    assert not stack.bedrock.jobs and batch_ledger_rows(job_id) == []
    wait_until(lambda: execution_status("batch", job_id) == "SUCCEEDED", what="the batch lane to end")
    assert job(job_id).status == "completed"
    assert_total_is_the_ledger(job_id)
    assert_ledger_equals_tokens_served(stack, [job_id])


def test_process_now_while_the_batch_job_runs_stops_it_and_uses_what_it_processed(stack_factory):
    stack, job_id = _act_while_the_batch_job_runs(stack_factory, "process-now")
    # Issue 38.2: the job waits for the stop; the records Bedrock processed (billed either way) are used
    wait_until(lambda: job(job_id).status in ("completed", "failed"), timeout_s=180, what="the stop, the collect, then the rest on-demand")
    row = newest_lane(job_id)
    assert row["state"] == "closed" and row["end_state"] == "Stopped" and row["reason"] == "process_now"
    bedrock = stack.bedrock.jobs[row["bedrock_job_arn"]]
    assert bedrock.status == "Stopped" and 0 < bedrock.processed < row["record_count"], "stopped part-way"
    results = assert_converted_whole(job_id)
    served = sum(1 for p in results.values() if p.batch_usage is not None)
    assert served == row["accepted_count"] == bedrock.processed, "every record Bedrock processed served its page"
    on_demand_pages = sum(1 for p in results.values() if p.served_by == "on_demand")
    assert served + on_demand_pages == PAGES - PAGES // BLANK_EVERY, "the rest, and only the rest, on-demand"
    billed = batch_ledger_rows(job_id)
    assert len(billed) == 1 and Decimal(billed[0]["cost_usd"]) > 0, "the partial output is billed exactly once"
    assert_lane_bills_the_manifest(job_id)
    assert_total_is_the_ledger(job_id)
    assert_ledger_equals_tokens_served(stack, [job_id])


def test_process_now_between_close_and_resume_lets_recovery_resume_with_the_primed_results(stack_factory):
    stack = stack_factory(FAST, extra_env=SMALL_LANE_ENV, schedules=False)
    gate = Gate(stack, "batch_resume")
    job_id, _ = submit()
    gate.wait_entered()  # collected and closed; the lane has not resumed the job
    row = newest_lane(job_id)
    assert row["state"] == "closed" and row["accepted_count"] > 0 and job(job_id).status == "waiting_batch"
    status, body = api(stack, "POST", f"/api/v1/files/{file_of(job_id)}/process-now")
    assert status == 200 and body["resumed"] is False and body["action"] == "left_to_recovery", body
    assert job(job_id).status == "waiting_batch"
    recovered = stack.registry.invoke("recovery", {})
    assert job_id in recovered.result["resumed"], recovered
    gate.release()
    wait_until(lambda: job(job_id).status in ("completed", "failed"), what="the primed conversion")
    resumed = job(job_id)
    assert resumed.batch_primed is True and resumed.batch_cost_usd == Decimal(row["cost_usd"])
    assert job(job_id).pages_batch == row["accepted_count"], "the batch results were used"
    assert_converted_whole(job_id)
    assert len(batch_ledger_rows(job_id)) == 1
    assert_lane_bills_the_manifest(job_id)
    assert_ledger_equals_tokens_served(stack, [job_id])


def test_another_user_cannot_cancel_or_process_now(stack_factory):
    stack = stack_factory(FAST, extra_env=SMALL_LANE_ENV, schedules=False)
    gate = Gate(stack, "batch_packer", skip_with={"claimed": []})
    job_id, _ = submit()
    gate.wait_entered()
    for action in ("cancel", "process-now"):
        status, body = api(stack, "POST", f"/api/v1/files/{file_of(job_id)}/{action}", user="someone-else")
        assert (status, body["error"]["code"]) == (404, "FILE_NOT_FOUND")
    assert job(job_id).status == "waiting_batch" and newest_lane(job_id) is None
    assert api(stack, "POST", f"/api/v1/files/{file_of(job_id)}/cancel")[0] == 200


# -- while the job is being split (asynchronous creation) ---------------------------------------
def _submit_held_in_split(stack: Any) -> tuple[str, Gate]:
    """A batch-eligible job whose split is held: it stays ``splitting`` until the gate opens."""
    gate = Gate(stack, "job_split")
    created = submit_pdf(services(), make_pdf(PAGES, blank_every=BLANK_EVERY), name="test.pdf", owner_id="tester", wait_split=False)
    assert created["status"] == "splitting"
    gate.wait_entered()
    return created["jobId"], gate


def test_process_now_while_splitting_sends_a_batch_eligible_job_on_demand(stack_factory):
    stack = stack_factory(FAST, extra_env=SMALL_LANE_ENV, schedules=False)
    job_id, gate = _submit_held_in_split(stack)
    status, body = api(stack, "POST", f"/api/v1/files/{file_of(job_id)}/process-now")
    assert status == 200 and body["action"] == "flagged_while_splitting" and body["status"] == "splitting", body
    gate.release()
    wait_until(lambda: job(job_id).status in ("completed", "failed"), what="the on-demand conversion")
    assert_all_pages_on_demand(job_id)
    assert_converted_whole(job_id)
    assert job_id not in stack.registry.invoke("batch_packer", {}).result["claimed"]
    assert newest_lane(job_id) is None and execution_status("batch", job_id) is None and not stack.bedrock.jobs


def test_cancel_while_splitting_parks_nothing_and_charges_nothing(stack_factory):
    stack = stack_factory(FAST, extra_env=SMALL_LANE_ENV, schedules=False)
    job_id, gate = _submit_held_in_split(stack)
    status, body = api(stack, "POST", f"/api/v1/files/{file_of(job_id)}/cancel")
    assert status == 200 and body["previousStatus"] == "splitting", body
    gate.release()
    wait_until(lambda: execution_status("intake", job_id) not in (None, "RUNNING"), what="the intake to end")
    assert execution_status("intake", job_id) == "SUCCEEDED"
    done = job(job_id)
    assert done.status == "cancelled" and done.chunk_count == 0 and job_repo.PgJobs(services().db).get_chunks(job_id) == []
    assert ledger.PgLedger(services().db).get_hold(job_id) is None, "no hold was ever placed"
    assert job_repo.PgJobs(services().db).get_file(str(done.file_id)).status == "uploaded"
    assert job_id not in stack.registry.invoke("batch_packer", {}).result["claimed"]
    assert newest_lane(job_id) is None and execution_status("batch", job_id) is None and execution_status("conversion", job_id) is None
