"""Submitting a PDF and following its job on the offline stack (used by the demo and the CLI)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from batchlane import keys
from batchlane.aws.clients import client
from batchlane.db import jobs as job_repo
from batchlane.runtime import RuntimeServices

TERMINAL = ("completed", "failed", "cancelled")


def upload_pdf(svc: RuntimeServices, data: bytes, *, name: str, owner_id: str) -> str:
    """Register the file and put its PDF where an upload lands; answers the file id (nothing converts yet)."""
    with svc.db.transaction() as tx:
        file_row = job_repo.PgJobs(tx).insert_file(owner_id=owner_id, name=name, s3_key="", size_bytes=len(data))
        file_id = str(file_row.id)
        key = keys.upload_key(file_id, name)
        tx.run("UPDATE files SET s3_key = :key WHERE id = CAST(:id AS uuid)", key=key, id=file_id)
    svc.store.put_bytes(key, data, "application/pdf")
    return file_id


def submit_pdf(
    svc: RuntimeServices, data: bytes, *, name: str, owner_id: str, options: dict[str, Any] | None = None, wait_split: bool = True
) -> dict[str, Any]:
    """Upload, register the file, and create its job through the job_create Lambda.

    Creation is asynchronous (the job starts ``splitting``); with ``wait_split`` this waits
    for the intake's split and answers the job as it left it (pages, chunks, lane or error).
    """
    file_id = upload_pdf(svc, data, name=name, owner_id=owner_id)
    response = client("lambda").invoke(FunctionName="batchlane-job_create", Payload=json.dumps({"fileId": file_id, "options": options or {}}))
    payload = json.loads(response["Payload"].read())
    if response.get("FunctionError"):
        raise RuntimeError(f"job_create failed: {payload.get('errorType')}: {payload.get('errorMessage')}")
    if not wait_split or payload["status"] != "splitting":
        return dict(payload)
    job: job_repo.JobRow = wait_until(
        lambda: (row := job_repo.PgJobs(svc.db).get_job(payload["jobId"])) and row.status != "splitting" and row, timeout_s=600, what="the split"
    )
    lane = None if job.status in TERMINAL else ("batch" if job.status == "waiting_batch" else "on_demand")
    return {
        **payload,
        "status": job.status,
        "totalPages": job.total_pages,
        "chunkCount": job.chunk_count,
        "errorId": job.error_id,
        "errorMessage": job.error_message,
        "laneDecision": lane,
    }


@dataclass
class Progress:
    status: str
    pages_total: int
    pages_done: int
    chunks_total: int
    chunks_done: int
    batch_state: str | None
    batch_status: str | None


def progress(svc: RuntimeServices, job_id: str) -> Progress:
    job = job_repo.PgJobs(svc.db).get_job(job_id)
    assert job is not None
    chunks = job_repo.PgJobs(svc.db).get_chunks(job_id)
    batch = svc.db.one(
        """SELECT l.state, l.bedrock_status FROM batch_members m JOIN lanes l ON l.id = m.lane_row_id
           WHERE m.job_id = CAST(:id AS uuid) ORDER BY (l.state = 'closed'), l.id DESC LIMIT 1""",
        id=job_id,
    )
    done_pages = sum((c.last_page - c.first_page + 1) if c.status == "completed" else c.pages_done for c in chunks)
    return Progress(
        status=job.status,
        pages_total=job.total_pages,
        pages_done=done_pages,
        chunks_total=len(chunks),
        chunks_done=sum(1 for c in chunks if c.status == "completed"),
        batch_state=batch["state"] if batch else None,
        batch_status=batch["bedrock_status"] if batch else None,
    )


def wait_until(predicate: Callable[[], Any], *, timeout_s: float = 60, what: str = "condition", poll_s: float = 0.1) -> Any:
    """Poll ``predicate`` until it returns something truthy (returned); AssertionError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll_s)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def wait_for_job(
    svc: RuntimeServices,
    job_id: str,
    *,
    timeout_s: float = 3600,
    on_progress: Callable[[Progress], None] | None = None,
    poll_s: float = 0.25,
    until: tuple[str, ...] = TERMINAL,
) -> Progress:
    """Poll until the job reaches one of ``until`` (the demo adds ``paused_budget``: it waits for its owner)."""
    deadline = time.monotonic() + timeout_s
    while True:
        current = progress(svc, job_id)
        if on_progress:
            on_progress(current)
        if current.status in until:
            return current
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id} still {current.status} after {timeout_s:.0f} s")
        time.sleep(poll_s)
