"""The owner-only API over HTTP (the offline API server → the real api handler), real PostgreSQL.

Jobs are set up directly in each state the issue's table names (lane off, schedules
off: nothing moves them but the request under test), then cancel / process now are
called through the API and the outcome is read back from the database. The races
through the real state machines are in tests/e2e/test_cancel_process_now.py.

Convert is asynchronous: 202 with the job ``splitting`` at once, the intake workflow's
split function then splits it (or fails it with the PDF's error id).
"""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from botocore.exceptions import ClientError
from held import HeldInvocations

from batchlane import keys
from batchlane.aws.clients import client
from batchlane.batch.resume import resume_stranded
from batchlane.db import jobs as job_repo
from batchlane.db import lanes as rows
from batchlane.db import ledger
from batchlane.domain import status as st
from batchlane.filejob.source import store_chunk_sources
from batchlane.pdf.split import open_pdf, plan_chunks
from batchlane.runtime import services
from batchlane_dev.cli.jobs_commands import post_upload
from batchlane_dev.local.jobs import wait_until as wait_for
from batchlane_dev.local.lambda_runtime import Invocation
from batchlane_dev.local.pdfgen import encrypted_pdf, make_pdf
from deployment import topology
from tests.conftest import start_stack

SPEC = Path(__file__).resolve().parents[2] / "docs" / "api" / "openapi.yaml"
PAGES, PER_CHUNK = 6, 3
PDF = make_pdf(PAGES)
MAX_PAGES = PAGES + 2  # the stack's page limit, so "too many pages" needs no huge PDF


@pytest.fixture(scope="module")
def stack(migrated_url):  # type: ignore[no-untyped-def]
    stack = start_stack(migrated_url, faults="time_scale=36000", batch_lane=False, schedules=False, extra_env={"BATCHLANE_MAX_PAGES": str(MAX_PAGES)})
    yield stack
    stack.stop()
    assert not stack.grants.denials, stack.grants.denials  # every handler call was granted (batchlane_dev.local.iam)


@pytest.fixture
def owner(stack):  # type: ignore[no-untyped-def]
    """A fresh user per test; its files (and their jobs) are removed afterwards."""
    name = f"user-{uuid.uuid4().hex[:8]}"
    yield name
    services().db.run("DELETE FROM files WHERE owner_id = :owner", owner=name)


def call(stack: Any, method: str, path: str, body: Any = None, *, user: str | None) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Type": "application/json"}
    if user is not None:
        headers["Authorization"] = f"Bearer local:{user}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(stack.env["BATCHLANE_API_URL"] + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def estimate(stack: Any, path: str, body: Any = None, *, user: str, timeout_s: float = 120) -> tuple[int, dict[str, Any]]:
    """A dry run as a client makes it: POST (202, an estimate), then GET /api/v1/estimates/{id} until answered.
    (200, the dry run's answer) when completed; (its status, the view) when the POST is refused; (400, the view) when it
    failed, as the synchronous dry run answered a PDF convert would refuse."""
    status, started = call(stack, "POST", path, body, user=user)
    if status != 202:
        return status, started
    deadline = time.monotonic() + timeout_s
    view = started
    while view["status"] == "running":
        assert time.monotonic() < deadline, f"estimate {started['estimateId']} still running after {timeout_s} s: {view}"
        time.sleep(0.2)
        code, view = call(stack, "GET", started["poll"], user=user)
        assert code == 200, view
    return (200, view["result"]) if view["status"] == "completed" else (400, view)


def priority(owner: str) -> str:
    """The owner's local token with the group that may force on-demand (process-now)."""
    return f"{owner};groups=batchlane-priority"


# A chunk is never paused or assembling (domain/status.py): what a job in those states has.
CHUNKS_OF_JOB = {"paused_budget": "pending", "assembling": "completed"}


def make_job(owner: str, status: str, *, row_state: str | None = None, completed_chunks: int = 0) -> tuple[str, str]:
    """A file and a job in ``status`` (lane in ``row_state``), as the workflows would leave them."""
    svc = services()
    with svc.db.transaction() as tx:
        file_row = job_repo.PgJobs(tx).insert_file(owner_id=owner, name="doc.pdf", s3_key="", size_bytes=len(PDF))
        file_id = str(file_row.id)
        key = keys.upload_key(file_id, "doc.pdf")
        tx.run("UPDATE files SET s3_key = :key WHERE id = CAST(:id AS uuid)", key=key, id=file_id)
        job = job_repo.PgJobs(tx).insert_job(
            file_id=file_id,
            owner_id=owner,
            status=status,
            options={"highFidelity": True, "parser": "auto"},
            model_id=svc.settings.batchlane_model_id,
            total_pages=PAGES,
            pages_per_chunk=PER_CHUNK,
            chunks=plan_chunks(PAGES, PER_CHUNK),
            chunk_status=CHUNKS_OF_JOB.get(status, status),
        )
        job_id = str(job.id)
        # about the worst case of its 6 pages (domain/budget.py: a whole max_tokens answer a page, asked twice)
        ledger.PgLedger(tx).place_hold(job_id=job_id, owner_id=owner, amount_usd=Decimal("2"), hours=6)
        job_repo.PgJobs(tx).move_file(file_id, st.convert())
        for index in range(completed_chunks):
            tx.run("UPDATE chunk_jobs SET status = 'completed' WHERE job_id = CAST(:id AS uuid) AND chunk_index = :i", id=job_id, i=index)
        if row_state is not None:
            make_lane(tx, job_id, job.model_id, row_state)
    svc.store.put_bytes(key, PDF, "application/pdf")
    store_chunk_sources(svc.store, job_id, open_pdf(PDF, max_pages=PAGES), plan_chunks(PAGES, PER_CHUNK))  # as create_job does
    return file_id, job_id


def make_lane(tx: Any, job_id: str, model_id: str, state: str) -> rows.Lane:
    """A lane (one Bedrock job) carrying every chunk of the job, in ``state``; a closed one collected 4 pages of
    chunk 0 an hour ago and billed $0.0123, all of it the job's share."""
    spans = plan_chunks(PAGES, PER_CHUNK)
    lane = rows.PgLanes(tx).insert_lane(
        lane_id=str(uuid.uuid4()), model_id=model_id, deadline_hours=26, chunks=[(job_id, i, PER_CHUNK) for i in range(len(spans))]
    )
    if state in ("submitted", "closed"):
        arn = f"arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/{uuid.uuid4().hex[:12]}"
        rows.PgLanes(tx).mark_submitted(lane.lane_id, arn=arn, name="x", output_uri="s3://b/o/", deadline_hours=26)
    if state == "closed":
        cost = Decimal("0.0123")
        rows.PgLanes(tx).close(lane.lane_id, st.close(), end_state="Completed", accepted=4, fallback=2, cost_usd=cost)
        rows.PgLanes(tx).record_accepted(lane.id, {(job_id, 0): 4})
        ledger.PgLedger(tx).add_batch_cost(job_id=None, lane_row_id=lane.id, model_id=model_id, input_tokens=40, output_tokens=20, cost_usd=cost, metadata={})
        ledger.PgLedger(tx).add_batch_share(
            job_id=job_id, lane_row_id=lane.id, model_id=model_id, input_tokens=40, output_tokens=20, cost_usd=cost, metadata={}
        )
        tx.run("UPDATE lanes SET closed_at = now() - interval '1 hour' WHERE id = :id", id=lane.id)
    found = rows.PgLanes(tx).get_row(lane.lane_id)
    assert found is not None and found.state == state
    return found


def pool_reason(job_id: str) -> str | None:
    """Why the pool let the job go (None: it did not)."""
    row = services().db.one("SELECT pool_left_at, lane_reason FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=job_id)
    assert row is not None
    return row["lane_reason"] if row["pool_left_at"] is not None else None


def lane_of(job_id: str) -> rows.Lane:
    """The job's one lane."""
    [lane] = rows.PgLanes(services().db).lanes_of_job(job_id)
    return lane


def job(job_id: str) -> job_repo.JobRow:
    found = job_repo.PgJobs(services().db).get_job(job_id)
    assert found is not None
    return found


# -- identity and ownership ---------------------------------------------------------------
def test_without_a_token_the_api_answers_401(stack):
    status, body = call(stack, "GET", "/api/files", user=None)
    assert (status, body["error"]["code"]) == (401, "UNAUTHORIZED")


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/api/v1/files/{file}/conversion", None),
        ("POST", "/api/v1/files/{file}/cancel", {}),
        ("POST", "/api/v1/files/{file}/process-now", {}),
        ("POST", "/api/v1/files/{file}/convert", {}),
        ("DELETE", "/api/v1/files/{file}", None),
        ("GET", "/api/v1/jobs/{job}", None),
    ],
)
def test_another_users_file_answers_404_and_is_left_alone(stack, owner, method, path, body):
    file_id, job_id = make_job(owner, "waiting_batch")
    status, answer = call(stack, method, path.format(file=file_id, job=job_id), body, user=f"intruder-{owner}")
    assert status == 404 and answer["error"]["code"] in ("FILE_NOT_FOUND", "JOB_NOT_FOUND")
    # the same answer as for an id that does not exist at all
    missing_status, missing = call(stack, method, path.format(file=uuid.uuid4(), job=uuid.uuid4()), body, user=owner)
    assert (missing_status, missing["error"]["code"]) == (status, answer["error"]["code"])
    assert job(job_id).status == "waiting_batch"
    assert call(stack, "GET", "/api/files", user=f"intruder-{owner}")[1]["files"] == []


def test_list_files_reads_batch_waiting_from_the_job(stack, owner):
    waiting, _ = make_job(owner, "waiting_batch")
    pending, _ = make_job(owner, "pending")
    status, body = call(stack, "GET", "/api/files", user=owner)
    assert status == 200
    by_id = {f["fileId"]: f for f in body["files"]}
    assert by_id[waiting]["batchWaiting"] is True and by_id[waiting]["conversion"]["phase"] == "batch_queued"
    assert by_id[pending]["batchWaiting"] is False and by_id[pending]["conversion"]["status"] == "pending"
    status, only_waiting = call(stack, "GET", "/api/files?status=waiting_batch", user=owner)
    assert [f["fileId"] for f in only_waiting["files"]] == [waiting]
    assert call(stack, "GET", "/api/files?status=bogus", user=owner)[1]["error"]["code"] == "BAD_REQUEST"


def test_conversion_progress_shows_chunks_phase_and_lane(stack, owner):
    file_id, job_id = make_job(owner, "waiting_batch", row_state="submitted", completed_chunks=1)
    status, body = call(stack, "GET", f"/api/v1/files/{file_id}/conversion", user=owner)
    assert status == 200
    assert body["jobId"] == job_id and body["phase"] == "batch_running" and body["batchWaiting"] is True
    assert body["chunks"] == {"total": 2, "done": 1, "cancelled": 0}
    assert body["pages"]["done"] == PER_CHUNK and body["pages"]["total"] == PAGES
    assert body["batch"]["state"] == "submitted"
    by_job = call(stack, "GET", f"/api/v1/jobs/{job_id}", user=owner)[1]
    assert by_job == body and by_job["live"]["costSoFarUsd"] == "0"  # both routes carry the live figures (issues 25, 41: one Conversion shape)


# -- cancel ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("status", "row_state"),
    [
        ("pending", None),
        ("processing", None),
        ("paused_budget", None),
        ("waiting_batch", None),
        ("waiting_batch", "preparing"),
        ("waiting_batch", "submitted"),
        ("waiting_batch", "closed"),
    ],
)
def test_cancel_stops_the_job_costs_what_it_spent_and_resets_the_file(stack, owner, status, row_state):
    file_id, job_id = make_job(owner, status, row_state=row_state, completed_chunks=1)
    code, body = call(stack, "POST", f"/api/v1/files/{file_id}/cancel", {"jobId": job_id}, user=owner)
    assert code == 200, body
    assert body["previousStatus"] == status and body["holdReleased"] is True
    db = services().db
    assert job(job_id).status == "cancelled"
    assert [c.status for c in job_repo.PgJobs(db).get_chunks(job_id)] == ["completed", "cancelled"]
    hold = ledger.PgLedger(db).get_hold(job_id)
    # what it spent (a closed lane's share) is its total, as its owner's budget counts it (issue 38.2); nothing more
    spent = ledger.PgLedger(db).job_total(job_id)
    assert spent == (Decimal("0.0123") if row_state == "closed" else 0)
    assert hold is not None and hold.outcome == "cancelled" and (hold.settled_usd or 0) == spent == job(job_id).total_cost_usd
    assert job_repo.PgJobs(db).get_file(file_id).status == "uploaded"
    if row_state in ("preparing", "submitted"):
        lane = lane_of(job_id)  # its only member left: nobody waits on it
        assert lane.reason == "cancelled" and lane.state == row_state  # the lane closes it (and bills a submitted job) itself
        assert {m.state for m in rows.PgLanes(db).members(lane.id)} == {"left"}
    if row_state is None and status == "waiting_batch":
        assert pool_reason(job_id) == "cancelled", "the pool lets it go"
    # cancelled is terminal: recovery does not resume it, a second cancel changes nothing
    resume_stranded(services(), older_than_s=0)
    assert job(job_id).status == "cancelled"
    again = call(stack, "POST", f"/api/v1/files/{file_id}/cancel", {}, user=owner)
    assert again[0] == 200 and again[1]["alreadyCancelled"] is True


@pytest.mark.parametrize(("status", "code"), [("assembling", "CONVERSION_FINISHING"), ("completed", "NOT_CANCELLABLE"), ("failed", "NOT_CANCELLABLE")])
def test_cancel_of_a_finishing_or_finished_job_is_409(stack, owner, status, code):
    file_id, job_id = make_job(owner, status)
    answer = call(stack, "POST", f"/api/v1/files/{file_id}/cancel", {}, user=owner)
    assert answer[0] == 409 and answer[1]["error"]["code"] == code
    assert job(job_id).status == status
    assert ledger.PgLedger(services().db).get_hold(job_id).outcome is None


def test_cancel_guarded_on_the_job_id_the_caller_saw(stack, owner):
    file_id, job_id = make_job(owner, "pending")
    answer = call(stack, "POST", f"/api/v1/files/{file_id}/cancel", {"jobId": str(uuid.uuid4())}, user=owner)
    assert answer[0] == 409 and answer[1]["error"]["code"] == "JOB_NOT_CURRENT"
    assert job(job_id).status == "pending"


# -- process now ------------------------------------------------------------------------------
@pytest.mark.parametrize("status", ["pending", "processing", "paused_budget", "assembling", "completed", "failed", "cancelled"])
def test_process_now_only_from_waiting_batch(stack, owner, status):
    file_id, job_id = make_job(owner, status)
    answer = call(stack, "POST", f"/api/v1/files/{file_id}/process-now", {}, user=priority(owner))
    assert answer[0] == 409 and answer[1]["error"]["code"] == "NOT_BATCH_WAITING"
    assert job(job_id).status == status


@pytest.mark.parametrize("row_state", [None, "preparing"])
def test_process_now_leaves_the_lane_and_converts_on_demand(stack, owner, row_state):
    file_id, job_id = make_job(owner, "waiting_batch", row_state=row_state)
    services().db.run("UPDATE funds_holds SET expires_at = now() + interval '40 hours' WHERE job_id = CAST(:id AS uuid)", id=job_id)
    code, body = call(stack, "POST", f"/api/v1/files/{file_id}/process-now", {"jobId": job_id}, user=priority(owner))
    assert code == 200, body
    assert body["resumed"] is True and body["laneState"] == row_state
    assert pool_reason(job_id) == "process_now"
    if row_state is None:  # in the pool: the pool lets it go, so the packer never takes it
        assert rows.PgLanes(services().db).lanes_of_job(job_id) == []
    else:
        lane = lane_of(job_id)
        assert lane.reason == "process_now" and lane.state == row_state  # the lane stops / leaves and closes it itself
        assert {m.state for m in rows.PgLanes(services().db).members(lane.id)} == {"left"}
    hold = ledger.PgLedger(services().db).get_hold(job_id)
    assert hold.expires_at.timestamp() < time.time() + 7 * 3600, "hold back to the on-demand window"
    finished: job_repo.JobRow = wait_for(lambda: job(job_id).status in ("completed", "failed") and job(job_id), what="the on-demand conversion")
    assert finished.status == "completed" and finished.pages_failed == 0
    assert finished.pages_converted == PAGES and finished.pages_batch == 0
    assert not finished.batch_primed


def test_process_now_while_its_own_batch_job_runs_stops_it_and_keeps_it_for_what_it_processed(stack, owner):
    # Issue 38.2: the records Bedrock processed are billed either way; the job waits for the stop, and the stopped
    # job's Collect and Resume use them and send only the rest on-demand (the run: tests/e2e/test_cancel_process_now.py)
    file_id, job_id = make_job(owner, "waiting_batch", row_state="submitted")
    code, body = call(stack, "POST", f"/api/v1/files/{file_id}/process-now", {"jobId": job_id}, user=priority(owner))
    assert code == 200, body
    assert (body["resumed"], body["action"], body["laneState"]) == (False, "stopping_batch_job", "submitted")
    lane = lane_of(job_id)
    assert lane.reason == "process_now" and {m.state for m in rows.PgLanes(services().db).members(lane.id)} == {"packed"}
    assert job(job_id).status == "waiting_batch"


def test_process_now_between_close_and_resume_leaves_it_to_recovery_with_the_primed_results(stack, owner):
    file_id, job_id = make_job(owner, "waiting_batch", row_state="closed")
    code, body = call(stack, "POST", f"/api/v1/files/{file_id}/process-now", {}, user=priority(owner))
    assert code == 200 and body["resumed"] is False and body["action"] == "left_to_recovery"
    assert job(job_id).status == "waiting_batch"
    assert job_id in resume_stranded(services())["resumed"]
    resumed = job(job_id)
    assert resumed.batch_primed is True and resumed.batch_cost_usd == Decimal("0.0123")
    wait_for(lambda: job(job_id).status == "completed", what="the primed conversion")


# -- uploads, convert, delete ----------------------------------------------------------------
def upload(stack: Any, owner: str, data: bytes, name: str = "book.pdf") -> str:
    status, registered = call(stack, "POST", "/api/v1/files", {"name": name, "sizeBytes": len(data)}, user=owner)
    assert status == 201 and registered["upload"]["method"] == "POST"
    assert post_upload(registered["upload"], data) == 204
    return str(registered["fileId"])


def intake_status(job_id: str) -> str | None:
    arn = (services().workflows.intake_arn or "").replace(":stateMachine:", ":execution:")
    try:
        return str(client("stepfunctions").describe_execution(executionArn=f"{arn}:intake-{job_id}")["status"])
    except ClientError:
        return None


def HeldSplit(stack: Any) -> HeldInvocations:
    """Holds every job_split invocation until released."""
    return HeldInvocations(stack, "job_split")


def test_register_upload_convert_and_conflicts(stack, owner):
    status, registered = call(stack, "POST", "/api/v1/files", {"name": "book.pdf", "sizeBytes": len(PDF)}, user=owner)
    assert status == 201 and registered["upload"]["method"] == "POST"
    file_id = registered["fileId"]
    early = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)
    assert early[0] == 409 and early[1]["error"]["code"] == "UPLOAD_MISSING"
    assert post_upload(registered["upload"], PDF) == 204
    status, created = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {"options": {}}, user=owner)
    assert status == 202 and created["status"] == "splitting" and created["totalPages"] == 0
    twice = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)
    assert twice[0] == 409 and twice[1]["error"]["code"] == "CONVERSION_IN_PROGRESS"
    wait_for(lambda: job(created["jobId"]).status == "completed", what="conversion")
    assert job(created["jobId"]).total_pages == PAGES
    assert call(stack, "POST", "/api/v1/files", {"name": ""}, user=owner)[1]["error"]["code"] == "BAD_REQUEST"
    assert call(stack, "POST", f"/api/v1/files/{file_id}/convert", {"options": {"nope": 1}}, user=owner)[1]["error"]["code"] in ("OPTIONS_INVALID", "BAD_REQUEST")


def test_convert_answers_202_splitting_at_once_then_the_job_converts(stack, owner):
    # Given an uploaded PDF, and a split held back so the test sees the job before it is split
    file_id = upload(stack, owner, PDF)
    with HeldSplit(stack) as held:
        # When the owner converts it
        status, created = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)
        # Then the API answers 202 with the job id while the split has not run yet
        assert status == 202 and created["status"] == "splitting", created
        assert held.entered.wait(30), "the intake never called the split function"
        code, view = call(stack, "GET", f"/api/v1/jobs/{created['jobId']}", user=owner)
        assert code == 200 and (view["status"], view["phase"], view["pages"]["total"]) == ("splitting", "splitting", 0)
        listed = call(stack, "GET", "/api/files?status=splitting", user=owner)[1]["files"]
        assert [f["fileId"] for f in listed] == [file_id]
    # And once split, the job converts whole
    wait_for(lambda: job(created["jobId"]).status == "completed", what="the conversion")
    done = call(stack, "GET", f"/api/v1/files/{file_id}/conversion", user=owner)[1]
    assert done["pages"] == {"total": PAGES, "done": PAGES, "failed": 0, "batchServed": 0}
    assert done["chunks"]["total"] == -(-PAGES // services().settings.batchlane_pages_per_chunk)
    assert intake_status(created["jobId"]) == "SUCCEEDED"


def test_the_upload_is_a_short_sigv4_post_bound_to_one_pdf_of_the_declared_size(stack, owner):
    # When a user registers a 1,234-byte file
    status, registered = call(stack, "POST", "/api/v1/files", {"name": "small.pdf", "sizeBytes": 1234}, user=owner)
    assert status == 201
    upload = registered["upload"]
    # Then the answer is a presigned POST, SigV4-signed, whose policy admits only a PDF of at most that size,
    # under this file's key, for 10 minutes (moto does not enforce the policy: its document is the proof)
    assert upload["method"] == "POST" and upload["maxBytes"] == 1234 and upload["expiresInSeconds"] == 600
    fields = upload["fields"]
    assert fields["x-amz-algorithm"] == "AWS4-HMAC-SHA256" and fields["x-amz-signature"] and "AWSAccessKeyId" not in fields
    policy = json.loads(base64.b64decode(fields["policy"]))
    conditions = policy["conditions"]
    assert ["content-length-range", 1, 1234] in conditions
    assert {"Content-Type": "application/pdf"} in conditions and fields["Content-Type"] == "application/pdf"
    key = services().db.one("SELECT s3_key FROM files WHERE id = CAST(:id AS uuid)", id=registered["fileId"])["s3_key"]
    assert {"key": key} in conditions and fields["key"] == key
    expires = datetime.fromisoformat(policy["expiration"].replace("Z", "+00:00"))
    assert expires - datetime.now(UTC) <= timedelta(minutes=10, seconds=30)


def test_an_upload_larger_than_declared_is_refused_before_it_is_read(stack, owner):
    # Given a file registered as 100 bytes but a whole PDF stored (moto ignores content-length-range)
    registered = call(stack, "POST", "/api/v1/files", {"name": "liar.pdf", "sizeBytes": 100}, user=owner)[1]
    assert post_upload(registered["upload"], PDF) == 204
    # When it is converted, Then the API refuses it: nothing is split, no job is created
    code, body = call(stack, "POST", f"/api/v1/files/{registered['fileId']}/convert", {}, user=owner)
    assert (code, body["error"]["code"]) == (409, "UPLOAD_SIZE_MISMATCH"), body
    assert services().db.one("SELECT count(*) AS n FROM large_conversion_jobs WHERE file_id = CAST(:id AS uuid)", id=registered["fileId"])["n"] == 0


@pytest.mark.parametrize(
    ("content", "error_id"),
    [
        (b"not a pdf!", "PDF_NOT_PDF"),
        (PDF[: len(PDF) // 2], "PDF_CORRUPT"),
        (encrypted_pdf(PDF, "secret"), "PDF_ENCRYPTED"),
        (make_pdf(MAX_PAGES + 1), "PDF_TOO_MANY_PAGES"),
    ],
    ids=["not-a-pdf", "truncated", "encrypted", "too-many-pages"],
)
def test_a_pdf_that_cannot_be_read_ends_failed_with_its_error_id(stack, owner, content, error_id):
    file_id = upload(stack, owner, content, "broken.pdf")
    status, created = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)
    assert status == 202 and created["status"] == "splitting" and created["jobId"]
    wait_for(lambda: job(created["jobId"]).status != "splitting", what="the split")
    code, view = call(stack, "GET", f"/api/v1/jobs/{created['jobId']}", user=owner)
    assert code == 200 and view["status"] == "failed" and view["error"]["code"] == error_id, view
    assert view["chunks"]["total"] == 0 and view["hold"] is None
    files = call(stack, "GET", "/api/files", user=owner)[1]["files"]
    assert files[0]["status"] == "failed"
    assert intake_status(created["jobId"]) == "SUCCEEDED", "a bad PDF is an answer, not a workflow failure"


def test_a_split_that_crashes_after_its_retries_marks_the_job_failed(stack, owner):
    # Given a split function that dies (as an out-of-memory run would, unretried here to stay fast)
    tries: list[str] = []
    stack.registry.intercept(
        "job_split", lambda event, call_real: tries.append(event["jobId"]) or Invocation(error_type="RuntimeError", error_message="Runtime exited")
    )
    try:
        file_id = upload(stack, owner, PDF)
        status, created = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)
        assert status == 202
        # Then the intake's Catch marks the job failed, visibly, and the file can be converted again
        wait_for(lambda: job(created["jobId"]).status == "failed", what="the intake to fail the job")
    finally:
        stack.registry.intercept("job_split", None)
    assert tries.count(created["jobId"]) == 3, "tried, then retried twice (the split is idempotent)"
    view = call(stack, "GET", f"/api/v1/jobs/{created['jobId']}", user=owner)[1]
    # a stable code and a generic message: the Lambda's raw cause stays in the logs (issue 15, "Leaks")
    assert view["error"]["code"] == "SPLIT_FAILED" and view["error"]["message"] and "Runtime exited" not in view["error"]["message"]
    wait_for(lambda: intake_status(created["jobId"]) == "FAILED", what="the intake execution to end failed (alarm)")
    again = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)
    assert again[0] == 202
    wait_for(lambda: job(again[1]["jobId"]).status != "splitting", what="the new job's split")  # nothing left running


def test_a_split_that_dies_after_committing_is_retried_and_the_job_still_converts(stack, owner):
    # Given a split whose first run commits the chunks but dies before starting the conversion
    attempts: dict[str, int] = {}

    def die_once_after_commit(event: Any, call_real: Any) -> Invocation:
        attempts[event["jobId"]] = attempts.get(event["jobId"], 0) + 1
        if attempts[event["jobId"]] > 1:
            return call_real(event)
        workflows = services().workflows
        original = workflows.start_conversion
        workflows.start_conversion = lambda job_id: (_ for _ in ()).throw(RuntimeError("StartExecution throttled"))  # type: ignore[method-assign]
        try:
            return call_real(event)
        finally:
            workflows.start_conversion = original  # type: ignore[method-assign]

    stack.registry.intercept("job_split", die_once_after_commit)
    try:
        file_id = upload(stack, owner, PDF)
        created = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)[1]
        # Then the intake retries the split, which finds the job split and starts its conversion
        wait_for(lambda: job(created["jobId"]).status == "completed", what="the conversion")
    finally:
        stack.registry.intercept("job_split", None)
    assert attempts[created["jobId"]] == 2
    wait_for(lambda: intake_status(created["jobId"]) == "SUCCEEDED", what="the intake to end")
    assert len(job_repo.PgJobs(services().db).get_chunks(created["jobId"])) == job(created["jobId"]).chunk_count > 0


def test_cancel_while_splitting_leaves_nothing_parked_or_started(stack, owner):
    file_id = upload(stack, owner, PDF)
    with HeldSplit(stack) as held:
        created = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)[1]
        assert held.entered.wait(30)
        code, body = call(stack, "POST", f"/api/v1/files/{file_id}/cancel", {"jobId": created["jobId"]}, user=owner)
        assert code == 200 and body["previousStatus"] == "splitting", body
    # The held split now runs: it must notice the cancel and write, hold and start nothing
    wait_for(lambda: intake_status(created["jobId"]) == "SUCCEEDED", what="the intake to end")
    cancelled = job(created["jobId"])
    assert cancelled.status == "cancelled" and cancelled.chunk_count == 0
    assert job_repo.PgJobs(services().db).get_chunks(created["jobId"]) == []
    assert ledger.PgLedger(services().db).get_hold(created["jobId"]) is None
    assert job_repo.PgJobs(services().db).get_file(file_id).status == "uploaded"
    arn = (services().workflows.conversion_arn or "").replace(":stateMachine:", ":execution:")
    with pytest.raises(ClientError):
        client("stepfunctions").describe_execution(executionArn=f"{arn}:conversion-{created['jobId']}")


def test_the_sweep_ends_a_job_whose_run_failed_once_under_concurrent_runs_and_leaves_a_running_one_alone(stack, owner):
    """Issue 21.4, the effects of operations/recovery.settle_ended_jobs on PostgreSQL: four sweeps at once over a
    ``processing`` job whose execution ended FAILED (Settle's FailJob throttled past its ladder) fail it once
    (WORKFLOW_FAILED, hold released, one event); a job whose execution still runs is left as it is."""
    import dataclasses
    import threading

    from batchlane.domain.workflow_end import Execution
    from batchlane.operations.recovery import settle_ended_jobs

    svc = services()
    ids = []
    for name in ("ended.pdf", "running.pdf"):
        file_row = job_repo.PgJobs(svc.db).insert_file(owner_id=owner, name=name, s3_key=f"uploads/{uuid.uuid4()}/{name}", size_bytes=len(PDF))
        row = job_repo.PgJobs(svc.db).insert_job(file_id=str(file_row.id), owner_id=owner, status="processing", options={}, model_id=svc.settings.batchlane_model_id,
            total_pages=1, pages_per_chunk=PER_CHUNK, chunks=[],
        )  # fmt: skip
        ledger.PgLedger(svc.db).place_hold(job_id=str(row.id), owner_id=owner, amount_usd=Decimal("0.50"), hours=1)
        ids.append(str(row.id))
    ended, running = ids
    now = datetime.now(UTC)

    class Workflows:
        def describe_execution(self, machine: str, name: str) -> Execution | None:
            if name == f"conversion-{ended}":
                return Execution(machine, name, "FAILED", now - timedelta(hours=1), now)
            if name == f"conversion-{running}":
                return Execution(machine, name, "RUNNING", now - timedelta(hours=1), None)
            return None  # every other live job of this database: not ours to judge here

    published: list[dict[str, Any]] = []

    class Bus:
        def publish(self, detail_type: str, detail: dict[str, Any]) -> None:
            published.append(detail)

    swept = dataclasses.replace(svc, workflows=Workflows(), bus=Bus())
    start = threading.Barrier(4)
    results: list[dict[str, str]] = []

    def sweep() -> None:
        start.wait(30)
        results.append(settle_ended_jobs(swept, unchanged_for_s=0, limit=100_000))  # every live job of the shared database

    threads = [threading.Thread(target=sweep) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == 4
    failed = job(ended)
    assert (failed.status, failed.error_id) == ("failed", "WORKFLOW_FAILED") and "(FAILED)" in (failed.error_message or "")
    hold = ledger.PgLedger(svc.db).get_hold(ended)
    assert hold is not None and hold.outcome == "released"
    assert [(d["jobId"], d["status"]) for d in published if d.get("jobId") in ids] == [(ended, "failed")], published
    assert job(running).status == "processing" and ledger.PgLedger(svc.db).get_hold(running).outcome is None  # type: ignore[union-attr]
    assert all(r.get(ended) in (None, "failed") for r in results) and running not in {k for r in results for k in r}


def test_recovery_fails_a_job_left_splitting_long_after_its_intake_must_have_ended(stack, owner):
    def splitting_job() -> tuple[str, str]:  # as create_job leaves it: no pages, chunks or hold yet
        svc = services()
        file_row = job_repo.PgJobs(svc.db).insert_file(owner_id=owner, name="doc.pdf", s3_key=f"uploads/{uuid.uuid4()}/doc.pdf", size_bytes=len(PDF))
        row = job_repo.PgJobs(svc.db).insert_job(file_id=str(file_row.id), owner_id=owner, status="splitting", options={}, model_id=svc.settings.batchlane_model_id,
            total_pages=0, pages_per_chunk=PER_CHUNK, chunks=[],
        )  # fmt: skip
        svc.store.put_bytes(file_row.s3_key, PDF, "application/pdf")
        return str(file_row.id), str(row.id)

    file_id, stalled = splitting_job()
    _, recent = splitting_job()
    services().db.run("UPDATE large_conversion_jobs SET updated_at = now() - interval '3 hours' WHERE id = CAST(:id AS uuid)", id=stalled)
    outcome = stack.registry.invoke("recovery", {})
    assert not outcome.failed and outcome.result["splitsFailed"] == [stalled], outcome
    view = call(stack, "GET", f"/api/v1/jobs/{stalled}", user=owner)[1]
    assert (view["status"], view["error"]["code"]) == ("failed", "SPLIT_STALLED")
    assert job(recent).status == "splitting", "a split that may still be running is left alone"
    again = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)
    assert again[0] == 202, "the file can be converted again"
    wait_for(lambda: job(again[1]["jobId"]).status != "splitting", what="the new job's split")  # nothing left running


def test_process_now_while_splitting_flags_the_job_and_it_converts(stack, owner):
    file_id = upload(stack, owner, PDF)
    with HeldSplit(stack) as held:
        created = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)[1]
        assert held.entered.wait(30)
        code, body = call(stack, "POST", f"/api/v1/files/{file_id}/process-now", {"jobId": created["jobId"]}, user=priority(owner))
        assert code == 200 and (body["action"], body["status"], body["resumed"]) == ("flagged_while_splitting", "splitting", False), body
    wait_for(lambda: job(created["jobId"]).status == "completed", what="the conversion")


def test_delete_cancels_a_live_job_first_then_hides_the_file(stack, owner):
    file_id, job_id = make_job(owner, "waiting_batch", row_state="submitted")
    status, body = call(stack, "DELETE", f"/api/v1/files/{file_id}", user=owner)
    assert status == 200 and body["cancelledJobId"] == job_id
    assert job(job_id).status == "cancelled"
    assert ledger.PgLedger(services().db).get_hold(job_id).outcome == "cancelled"
    assert lane_of(job_id).state == "submitted", "the lane (and what it bills) outlives the file"
    assert call(stack, "GET", f"/api/v1/files/{file_id}/conversion", user=owner)[0] == 404
    assert call(stack, "GET", "/api/files", user=owner)[1]["files"] == []
    finishing, finishing_job = make_job(owner, "assembling")
    answer = call(stack, "DELETE", f"/api/v1/files/{finishing}", user=owner)
    assert answer[0] == 409 and answer[1]["error"]["code"] == "CONVERSION_FINISHING"
    assert job(finishing_job).status == "assembling"


def test_delete_removes_every_object_the_file_left_but_batch_files_a_bedrock_job_still_reads(stack, owner):
    # Given a converted file (upload, chunk sources, Markdown, the batch results its closed lane wrote for it)
    store = services().store
    file_id, job_id = make_job(owner, "completed", row_state="closed", completed_chunks=2)
    store.put_bytes(keys.markdown_key(job_id), b"# converted", "text/markdown")
    store.put_json(keys.batch_results_key(job_id, 0), {"results": []})
    # and a second file whose batch job Bedrock is still reading
    reading_file, reading_job = make_job(owner, "waiting_batch", row_state="submitted")
    store.put_json(keys.batch_results_key(reading_job, 0), {"results": []})
    upload_key = job_repo.PgJobs(services().db).get_file(file_id).s3_key
    assert store.list_keys(f"jobs/{job_id}/") and store.list_keys(f"batch/{job_id}/")
    # When the owner deletes both
    assert call(stack, "DELETE", f"/api/v1/files/{file_id}", user=owner)[0] == 200
    assert call(stack, "DELETE", f"/api/v1/files/{reading_file}", user=owner)[0] == 200
    # Then nothing of the first is left in the bucket (before: only the upload went, or nothing)
    assert store.list_keys(upload_key) == [] and store.list_keys(f"jobs/{job_id}/") == [] and store.list_keys(f"batch/{job_id}/") == []
    # And the second's batch input stays for the Bedrock job that reads it (the bucket's lifecycle ends it)
    assert store.list_keys(f"jobs/{reading_job}/") == [] and store.list_keys(f"batch/{reading_job}/") != []


def test_a_delete_s3_refuses_is_not_answered_deleted(stack, owner):
    # Given an api role without s3:DeleteObject (as every role was before)
    file_id, _ = make_job(owner, "completed", completed_chunks=2)
    stack.grants.set_needs("api", tuple(n for n in topology.function("api").needs if n != "s3_delete"))
    try:
        status, body = call(stack, "DELETE", f"/api/v1/files/{file_id}", user=owner)
    finally:
        stack.grants.set_needs("api", None)
    # Then the API says it failed, and the file is still listed (the user can delete it again)
    assert status == 500 and body.get("deleted") is None, body
    assert [f["fileId"] for f in call(stack, "GET", "/api/files", user=owner)[1]["files"]] == [file_id]
    assert {action for fn, action, _ in stack.grants.denials if fn == "api"} == {"s3:DeleteObject"}
    stack.grants.denials.clear()  # seen and asserted
    assert call(stack, "DELETE", f"/api/v1/files/{file_id}", user=owner)[0] == 200


@pytest.mark.parametrize(
    "name",
    ["doc\u0000.pdf", "invoice\u202egnp.pdf", "a\u2066b.pdf", "line\nbreak.pdf", "zero\u200bwidth.pdf", " padded.pdf"],
    ids=["nul", "bidi-override", "bidi-isolate", "newline", "zero-width", "leading-space"],
)
def test_a_name_with_control_or_bidi_characters_is_a_400(stack, owner, name):
    status, body = call(stack, "POST", "/api/v1/files", {"name": name, "sizeBytes": 10}, user=owner)
    assert (status, body["error"]["code"]) == (400, "NAME_INVALID"), body
    assert call(stack, "GET", "/api/files", user=owner)[1]["files"] == [], "nothing registered"


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/files/urn:uuid:{id}/conversion",
        "/api/v1/files/{{{id}}}/conversion",
        "/api/v1/files/urn:uuid:{id}/convert",
        "/api/v1/files/urn:uuid:{id}",
        "/api/v1/jobs/urn:uuid:{id}",
        "/api/v1/jobs/{ID}/pages",
        "/api/v1/deliveries?job_id=urn:uuid:{id}",
    ],
)
def test_an_id_that_is_not_a_canonical_uuid_is_a_400(stack, owner, path):
    # Given a real file of the owner, named by a non-canonical spelling of its id (urn:uuid:, braces, upper case)
    file_id, job_id = make_job(owner, "completed")
    concrete = path.format(id=file_id if "files" in path else job_id, ID=job_id.upper())
    method = "POST" if concrete.endswith("/convert") else "DELETE" if concrete.count("/") == 4 and "files" in concrete else "GET"
    status, body = call(stack, method, concrete, {} if method == "POST" else None, user=owner)
    assert (status, body["error"]["code"]) == (400, "ID_INVALID"), (concrete, body)


@pytest.mark.parametrize(
    ("options", "what"),
    [
        ({"parser": "x" * 1_000_000}, "parser"),
        ({"parser": "fast\u0000"}, "parser"),
        ({"modelId": "m" * 5000}, "modelId"),
        ({"callbackUrl": "https://example.com/" + "a" * 5000}, "callbackUrl"),
        ({"callbackUrl": "https://example.com/hook", "callbackHeaders": {"X-Big": "v" * 100_000}}, "callbackHeaders"),
        ({"highFidelity": {"nested": "x" * 1000}}, "highFidelity"),
        ({"nope": 1}, "nope"),
    ],
    ids=["1mb-parser", "nul-parser", "long-model", "long-url", "huge-header", "object-flag", "unknown"],
)
def test_unbounded_or_unknown_options_are_a_400_and_nothing_is_stored(stack, owner, options, what):
    file_id = upload(stack, owner, PDF)
    status, body = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {"options": options}, user=owner)
    assert (status, body["error"]["code"]) == (400, "OPTIONS_INVALID") and what in body["error"]["message"], body
    assert services().db.one("SELECT count(*) AS n FROM large_conversion_jobs WHERE file_id = CAST(:id AS uuid)", id=file_id)["n"] == 0


def test_a_model_the_deployment_did_not_configure_is_refused_even_if_priced(stack, owner):
    # Given a model with a price (Haiku) that is not among the deployment's models (BATCHLANE_MODEL_IDS)
    settings = services().settings
    priced_elsewhere = next(m for m in settings.batchlane_prices if m not in settings.allowed_model_ids and "haiku" in m)
    file_id = upload(stack, owner, PDF)
    # When a user asks for it, in a dry run or a conversion, Then both refuse it with a clear 400
    for query in ("?dry_run=true", ""):
        status, body = call(stack, "POST", f"/api/v1/files/{file_id}/convert{query}", {"options": {"modelId": priced_elsewhere}}, user=owner)
        assert (status, body["error"]["code"]) == (400, "MODEL_NOT_ALLOWED") and settings.batchlane_model_id in body["error"]["message"], body
    assert services().db.one("SELECT count(*) AS n FROM large_conversion_jobs WHERE file_id = CAST(:id AS uuid)", id=file_id)["n"] == 0
    # And the deployment's own model is accepted
    status, created = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {"options": {"modelId": settings.batchlane_model_id}}, user=owner)
    assert status == 202, created
    wait_for(lambda: job(created["jobId"]).status == "completed", what="the conversion")


def test_job_creation_itself_refuses_a_model_the_deployment_did_not_configure(stack, owner):
    """The roles are granted the configured models only: a job created past the API (job_create invoked directly)
    must not reach a model call that IAM would refuse mid-way."""
    from batchlane.filejob.create import create_job

    settings = services().settings
    priced_elsewhere = next(m for m in settings.batchlane_prices if m not in settings.allowed_model_ids)
    file_id = upload(stack, owner, PDF)
    created = create_job(services(), file_id=file_id, options={"modelId": priced_elsewhere})
    assert (created.status, created.error_id) == ("failed", "MODEL_NOT_ALLOWED"), created
    assert job(created.job_id).status == "failed"


@pytest.mark.parametrize("server", ["BATCHLANE_API_URL", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BEDROCK"])
def test_the_offline_servers_refuse_a_rebound_host_and_allow_no_origin(stack, owner, server):
    # Given a page on another origin that reached the loopback port by DNS rebinding
    url = stack.env[server] if server != "AWS_ENDPOINT_URL" else stack.env[server] + "/" + services().settings.batchlane_bucket
    port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]
    rebound = urllib.request.Request(url, headers={"Host": f"attacker.example:{port}", "Origin": f"http://attacker.example:{port}"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(rebound, timeout=30)
    # Then it is refused before anything answers (was: moto listed the bucket, the API ran the handler)
    assert refused.value.code == 421
    # And a loopback request from a foreign Origin gets no CORS grant (moto reflected any Origin)
    local = urllib.request.Request(url, headers={"Origin": "https://evil.example", "Authorization": f"Bearer local:{owner}"})
    try:
        headers = urllib.request.urlopen(local, timeout=30).headers
    except urllib.error.HTTPError as answered:
        headers = answered.headers
    assert not [k for k in headers.keys() if k.lower().startswith("access-control-")], dict(headers)


def test_unknown_route_is_a_json_404(stack, owner):
    status, body = call(stack, "GET", "/api/v1/nothing-here", user=owner)
    assert (status, body["error"]["code"]) == (404, "ROUTE_NOT_FOUND")


# -- the contract ----------------------------------------------------------------------------
def test_openapi_spec_is_valid_and_every_documented_operation_is_served(stack, owner):
    from openapi_spec_validator import validate

    spec = yaml.safe_load(SPEC.read_text())
    validate(spec)
    operations = [(method.upper(), path) for path, item in spec["paths"].items() for method in item if method in ("get", "post", "put", "delete", "patch")]
    assert (
        len(operations) == 30
    )  # 8 + markdown, pages, retry, retries + the 4 webhook routes (issue 14) + resume, budget, admin budgets (issue 15) + 6 folder-job routes (issue 12) + the folder-job list (issue 24)
    # + the folders a user may use (issue 41)
    # + GET /api/v1/files and the job's source PDF for the console (issue 25) + a dry run's estimate (issue 40)
    for method, path in operations:
        concrete = (
            path.replace("{fileId}", str(uuid.uuid4()))
            .replace("{jobId}", str(uuid.uuid4()))
            .replace("{ownerId}", owner)
            .replace("{folderJobId}", "fj-" + uuid.uuid4().hex[:24])
            .replace("{estimateId}", str(uuid.uuid4()))
        )
        status, body = call(stack, method, concrete, {} if method == "POST" else None, user=owner)
        assert body.get("error", {}).get("code") != "ROUTE_NOT_FOUND", (method, path)
        assert str(status) in spec["paths"][path][method.lower()]["responses"], (method, path, status)


def test_a_deleted_members_pages_leave_a_pooled_lane_once_no_bedrock_job_reads_them(stack, owner):
    """Two owners' documents in one Bedrock job (issue 21, point 6): A's delete removes A's shards, prepare
    summaries and answers once the lane has closed; B's files, and the lane's manifests, stay untouched."""
    alice, bob = owner, f"{owner}-b"
    a_file, a_job = make_job(alice, "completed")  # A left the lane (process now) and finished on-demand
    b_file, b_job = make_job(bob, "waiting_batch")
    svc = services()
    with svc.db.transaction() as tx:
        lane = rows.PgLanes(tx).insert_lane(
            lane_id=str(uuid.uuid4()), model_id=svc.settings.batchlane_model_id, deadline_hours=26, chunks=[(a_job, 0, 3), (b_job, 0, 3)]
        )
        arn = f"arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/{uuid.uuid4().hex[:12]}"
        rows.PgLanes(tx).mark_submitted(lane.lane_id, arn=arn, name="x", output_uri="s3://b/o/", deadline_hours=26)
    tags = {m.job_id: m.member_tag for m in rows.PgLanes(svc.db).members(lane.id)}
    base, bedrock_job = f"{keys.BATCH_PREFIX}{lane.lane_id}/", arn.rsplit("/", 1)[1]

    def lane_files(tag: str) -> set[str]:
        return {f"{base}input/{tag}-chunk-00000-0.jsonl", f"{base}prepare/{tag}-chunk-0.json", f"{base}output/{bedrock_job}/{tag}-chunk-00000-0.jsonl.out"}

    shared = {f"{base}manifest.json", f"{base}output/{bedrock_job}/manifest.json.out"}
    for key in lane_files(tags[a_job]) | lane_files(tags[b_job]) | shared:
        svc.store.put_bytes(key, b'{"page": "text of the page"}', "application/json")

    def present() -> set[str]:
        return set(svc.store.list_keys(base))

    # A deletes while the Bedrock job still runs: nothing of the lane goes (Bedrock reads the shards)
    assert call(stack, "DELETE", f"/api/v1/files/{a_file}", user=alice)[0] == 200
    stack.registry.invoke("batch_sweeper", {})
    assert lane_files(tags[a_job]) <= present()
    # Once the lane has closed, the sweeper removes A's files, and only A's
    with svc.db.transaction() as tx:
        rows.PgLanes(tx).close(lane.lane_id, st.close(), end_state="Completed", accepted=0, fallback=0, cost_usd=Decimal("0"))
    stack.registry.invoke("batch_sweeper", {})
    assert present() == lane_files(tags[b_job]) | shared
    # B deletes after the close: B's go at once, with the delete
    assert call(stack, "DELETE", f"/api/v1/files/{b_file}", user=bob)[0] == 200
    assert present() == shared
