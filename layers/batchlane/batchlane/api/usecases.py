"""The API's use cases. Each takes the caller's id and answers only about the caller's files.

A file that does not exist, was deleted, or belongs to someone else is the same
``NotFound`` (404 FILE_NOT_FOUND): the API never confirms that another user's id exists.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from batchlane import keys
from batchlane.api import views
from batchlane.batch.process_now import process_now
from batchlane.batch.purge import purge_members
from batchlane.domain.caps import check_cap
from batchlane.domain.eligibility import lane_opt_outs
from batchlane.domain.errors import BatchlaneError, Conflict, Forbidden, InputError, NotFound
from batchlane.domain.file_types import content_type_for
from batchlane.domain.folder_policy import deadline_opt_outs, parse_deadline
from batchlane.domain.status import IN_FLIGHT_LANE_STATES, LIVE_JOB_STATUSES, JobStatus
from batchlane.filejob import budget
from batchlane.filejob.create import create_job
from batchlane.observability import logger
from batchlane.operations import cancel_job
from batchlane.ports import UPLOAD_URL_TTL_S, Services, UniqueViolation, Uploads
from batchlane.rows import FileRow, JobProgress

LIVE = LIVE_JOB_STATUSES
# Batch-row states in which Bedrock may still read (or prepare still write) batch/<jobId>/.
IN_FLIGHT_BATCH_STATES = IN_FLIGHT_LANE_STATES


class ConversionRejected(BatchlaneError):
    """Refused before splitting (upload over the size limit, unpriced model): the job is recorded as
    failed (HTTP 422). A PDF that cannot be read is found later by the split (the job ends failed)."""

    def __init__(self, message: str, *, error_id: str, job_id: str) -> None:
        super().__init__(message, error_id=error_id)
        self.job_id = job_id


def _uuid(value: str) -> str | None:
    try:
        return str(uuid.UUID(value))
    except (ValueError, TypeError, AttributeError):
        return None


def owned_file(svc: Services, owner_id: str, file_id: str) -> FileRow:
    """The caller's file, unless deleted."""
    fid = _uuid(file_id)
    row = svc.uow().jobs.get_file(fid) if fid else None
    if row is None or row.owner_id != owner_id or row.deleted_at is not None:
        raise NotFound(f"No file {file_id}.", error_id="FILE_NOT_FOUND")
    return row


def _current_job(svc: Services, file_id: str, expected_job_id: str | None) -> JobProgress:
    job = svc.uow().reads.current_job(file_id)
    if job is None:
        raise NotFound("The file has never been converted.", error_id="CONVERSION_NOT_FOUND")
    if expected_job_id and job.job_id != _uuid(expected_job_id):
        raise Conflict(f"Job {expected_job_id} is not the file's current conversion ({job.job_id}).", error_id="JOB_NOT_CURRENT")
    return job


# -- reads -------------------------------------------------------------------------------
def list_files(svc: Services, owner_id: str, *, job_status: str | None = None, limit: int = 100) -> dict[str, Any]:
    """The owner's files, newest first, each with its live (else newest) conversion."""
    return {"files": [views.file_view(f) for f in svc.uow().reads.owner_files(owner_id, job_status=job_status, limit=limit)]}


def file_conversion(svc: Services, owner_id: str, file_id: str) -> dict[str, Any]:
    return views.conversion_view(_current_job(svc, owned_file(svc, owner_id, file_id).id, None))


def job_conversion(svc: Services, owner_id: str, job_id: str) -> dict[str, Any]:
    job, _ = owned_job(svc, owner_id, job_id)
    return views.conversion_view(job)


def owned_job(svc: Services, owner_id: str, job_id: str) -> tuple[JobProgress, FileRow]:
    """The caller's job and its file, unless the file was deleted (a deleted file's jobs are gone too)."""
    jid = _uuid(job_id)
    job = svc.uow().reads.job(jid) if jid else None
    if job is None or job.owner_id != owner_id:
        raise NotFound(f"No job {job_id}.", error_id="JOB_NOT_FOUND")
    return job, owned_file(svc, owner_id, job.file_id)


# -- writes ------------------------------------------------------------------------------
def register_upload(svc: Services, uploads: Uploads, owner_id: str, *, name: str, size_bytes: int) -> dict[str, Any]:
    limit = svc.settings.batchlane_max_file_mb
    if size_bytes > limit * 1024 * 1024:
        raise InputError(f"The file is {size_bytes // (1024 * 1024)} MB; the limit is {limit} MB.", error_id="PDF_TOO_LARGE")
    file_id = str(uuid.uuid4())
    key = keys.upload_key(file_id, name)
    with svc.uow() as uow:
        uow.budgets.lock_owner(owner_id)  # two registrations at once are counted one after the other
        check_cap(
            what="files registered and not converted",
            count=uow.caps.pending_uploads(owner_id),
            limit=svc.settings.batchlane_max_pending_uploads,
            setting="BATCHLANE_MAX_PENDING_UPLOADS",
            error_id="UPLOADS_LIMIT",
            wait="Convert or delete some first",
        )
        uow.jobs.insert_file(owner_id=owner_id, name=name, s3_key=key, size_bytes=size_bytes, file_id=file_id)
    logger.info("upload registered", file_id=file_id, size_bytes=size_bytes)
    post = uploads.presigned_post(key, max_bytes=size_bytes, content_type=content_type_for(name))
    upload = {"method": "POST", "url": post["url"], "fields": post["fields"], "maxBytes": size_bytes, "expiresInSeconds": UPLOAD_URL_TTL_S}
    return {"fileId": file_id, "name": name, "upload": upload}


def _short_deadline(svc: Services, options: dict[str, Any]) -> list[str]:
    """``["deadline"]`` when options.deadline is sooner than the batch lane's turnaround (it would go on-demand)."""
    settings = svc.settings
    deadline = parse_deadline(options.get("deadline"))
    return deadline_opt_outs({"deadline": deadline}, datetime.now(UTC), settings.batch_deadline_hours, settings.batch_deadline_margin_s / 3600)


def convert_file(svc: Services, owner_id: str, file_id: str, *, options: dict[str, Any] | None, priority_group: str | None = None) -> dict[str, Any]:
    """``priority_group``: the group the caller lacks; options that keep the job out of the batch lane then answer 403."""
    file_row = owned_file(svc, owner_id, file_id)
    if priority_group and (opt_outs := lane_opt_outs(options or {}) + _short_deadline(svc, options or {})):
        raise Forbidden(
            f"The option(s) {', '.join(opt_outs)} keep the conversion out of the half-price batch lane; that needs membership of the {priority_group} group"
            + (f" (a deadline must leave the batch lane's {svc.settings.batch_deadline_hours:g} h turnaround)." if "deadline" in opt_outs else ".")
        )
    live = svc.uow().jobs.live_job_of_file(file_row.id)
    if live:
        raise Conflict(f"The file is already being converted (job {live}).", error_id="CONVERSION_IN_PROGRESS")
    try:
        uploaded = svc.store.size(file_row.s3_key)
    except NotFound:
        raise Conflict("The file has not been uploaded yet: POST it to the upload URL first.", error_id="UPLOAD_MISSING") from None
    if uploaded > file_row.size_bytes:  # the POST policy bounds it on AWS; checked here whatever stored it
        raise Conflict(
            f"The upload is {uploaded} bytes, more than the {file_row.size_bytes} declared: register the file again.", error_id="UPLOAD_SIZE_MISMATCH"
        )
    try:
        created = create_job(svc, file_id=file_row.id, options=options)
    except UniqueViolation as exc:  # one_live_job_per_file: a concurrent convert won
        if exc.constraint == "one_live_job_per_file":
            raise Conflict("The file is already being converted.", error_id="CONVERSION_IN_PROGRESS") from exc
        raise
    if created.status == "failed":
        raise ConversionRejected(created.error_message or "The PDF cannot be converted.", error_id=created.error_id or "INPUT_INVALID", job_id=created.job_id)
    return created.to_json()


def cancel_file(svc: Services, owner_id: str, file_id: str, *, job_id: str | None = None) -> dict[str, Any]:
    job = _current_job(svc, owned_file(svc, owner_id, file_id).id, job_id)
    if job.status in (JobStatus.COMPLETED, JobStatus.FAILED):
        raise Conflict(f"The conversion is {job.status}; there is nothing to cancel.", error_id="NOT_CANCELLABLE")
    return cancel_job(svc, job.job_id).to_json()


def process_now_file(svc: Services, owner_id: str, file_id: str, *, job_id: str | None = None, priority_group: str | None = None) -> dict[str, Any]:
    """``priority_group``: the group the caller lacks (403 after the ownership check, so a 403 never confirms another user's file)."""
    owned = owned_file(svc, owner_id, file_id)
    if priority_group:
        raise Forbidden(f"Converting on-demand now (skipping the half-price batch lane) needs membership of the {priority_group} group.")
    job = _current_job(svc, owned.id, job_id)
    return process_now(svc, job.job_id).to_json()


def resume_job(svc: Services, owner_id: str, job_id: str) -> dict[str, Any]:
    """The owner resumes a job paused at its funds hold (402 BUDGET_EXCEEDED while the budget does not allow)."""
    jid = _uuid(job_id)
    if jid is None:
        raise NotFound(f"No job {job_id}.", error_id="JOB_NOT_FOUND")
    return budget.resume_job(svc, owner_id, jid)


def owner_budget(svc: Services, owner_id: str) -> dict[str, Any]:
    budgets = svc.uow().budgets
    limits = budgets.limits_for(owner_id, svc.settings)
    standing = budgets.standing(owner_id)
    six = Decimal("0.000001")
    committed = standing.committed_usd.quantize(six)
    spent = standing.spent_usd.quantize(six)
    return {
        "usdPerMonth": str(limits.usd_per_month),
        "committedUsd": str(committed),
        "spentUsd": str(spent),  # this month (UTC), booked in the ledger
        "heldUsd": str(committed - spent),  # what open holds may still spend
        "leftUsd": str(max(limits.usd_per_month - committed, Decimal(0)).quantize(six)),
        "maxLiveJobs": limits.max_live_jobs,
        "liveJobs": standing.live_jobs,
        "maxLivePages": limits.max_live_pages,
        "livePages": standing.live_pages,
    }


def set_owner_budget(
    svc: Services, admin_id: str, owner_id: str, *, usd_per_month: Decimal | None, max_live_jobs: int | None, max_live_pages: int | None
) -> dict[str, Any]:
    if not owner_id or len(owner_id) > 128:
        raise InputError("ownerId must be 1–128 characters.", error_id="BAD_REQUEST")
    svc.uow().budgets.set_override(owner_id, usd_per_month=usd_per_month, max_live_jobs=max_live_jobs, max_live_pages=max_live_pages, updated_by=admin_id)
    logger.info(
        "budget override set", owner_id=owner_id, admin=admin_id, usd_per_month=str(usd_per_month), max_live_jobs=max_live_jobs, max_live_pages=max_live_pages
    )
    return {"ownerId": owner_id, **owner_budget(svc, owner_id)}


def delete_file(svc: Services, owner_id: str, file_id: str) -> dict[str, Any]:
    """Cancel a live conversion first (409 CONVERSION_FINISHING while assembling), delete what the file
    left in the bucket, then hide the file. A refused delete raises: the file stays listed, to retry."""
    fid = owned_file(svc, owner_id, file_id).id
    cancelled = None
    uow = svc.uow()
    job = uow.reads.current_job(fid)
    if job is not None and job.status in LIVE:
        cancelled = cancel_job(svc, job.job_id).job_id
    doomed, kept = stored_objects(svc, fid)
    svc.store.delete_keys(doomed)
    lanes = uow.lanes.members_to_purge(job_ids=[j.job_id for j in uow.reads.jobs_of_file(fid)])
    purge_members(svc, lanes)  # its pages in pooled lanes already closed; an open lane's: the sweeper, once it closes
    uow.jobs.mark_file_deleted(fid)
    logger.info("file deleted", file_id=file_id, cancelled_job=cancelled, objects_deleted=len(doomed), batch_prefixes_kept=kept)
    return {"fileId": file_id, "deleted": True, "cancelledJobId": cancelled}


def stored_objects(svc: Services, file_id: str) -> tuple[list[str], list[str]]:
    """Every object a file left (its upload; each job's chunk sources, results and Markdown; its batch files),
    and the batch prefixes kept because a Bedrock job may still read them (they expire with the bucket's lifecycle)."""
    uow = svc.uow()
    file_row = uow.jobs.get_file(file_id)
    jobs = uow.reads.jobs_of_file(file_id)
    # A folder job's file is the user's own object in their bucket (source_bucket): never deleted.
    doomed = [file_row.s3_key] if file_row is not None and file_row.s3_key and not file_row.source_bucket else []
    kept: list[str] = []
    for job in jobs:
        job_id = job.job_id
        doomed += svc.store.list_keys(f"jobs/{job_id}/")
        if job.open_lane_state in IN_FLIGHT_BATCH_STATES:
            kept.append(f"{keys.BATCH_PREFIX}{job_id}/")
        else:
            doomed += svc.store.list_keys(f"{keys.BATCH_PREFIX}{job_id}/")
    return doomed, kept
