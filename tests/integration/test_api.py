"""The owner-only API over HTTP (the offline API server → the real api handler), real PostgreSQL.

Jobs are set up directly in each state the issue's table names (lane off, schedules
off: nothing moves them but the request under test), then cancel / process now are
called through the API and the outcome is read back from the database. The races
through the real state machines are in tests/e2e/test_cancel_process_now.py.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from batchlane import keys
from batchlane.batch import rows
from batchlane.batch.resume import resume_stranded
from batchlane.conversion.source import store_chunk_sources
from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.local.jobs import wait_until as wait_for
from batchlane.local.pdfgen import make_pdf
from batchlane.pdf.split import open_pdf, plan_chunks
from batchlane.runtime import services
from tests.conftest import start_stack

SPEC = Path(__file__).resolve().parents[2] / "docs" / "api" / "openapi.yaml"
PAGES, PER_CHUNK = 6, 3
PDF = make_pdf(PAGES)


@pytest.fixture(scope="module")
def stack(migrated_url):  # type: ignore[no-untyped-def]
    stack = start_stack(migrated_url, faults="time_scale=36000", batch_lane=False, schedules=False)
    yield stack
    stack.stop()
    assert not stack.grants.denials, stack.grants.denials  # every handler call was granted (batchlane.local.iam)


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


def make_job(owner: str, status: str, *, row_state: str | None = None, completed_chunks: int = 0) -> tuple[str, str]:
    """A file and a job in ``status`` (batch row in ``row_state``), as the workflows would leave them."""
    svc = services()
    with svc.db.transaction() as tx:
        file_row = job_repo.insert_file(tx, owner_id=owner, name="doc.pdf", s3_key="", size_bytes=len(PDF))
        file_id = str(file_row["id"])
        key = keys.upload_key(file_id, "doc.pdf")
        tx.run("UPDATE files SET s3_key = :key WHERE id = CAST(:id AS uuid)", key=key, id=file_id)
        job = job_repo.insert_job(
            tx,
            file_id=file_id,
            owner_id=owner,
            status=status,
            options={"highFidelity": True, "parser": "auto"},
            model_id=svc.settings.batchlane_model_id,
            total_pages=PAGES,
            pages_per_chunk=PER_CHUNK,
            chunks=plan_chunks(PAGES, PER_CHUNK),
        )
        job_id = str(job["id"])
        ledger.place_hold(tx, job_id=job_id, owner_id=owner, amount_usd=Decimal("0.12"), hours=6)
        job_repo.set_file_status(tx, file_id, "converting")
        for index in range(completed_chunks):
            tx.run("UPDATE chunk_jobs SET status = 'completed' WHERE job_id = CAST(:id AS uuid) AND chunk_index = :i", id=job_id, i=index)
        if row_state == "preparing":
            rows.insert_preparing(tx, job_id=job_id, model_id=job["model_id"], deadline_hours=26)
        elif row_state == "submitted":
            rows.insert_preparing(tx, job_id=job_id, model_id=job["model_id"], deadline_hours=26)
            arn = f"arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/{uuid.uuid4().hex[:12]}"
            rows.mark_submitted(tx, job_id, arn=arn, name="x", output_uri="s3://b/o/", deadline_hours=26)
        elif row_state == "closed":
            tx.run(
                """INSERT INTO conversion_batch_jobs (job_id, state, model_id, end_state, accepted_count, fallback_count, cost_usd, closed_at)
                   VALUES (CAST(:id AS uuid), 'closed', :model, 'Completed', 4, 2, 0.0123, now() - interval '1 hour')""",
                id=job_id,
                model=job["model_id"],
            )
    svc.store.put_bytes(key, PDF, "application/pdf")
    store_chunk_sources(svc.store, job_id, open_pdf(PDF, max_pages=PAGES), plan_chunks(PAGES, PER_CHUNK))  # as create_job does
    return file_id, job_id


def job(job_id: str) -> dict[str, Any]:
    found = job_repo.get_job(services().db, job_id)
    assert found is not None
    return found


# -- identity and ownership ---------------------------------------------------------------
def test_without_a_token_the_api_answers_401(stack):
    status, body = call(stack, "GET", "/api/files", user=None)
    assert (status, body["code"]) == (401, "UNAUTHORIZED")


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
    assert status == 404 and answer["code"] in ("FILE_NOT_FOUND", "JOB_NOT_FOUND")
    # the same answer as for an id that does not exist at all
    missing_status, missing = call(stack, method, path.format(file=uuid.uuid4(), job=uuid.uuid4()), body, user=owner)
    assert (missing_status, missing["code"]) == (status, answer["code"])
    assert job(job_id)["status"] == "waiting_batch"
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
    assert call(stack, "GET", "/api/files?status=bogus", user=owner)[1]["code"] == "BAD_REQUEST"


def test_conversion_progress_shows_chunks_phase_and_batch_row(stack, owner):
    file_id, job_id = make_job(owner, "waiting_batch", row_state="submitted", completed_chunks=1)
    status, body = call(stack, "GET", f"/api/v1/files/{file_id}/conversion", user=owner)
    assert status == 200
    assert body["jobId"] == job_id and body["phase"] == "batch_running" and body["batchWaiting"] is True
    assert body["chunks"] == {"total": 2, "done": 1, "cancelled": 0}
    assert body["pages"]["done"] == PER_CHUNK and body["pages"]["total"] == PAGES
    assert body["batch"]["state"] == "submitted"
    assert call(stack, "GET", f"/api/v1/jobs/{job_id}", user=owner)[1] == body


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
def test_cancel_stops_the_job_charges_nothing_and_resets_the_file(stack, owner, status, row_state):
    file_id, job_id = make_job(owner, status, row_state=row_state, completed_chunks=1)
    code, body = call(stack, "POST", f"/api/v1/files/{file_id}/cancel", {"jobId": job_id}, user=owner)
    assert code == 200, body
    assert body["previousStatus"] == status and body["holdReleased"] is True
    db = services().db
    assert job(job_id)["status"] == "cancelled"
    assert [c["status"] for c in job_repo.get_chunks(db, job_id)] == ["completed", "cancelled"]
    hold = ledger.get_hold(db, job_id)
    assert hold["outcome"] == "cancelled" and not hold["settled_usd"]
    assert job_repo.get_file(db, file_id)["status"] == "uploaded"
    row = rows.get_row(db, job_id)
    if row_state in ("preparing", "submitted"):
        assert row["reason"] == "cancelled" and row["state"] == row_state  # the lane closes it (and bills a submitted job) itself
    # cancelled is terminal: recovery does not resume it, a second cancel changes nothing
    resume_stranded(services(), older_than_s=0)
    assert job(job_id)["status"] == "cancelled"
    again = call(stack, "POST", f"/api/v1/files/{file_id}/cancel", {}, user=owner)
    assert again[0] == 200 and again[1]["alreadyCancelled"] is True


@pytest.mark.parametrize(("status", "code"), [("assembling", "CONVERSION_FINISHING"), ("completed", "NOT_CANCELLABLE"), ("failed", "NOT_CANCELLABLE")])
def test_cancel_of_a_finishing_or_finished_job_is_409(stack, owner, status, code):
    file_id, job_id = make_job(owner, status)
    answer = call(stack, "POST", f"/api/v1/files/{file_id}/cancel", {}, user=owner)
    assert answer[0] == 409 and answer[1]["code"] == code
    assert job(job_id)["status"] == status
    assert ledger.get_hold(services().db, job_id)["outcome"] is None


def test_cancel_guarded_on_the_job_id_the_caller_saw(stack, owner):
    file_id, job_id = make_job(owner, "pending")
    answer = call(stack, "POST", f"/api/v1/files/{file_id}/cancel", {"jobId": str(uuid.uuid4())}, user=owner)
    assert answer[0] == 409 and answer[1]["code"] == "JOB_NOT_CURRENT"
    assert job(job_id)["status"] == "pending"


# -- process now ------------------------------------------------------------------------------
@pytest.mark.parametrize("status", ["pending", "processing", "paused_budget", "assembling", "completed", "failed", "cancelled"])
def test_process_now_only_from_waiting_batch(stack, owner, status):
    file_id, job_id = make_job(owner, status)
    answer = call(stack, "POST", f"/api/v1/files/{file_id}/process-now", {}, user=owner)
    assert answer[0] == 409 and answer[1]["code"] == "NOT_BATCH_WAITING"
    assert job(job_id)["status"] == status


@pytest.mark.parametrize("row_state", [None, "preparing", "submitted"])
def test_process_now_leaves_the_lane_and_converts_on_demand(stack, owner, row_state):
    file_id, job_id = make_job(owner, "waiting_batch", row_state=row_state)
    services().db.run("UPDATE funds_holds SET expires_at = now() + interval '40 hours' WHERE job_id = CAST(:id AS uuid)", id=job_id)
    code, body = call(stack, "POST", f"/api/v1/files/{file_id}/process-now", {"jobId": job_id}, user=owner)
    assert code == 200, body
    assert body["resumed"] is True and body["batchRowState"] == row_state
    row = rows.get_row(services().db, job_id)
    assert row["reason"] == "process_now"
    if row_state is None:  # the claimer will never take it: it has a closed row now
        assert (row["state"], row["end_state"]) == ("closed", "skipped")
    else:
        assert row["state"] == row_state  # the lane stops / leaves and closes it itself
    hold = ledger.get_hold(services().db, job_id)
    assert hold["expires_at"].timestamp() < time.time() + 7 * 3600, "hold back to the on-demand window"
    finished = wait_for(lambda: job(job_id)["status"] in ("completed", "failed") and job(job_id), what="the on-demand conversion")
    assert finished["status"] == "completed" and finished["pages_failed"] == 0
    assert finished["pages_converted"] == PAGES and finished["pages_batch"] == 0
    assert "_batchPrimed" not in finished["options"]


def test_process_now_between_close_and_resume_leaves_it_to_recovery_with_the_primed_results(stack, owner):
    file_id, job_id = make_job(owner, "waiting_batch", row_state="closed")
    code, body = call(stack, "POST", f"/api/v1/files/{file_id}/process-now", {}, user=owner)
    assert code == 200 and body["resumed"] is False and body["action"] == "left_to_recovery"
    assert job(job_id)["status"] == "waiting_batch"
    assert job_id in resume_stranded(services())["resumed"]
    resumed = job(job_id)
    assert resumed["options"]["_batchPrimed"] is True and Decimal(resumed["options"]["_batchCostUsd"]) == Decimal("0.0123")
    wait_for(lambda: job(job_id)["status"] == "completed", what="the primed conversion")


# -- uploads, convert, delete ----------------------------------------------------------------
def test_register_upload_convert_and_conflicts(stack, owner):
    status, registered = call(stack, "POST", "/api/v1/files", {"name": "book.pdf", "sizeBytes": len(PDF)}, user=owner)
    assert status == 201 and registered["upload"]["method"] == "PUT"
    file_id = registered["fileId"]
    early = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)
    assert early[0] == 409 and early[1]["code"] == "UPLOAD_MISSING"
    put = urllib.request.Request(registered["upload"]["url"], data=PDF, method="PUT", headers={"Content-Type": "application/pdf"})
    assert urllib.request.urlopen(put, timeout=30).status == 200
    status, created = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {"options": {}}, user=owner)
    assert status == 202 and created["totalPages"] == PAGES
    twice = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)
    assert twice[0] == 409 and twice[1]["code"] == "CONVERSION_IN_PROGRESS"
    wait_for(lambda: job(created["jobId"])["status"] == "completed", what="conversion")
    assert call(stack, "POST", "/api/v1/files", {"name": ""}, user=owner)[1]["code"] == "BAD_REQUEST"
    assert call(stack, "POST", f"/api/v1/files/{file_id}/convert", {"options": {"nope": 1}}, user=owner)[1]["code"] in ("OPTIONS_INVALID", "BAD_REQUEST")


def test_a_pdf_that_cannot_be_read_is_422_with_its_error_code(stack, owner):
    status, registered = call(stack, "POST", "/api/v1/files", {"name": "broken.pdf", "sizeBytes": 10}, user=owner)
    services().store.put_bytes(services().db.one("SELECT s3_key FROM files WHERE id = CAST(:id AS uuid)", id=registered["fileId"])["s3_key"], b"not a pdf!")
    status, body = call(stack, "POST", f"/api/v1/files/{registered['fileId']}/convert", {}, user=owner)
    assert status == 422 and body["code"].startswith("PDF_") and body["jobId"]


def test_delete_cancels_a_live_job_first_then_hides_the_file(stack, owner):
    file_id, job_id = make_job(owner, "waiting_batch", row_state="submitted")
    status, body = call(stack, "DELETE", f"/api/v1/files/{file_id}", user=owner)
    assert status == 200 and body["cancelledJobId"] == job_id
    assert job(job_id)["status"] == "cancelled"
    assert ledger.get_hold(services().db, job_id)["outcome"] == "cancelled"
    assert rows.get_row(services().db, job_id) is not None, "the batch row (and what it bills) outlives the file"
    assert call(stack, "GET", f"/api/v1/files/{file_id}/conversion", user=owner)[0] == 404
    assert call(stack, "GET", "/api/files", user=owner)[1]["files"] == []
    finishing, finishing_job = make_job(owner, "assembling")
    answer = call(stack, "DELETE", f"/api/v1/files/{finishing}", user=owner)
    assert answer[0] == 409 and answer[1]["code"] == "CONVERSION_FINISHING"
    assert job(finishing_job)["status"] == "assembling"


def test_unknown_route_is_a_json_404(stack, owner):
    status, body = call(stack, "GET", "/api/v1/nothing-here", user=owner)
    assert (status, body["code"]) == (404, "ROUTE_NOT_FOUND")


# -- the contract ----------------------------------------------------------------------------
def test_openapi_spec_is_valid_and_every_documented_operation_is_served(stack, owner):
    from openapi_spec_validator import validate

    spec = yaml.safe_load(SPEC.read_text())
    validate(spec)
    operations = [(method.upper(), path) for path, item in spec["paths"].items() for method in item if method in ("get", "post", "put", "delete", "patch")]
    assert len(operations) == 8
    for method, path in operations:
        concrete = path.replace("{fileId}", str(uuid.uuid4())).replace("{jobId}", str(uuid.uuid4()))
        status, body = call(stack, method, concrete, {} if method == "POST" else None, user=owner)
        assert body.get("code") != "ROUTE_NOT_FOUND", (method, path)
        assert str(status) in spec["paths"][path][method.lower()]["responses"], (method, path, status)
