"""The durable record in the user's bucket: ``_batchlane/<job_id>/manifest.json`` and ``report.jsonl``.

Written under the output folder, outside the deployment bucket's expiring prefix. The report
is the same lines ``GET .../report`` streams, in key order; its parts (written as files
finish) let a resubmission resume even when the job ended before this final write.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import batchlane
from batchlane.domain import status as st
from batchlane.domain.errors import NotFound
from batchlane.folders import layout
from batchlane.folders.advance import report_line, write_report_part
from batchlane.folders.notify import publish_folder_change
from batchlane.naming import api_json
from batchlane.observability import logger
from batchlane.ports import EventBus, FolderBuckets, FolderJobRepository, UnitOfWork
from batchlane.rows import FolderJob

# how a live folder job ends, by the status it ends with (domain/status.py)
_END = {"completed": "complete", "completed_with_failures": "complete_with_failures", "cancelled": "end_cancelled"}


def report_lines(folder_jobs: FolderJobRepository, job: FolderJob, *, after: str | None = None, page: int = 1000) -> Iterator[str]:
    for f in folder_jobs.iter_ended_files(job.id, after=after, page=page):
        yield json.dumps(report_line(f, job.output_bucket), sort_keys=True) + "\n"


def manifest(folder_jobs: FolderJobRepository, job: FolderJob) -> dict[str, Any]:
    """manifest.json, camelCase with its amount a decimal string like every JSON the product writes (FolderManifest)."""
    counts = folder_jobs.counts(job.id)
    return api_json(
        {
            "job_id": job.id,
            "name": job.name,
            "status": job.status,
            "spec": redacted_spec(job.spec),  # normalised: every default filled in; no header values (receiver credentials)
            "batchlane_version": batchlane.__version__,
            "enumeration": {"objects_listed": job.objects_listed, "excluded": job.excluded_count, "complete": job.enumeration_done},
            "files": {k: getattr(counts, k) for k in ("discovered", "queued", "processing", "completed", "failed", "skipped")},
            "pages": {"completed": counts.pages_completed, "failed": counts.pages_failed},
            "cost_usd": counts.cost_usd,
            "created_at": _iso(job.created_at),
            "enumerated_at": _iso(job.enumerated_at),
            "finished_at": _iso(job.finished_at),
            "written_at": datetime.now(UTC).isoformat(),
        }
    )


def finish(uow: UnitOfWork, buckets_for: Callable[[str], FolderBuckets], bus: EventBus, job_id: str) -> dict[str, Any]:
    """The job's final status (completed / completed_with_failures unless cancelled or error), report and manifest.

    The record is written BEFORE the job is marked ended (``finished_at``): whoever sees the job
    finished finds its report. A retried Finish writes the record again (same content).
    """
    folder_jobs = uow.folder_jobs
    job = folder_jobs.get(job_id)
    if job is None:
        raise NotFound(f"no folder job {job_id}")
    buckets = buckets_for(job.owner_id)
    write_report_part(folder_jobs, buckets, job)
    if job.finished_at is not None:
        write_record(folder_jobs, buckets, job)
        return {"jobId": job_id, "status": job.status}
    final = job.status
    if job.status in st.LIVE_FOLDER_JOB_STATUSES:
        counts = folder_jobs.counts(job_id)
        failed = counts.failed or counts.pages_failed  # a failed file, or a document completed with failed pages
        final = "completed_with_failures" if failed else "completed"
    write_record(folder_jobs, buckets, dataclasses.replace(job, status=final, finished_at=datetime.now(UTC)))
    moved = folder_jobs.move(job_id, st.folder_job(_END[final]))
    if moved is None:  # cancelled between our read and the move: end it as it is now, and say so in the record
        moved = folder_jobs.move(job_id, st.folder_job("end_cancelled"))  # None: a concurrent Finish ended it
        current = moved or folder_jobs.get(job_id)
        assert current is not None
        write_record(folder_jobs, buckets, current)
    ended = moved or folder_jobs.get(job_id)
    assert ended is not None
    logger.info("folder job finished", job_id=job_id, status=ended.status)
    publish_folder_change(folder_jobs, bus, moved)  # only the run that moved it says so: one event per end
    return {"jobId": job_id, "status": ended.status}


def write_record(folder_jobs: FolderJobRepository, buckets: FolderBuckets, job: FolderJob) -> None:
    lines = (line.encode() for line in report_lines(folder_jobs, job))  # streamed: a million-line report never sits in memory
    owner = job.owner_id
    buckets.put_stream(job.output_bucket, layout.report_key(job.output_prefix, job.id), lines, "application/x-ndjson", owner=owner)
    data = json.dumps(manifest(folder_jobs, job), indent=2, sort_keys=True, default=str).encode()
    buckets.put_bytes(job.output_bucket, layout.manifest_key(job.output_prefix, job.id), data, "application/json", owner=owner)


_ERROR_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.]{0,63}$")


def loop_failure(error: dict[str, Any] | None) -> tuple[str, str]:
    """A clean (error id, message) for the loop's Step Functions error: its name only, never the cause text
    (a traceback, a database user and host), which reaches the API, events, webhooks and manifest.json."""
    name = str((error or {}).get("Error") or "")
    if name == "States.Timeout":
        return "FOLDER_JOB_TIMED_OUT", "The folder job's loop timed out; retry the job to go on where it stopped."
    shown = name if _ERROR_NAME.match(name) else "unknown"
    return "FOLDER_JOB_FAILED", f"The folder job's loop failed after its retries ({shown}); retry the job to go on where it stopped."


def fail(uow: UnitOfWork, buckets_for: Callable[[str], FolderBuckets], bus: EventBus, job_id: str, *, error_id: str, message: str) -> dict[str, Any]:
    """The loop itself broke (after its retries): the job ends ``error`` with why; the record is written if it can be."""
    folder_jobs = uow.folder_jobs
    moved = folder_jobs.move(job_id, st.folder_job("fail"), error_id=error_id, error_message=message[:500])
    job = moved or folder_jobs.get(job_id)
    if job is not None:
        try:
            write_record(folder_jobs, buckets_for(job.owner_id), job)
        except Exception:  # the bucket may be the problem: the database keeps the truth
            logger.exception("folder record not written", job_id=job_id)
    publish_folder_change(folder_jobs, bus, moved)
    return {"jobId": job_id, "status": job.status if job else "error"}


def redacted_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec without the receiver's credentials: callback header values (the notifications' and the
    files' options) become ``"(redacted)"``; the names stay, so the user sees what was sent."""
    out = json.loads(json.dumps(spec, default=str))
    for holder, field in ((out.get("notifications"), "callback_headers"), (out.get("options"), "callbackHeaders")):
        if isinstance(holder, dict) and isinstance(holder.get(field), dict):
            holder[field] = {name: "(redacted)" for name in holder[field]}
    return out


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None
