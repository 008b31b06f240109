"""A Lambda throttle is a wait, never a failed job (issue 21, point 4), on the offline stack whose Lambda
runtime models concurrency: past a function's reserved concurrency an Invoke answers 429
TooManyRequestsException, which Step Functions names Lambda.TooManyRequestsException.

Counted, not timed: the chunk processor is reserved at 1, the first chunk holds the slot until the second
has been throttled more times than the shared retry block allows (4 tries), then lets go.
"""

from __future__ import annotations

import threading
from decimal import Decimal
from typing import Any

from batchlib import wait_until
from botocore.exceptions import ClientError

from batchlane.aws.clients import client
from batchlane.db import jobs as job_repo
from batchlane.runtime import services
from batchlane_dev.local.lambda_runtime import ConcurrencyLimit, Invocation
from batchlane_dev.local.pdfgen import make_pdf
from deployment.topology import DEFINITION_BLOCKS, THROTTLE_MAX_ATTEMPTS

# More throttles than the shared block's attempts (HeavyTaskRetry on ProcessChunk: 1 + 3): the old ladder
# failed the job here; the throttle ladder (15 retries) waits them out.
THROTTLES_HELD = int(DEFINITION_BLOCKS["HeavyTaskRetry"]["MaxAttempts"]) + 3  # type: ignore[call-overload]
# What these tests assert is how many tries a ladder makes and how it ends, not how long it waits between them:
# Step Functions' retry waits run 10 times faster here (local/patches.py 9; ~40 s → ~4 s a ladder run out).
RETRY_TIME_SCALE = 10.0


def test_a_chunk_throttled_past_the_service_retries_waits_and_the_job_completes(stack_factory):
    from batchlane_dev.local.jobs import submit_pdf

    stack = stack_factory("time_scale=36000", batch_lane=False, extra_env={"BATCHLANE_PAGES_PER_CHUNK": "1"}, retry_time_scale=RETRY_TIME_SCALE)
    stack.registry.concurrency = ConcurrencyLimit(reserved={"chunk_processor": 1})
    first = threading.Lock()

    def hold_the_slot(event: Any, call_real: Any) -> Any:
        if first.acquire(blocking=False):  # the first chunk in: keep the one slot until the other is throttled enough
            wait_until(lambda: stack.registry.throttles.get("chunk_processor", 0) >= THROTTLES_HELD, timeout_s=120, what="throttles")
        return call_real(event)

    stack.registry.intercept("chunk_processor", hold_the_slot)
    created = submit_pdf(services(), make_pdf(2), name="throttled.pdf", owner_id="throttled-owner")
    job_id = str(created["jobId"])
    wait_until(lambda: job_repo.PgJobs(services().db).get_job(job_id).status in ("completed", "failed"), timeout_s=180, what="the job to end")
    job = job_repo.PgJobs(services().db).get_job(job_id)
    assert job.status == "completed", job  # today's ladder: 4 throttles, then CONVERSION_FAILED (Lambda.TooManyRequestsException)
    assert stack.registry.throttles["chunk_processor"] >= THROTTLES_HELD, "the runtime refused past its concurrency"
    assert stack.registry.running.get("chunk_processor") == 0


def test_one_owners_many_chunks_cannot_take_every_chunk_slot_and_a_second_owners_chunk_is_admitted(stack_factory):
    """BATCHLANE_CHUNK_SLOTS=2: owner A's two jobs of 4 one-page chunks each (8 wanting to run, the Map starts
    them all) run at most 2 at once; B's one chunk is admitted while A still has chunks waiting, and every
    job completes (the refused chunks wait, none fails). Counted inside the chunk processor, not timed."""
    from batchlane_dev.local.jobs import submit_pdf

    env = {"BATCHLANE_PAGES_PER_CHUNK": "1", "BATCHLANE_CHUNK_SLOTS": "2"}
    stack = stack_factory("time_scale=36000,converse_latency_ms=1500", batch_lane=False, extra_env=env)
    from batchlane.filejob import chunk as module  # the handler's use case (process_admitted_chunk) calls it inside the slot

    stack.registry._module("chunk_processor")  # loaded, as the runtime does before its first call
    real = module.process_chunk
    lock = threading.Lock()
    running: dict[str, int] = {}
    most: dict[str, int] = {}
    finished: list[str] = []

    def counted(svc: Any, job_id: str, chunk_index: int, **kwargs: Any) -> Any:
        owner = job_repo.PgJobs(svc.db).get_job(job_id).owner_id
        with lock:
            running[owner] = running.get(owner, 0) + 1
            most[owner] = max(most.get(owner, 0), running[owner])
        try:
            return real(svc, job_id, chunk_index, **kwargs)
        finally:
            with lock:
                running[owner] -= 1
                finished.append(owner)

    module.process_chunk = counted
    try:
        a_jobs = [str(submit_pdf(services(), make_pdf(4), name=f"a{i}.pdf", owner_id="owner-a")["jobId"]) for i in range(2)]
        wait_until(lambda: most.get("owner-a", 0) >= 1, timeout_s=60, what="A's first chunk")
        b_job = str(submit_pdf(services(), make_pdf(1), name="b.pdf", owner_id="owner-b")["jobId"])
        jobs = [*a_jobs, b_job]
        wait_until(lambda: all(job_repo.PgJobs(services().db).get_job(j).status in ("completed", "failed") for j in jobs), timeout_s=240, what="the jobs")
    finally:
        module.process_chunk = real
    assert [job_repo.PgJobs(services().db).get_job(j).status for j in jobs] == ["completed"] * 3
    assert most["owner-a"] <= 2, f"A ran {most['owner-a']} chunks at once past its share of 2 slots"
    assert finished.index("owner-b") < len(finished) - 1 - finished[::-1].index("owner-a"), "B's chunk ran before A's last one"


def _execution_status(stack: Any, machine: str, name: str) -> str | None:
    arn = stack.state_machine_arns[machine].replace(":stateMachine:", ":execution:")
    try:
        return str(client("stepfunctions").describe_execution(executionArn=f"{arn}:{name}")["status"])
    except ClientError:  # not started yet
        return None


# These tests run a throttle's ladder out: its 40 retries at 1 s (full jitter) instead of the offline
# 1 s doubling to 16 s (~5 min a step). The count of tries, what is asserted, is the state machine's own.
SHORT_LADDER = {"throttle_interval_seconds": "1", "throttle_max_delay_seconds": "1"}


def _hold(job_id: str) -> list[dict[str, Any]]:
    return services().db.run("SELECT outcome, settled_usd FROM funds_holds WHERE job_id = CAST(:job AS uuid)", job=job_id)


def _spent(job_id: str) -> Decimal:
    row = services().db.one("SELECT COALESCE(SUM(cost_usd), 0) AS usd FROM cost_ledger WHERE job_id = CAST(:job AS uuid)", job=job_id)
    assert row is not None
    return Decimal(row["usd"])


def test_a_job_whose_settle_or_failjob_is_throttled_past_its_ladder_is_ended_by_the_recovery_sweep(stack_factory):
    """Every settle invoke is throttled (reserved concurrency 0), so each conversion execution ends FAILED with the
    job still live: A's Settle (assembled) ran out of its 1 + THROTTLE_MAX_ATTEMPTS tries; B's Assemble raised, and
    its FailJob ran out the same way. The recovery schedule (every 10 minutes, scaled offline) asks Step Functions,
    sees the executions ended, and ends both as the missed step would have: A completed (hold settled at its spend),
    B failed WORKFLOW_FAILED (hold released); each announced once, the owner's live-job slots free again.
    Today: both rows stay live (assembling, processing) for ever."""
    from batchlane.db import budgets
    from batchlane_dev.local.jobs import submit_pdf

    stack = stack_factory("time_scale=36000", batch_lane=False, settings=SHORT_LADDER, retry_time_scale=RETRY_TIME_SCALE)
    stack.registry.concurrency = ConcurrencyLimit(reserved={"settle": 0})
    owner = "settle-throttled-owner"
    announced: list[tuple[str, str]] = []
    lock = threading.Lock()

    def assemble(event: Any, call_real: Any) -> Any:
        # Doomed by its file's name, read from its row: a set of job ids filled after submit_pdf returned raced B's
        # assemble, which on a loaded host ran before the test thread added B's id (B completed, CI 2026-12-04).
        job = job_repo.PgJobs(services().db).get_job(str(event["jobId"]))
        file_row = job_repo.PgJobs(services().db).get_file(job.file_id) if job is not None else None
        if file_row is not None and file_row.name == "failed.pdf":
            return Invocation(error_type="AssemblyBroke", error_message="planted by the test")
        return call_real(event)

    def dispatch(event: Any, call_real: Any) -> Any:
        detail = event.get("detail") or {}
        with lock:
            announced.append((str(detail.get("jobId")), str(detail.get("status"))))
        return call_real(event)

    stack.registry.intercept("assemble", assemble)
    stack.registry.intercept("webhook_dispatch", dispatch)
    a = str(submit_pdf(services(), make_pdf(2), name="settled.pdf", owner_id=owner)["jobId"])
    b_created = submit_pdf(services(), make_pdf(2), name="failed.pdf", owner_id=owner)
    b = str(b_created["jobId"])

    for job_id in (a, b):  # the workflow ran out of throttle retries on its last step: the execution failed, the row is live
        wait_until(lambda j=job_id: _execution_status(stack, "conversion", f"conversion-{j}") == "FAILED", timeout_s=300, what=f"conversion-{job_id} to fail")
    assert stack.registry.throttles.get("settle", 0) >= 2 * (1 + THROTTLE_MAX_ATTEMPTS), stack.registry.throttles
    wait_until(lambda: all(job_repo.PgJobs(services().db).get_job(j).status in ("completed", "failed") for j in (a, b)), timeout_s=120, what="the sweep")

    done, failed = job_repo.PgJobs(services().db).get_job(a), job_repo.PgJobs(services().db).get_job(b)
    assert done.status == "completed" and done.error_id is None and done.markdown_key, done
    assert failed.status == "failed" and failed.error_id == "WORKFLOW_FAILED" and "FAILED" in (failed.error_message or ""), failed
    assert _hold(a) == [{"outcome": "settled", "settled_usd": done.total_cost_usd}] and done.total_cost_usd == _spent(a) > 0
    assert _hold(b) == [{"outcome": "released", "settled_usd": Decimal(0)}] and failed.total_cost_usd == _spent(b)
    assert job_repo.PgJobs(services().db).get_file(done.file_id).status == "converted"
    assert job_repo.PgJobs(services().db).get_file(failed.file_id).status == "failed"
    assert budgets.PgBudgets(services().db).standing(owner).live_jobs == 0, "the owner's live-job slots are free"

    again = stack.registry.invoke("recovery", {})  # a repeat (or concurrent) run finds nothing to do
    assert not again.failed and again.result["jobsEnded"] == {}, again
    wait_until(lambda: (a, "completed") in announced and (b, "failed") in announced, timeout_s=60, what="the two announcements")
    assert announced.count((a, "completed")) == 1 and announced.count((b, "failed")) == 1, announced


def test_a_folder_job_whose_finish_and_failjob_are_throttled_past_their_ladder_is_finished_by_the_recovery_sweep(stack_factory):
    """Every folder_finish invoke is throttled: Finish runs out of its tries, its Catch goes to FailJob (the same
    function), which runs out too, and the run ends FAILED with the folder job live (its files all converted).
    The recovery schedule finishes it as Finish would have: completed, report and manifest in the user's bucket
    (written by the recovery function under the owner's folder-access session), announced once, the owner's
    live folder-job count back to 0. Today: the job stays ``processing`` for ever."""
    import boto3

    from batchlane.db import caps
    from batchlane.db import folder_jobs as folder_repo
    from batchlane.folders import usecases
    from batchlane_dev.local.stack import FOLDER_BUCKET, owner_home

    stack = stack_factory("time_scale=36000", batch_lane=False, settings=SHORT_LADDER, retry_time_scale=RETRY_TIME_SCALE)
    stack.registry.concurrency = ConcurrencyLimit(reserved={"folder_finish": 0})
    owner = "folder-throttled-owner"
    home = owner_home(owner)
    s3 = boto3.client("s3", endpoint_url=stack.env["AWS_ENDPOINT_URL"], region_name="us-east-1")
    s3.put_object(Bucket=FOLDER_BUCKET, Key=f"{home}docs/a.pdf", Body=make_pdf(2))
    announced: list[tuple[str, str]] = []
    lock = threading.Lock()

    def dispatch(event: Any, call_real: Any) -> Any:
        detail = event.get("detail") or {}
        with lock:
            announced.append((str(detail.get("jobId")), str(detail.get("status"))))
        return call_real(event)

    stack.registry.intercept("webhook_dispatch", dispatch)
    status, created = usecases.submit(services(), owner, {"input": {"folder": f"s3://{FOLDER_BUCKET}/{home}docs/"}})
    assert created
    job_id = status["id"]
    row = folder_repo.PgFolderJobs(services().db).get(job_id)
    assert row is not None
    name = f"folder-{job_id}-{row.run}-{int(row.created_at.timestamp())}"
    wait_until(lambda: _execution_status(stack, "folder_job", name) == "FAILED", timeout_s=420, what=f"{name} to fail")
    assert stack.registry.throttles.get("folder_finish", 0) >= 2 * (1 + THROTTLE_MAX_ATTEMPTS), stack.registry.throttles

    wait_until(lambda: folder_repo.PgFolderJobs(services().db).get(job_id).finished_at is not None, timeout_s=120, what="the sweep")
    done = usecases.status(services(), owner, job_id)
    assert done["status"] == "completed" and done["files"]["completed"] == 1, done
    manifest = s3.get_object(Bucket=FOLDER_BUCKET, Key=f"{home}docs/_batchlane/{job_id}/manifest.json")["Body"].read()
    assert b'"status": "completed"' in manifest
    assert caps.PgCaps(services().db).live_folder_jobs(owner) == 0

    again = stack.registry.invoke("recovery", {})
    assert not again.failed and again.result["folderJobsEnded"] == {}, again
    wait_until(lambda: (job_id, "completed") in announced, timeout_s=60, what="the announcement")
    assert announced.count((job_id, "completed")) == 1, announced
