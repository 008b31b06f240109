"""Job creation in two steps: open the job at once, split it in its own function.

:func:`create_job` runs behind the API (29 s): cheap checks only (options, model, the
upload's size), then the job is recorded ``splitting`` and its intake workflow started.
:func:`split_job` runs in the intake workflow's split function: it streams the upload to
local disk, validates and splits it, writes the chunk rows and parks or starts the job.
Bad input never raises past either: the job ends failed with a stable error id and a
one-line message, and nothing else is touched (no hold, no execution).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from batchlane.conversion import budget
from batchlane.conversion.settle import fail_job
from batchlane.conversion.source import store_chunk_sources
from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.domain import status as st
from batchlane.domain.eligibility import batch_eligible
from batchlane.domain.errors import BudgetExceeded, InputError, LimitReached, NotFound
from batchlane.domain.folder_policy import DEADLINE, check_deadline, deadline_lane, parse_deadline
from batchlane.domain.status import JobStatus
from batchlane.observability import logger
from batchlane.pdf.split import open_pdf_file
from batchlane.runtime import Services
from batchlane.topology import JOB_PARKED_DETAIL_TYPE
from batchlane.webhooks import subscription
from batchlane.webhooks.events import publish_job_change

# Longer than the intake can run (4 attempts of job_split's 900 s, plus backoff, plus FailJob):
# a job splitting longer lost its intake (an execution that never ran or whose FailJob failed).
SPLIT_STALLED_AFTER_S = 2 * 3600


@dataclass(frozen=True)
class CreatedJob:
    job_id: str
    file_id: str
    status: str
    total_pages: int
    chunk_count: int
    error_id: str | None = None
    error_message: str | None = None
    lane_decision: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "jobId": self.job_id,
            "fileId": self.file_id,
            "status": self.status,
            "totalPages": self.total_pages,
            "chunkCount": self.chunk_count,
            "errorId": self.error_id,
            "errorMessage": self.error_message,
            "laneDecision": self.lane_decision,
        }


ASSEMBLY_MODES = ("document", "none")  # none: the page-by-page Markdown (docs/architecture.md "Assembly")


def normalise_options(options: dict[str, Any] | None) -> dict[str, Any]:
    """Jobs are hi-fi with parser auto unless the caller says otherwise; unknown keys are rejected.
    ``_batchLane`` (the bulk opt-in's first spelling) is kept as ``batchLane``: options hold no underscore key."""
    allowed = {"highFidelity", "parser", "mathpix", "modelId", "batchLane", "deadline", "assembly", *subscription.OPTION_KEYS}
    options = dict(options or {})
    if "_batchLane" in options:
        options["batchLane"] = options.pop("_batchLane")
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise InputError(f"Unknown option(s): {', '.join(unknown)}.", error_id="OPTIONS_INVALID")
    options.setdefault("highFidelity", True)
    options.setdefault("parser", "auto")
    if options.get("assembly", "document") not in ASSEMBLY_MODES:
        raise InputError("options.assembly is document (one document, the default) or none (page by page).", error_id="OPTIONS_INVALID")
    if "deadline" in options:
        deadline = parse_deadline(options.pop("deadline"))
        if deadline is not None:
            check_deadline(deadline, datetime.now(UTC), field="options.deadline")
            options["deadline"] = deadline.isoformat()
    return options


def source_store(svc: Services, file_row: job_repo.FileRow) -> Any:
    """Where the file's PDF lies: the deployment's bucket (an upload) or a folder job's source bucket, read as the file's owner."""
    bucket = file_row.source_bucket
    return svc.folder_source(bucket, file_row.owner_id) if bucket and bucket != svc.store.bucket else svc.store


def create_job(svc: Services, *, file_id: str, options: dict[str, Any] | None = None, max_pages: int | None = None, on_demand: bool = False) -> CreatedJob:
    """Record the job ``splitting`` and start its intake workflow: answers in well under a second.

    Unknown options raise InputError (nothing recorded); an unpriced model or an upload over
    the size limit is recorded as a failed job at once, as a bad PDF is later by the split.
    ``max_pages`` and ``on_demand`` are a folder job's policy (page limit, priority high).
    """
    settings = svc.settings
    file_row = job_repo.get_file(svc.db, file_id)
    if file_row is None:
        raise NotFound(f"no file {file_id}")
    options = subscription.validate_options(normalise_options(options), allow_private=settings.batchlane_webhook_allow_private)
    model_id = str(options.get("modelId") or settings.batchlane_model_id)
    try:
        if model_id not in settings.batchlane_prices:
            raise InputError(f"Model {model_id} has no price configured.", error_id="MODEL_UNKNOWN")
        if model_id not in settings.allowed_model_ids:  # the roles are granted these models only (BATCHLANE_MODEL_IDS)
            raise InputError(f"Model {model_id} is not enabled in this deployment.", error_id="MODEL_NOT_ALLOWED")
        size = source_store(svc, file_row).size(file_row.s3_key)
        if size > settings.batchlane_max_file_mb * 1024 * 1024:
            raise InputError(f"The file is {size // (1024 * 1024)} MB; the limit is {settings.batchlane_max_file_mb} MB.", error_id="PDF_TOO_LARGE")
    except InputError as exc:
        job = _insert_job(
            svc.db,
            file_row,
            JobStatus.FAILED,
            options,
            model_id,
            settings.batchlane_pages_per_chunk,
            error_id=exc.error_id,
            error_message=str(exc),
            process_now=on_demand,
            max_pages=max_pages or None,
        )
        job_repo.move_file(svc.db, file_id, st.reject())
        logger.info("job rejected", job_id=job.id, error_id=exc.error_id)
        publish_job_change(svc, job.id, "failed")
        return CreatedJob(job.id, file_id, "failed", 0, 0, exc.error_id, str(exc))
    with svc.db.transaction() as tx:
        budget.check_create(svc, tx, file_row.owner_id)  # raises before anything is recorded
        job = _insert_job(
            tx, file_row, JobStatus.SPLITTING, options, model_id, settings.batchlane_pages_per_chunk, process_now=on_demand, max_pages=max_pages or None
        )
        job_repo.move_file(tx, file_id, st.convert())
    job_id = job.id
    try:
        svc.workflows.start_intake(job_id)
    except Exception:
        # Without its intake the job would hold the file "splitting" for ever: fail it, then report.
        fail_job(svc, job_id, error_id="INTAKE_UNAVAILABLE", message="The conversion could not be started; convert the file again.")
        raise
    logger.info("job opened", job_id=job_id, file_id=file_id, size_bytes=size)
    return CreatedJob(job_id, file_id, "splitting", 0, 0)


def _insert_job(
    db: Any, file_row: job_repo.FileRow, status: str, options: dict[str, Any], model_id: str, pages_per_chunk: int, **extra: Any
) -> job_repo.JobRow:
    """The job row, before its pages are known (the split fills in pages and chunks); ``extra``: error, process_now, max_pages."""
    return job_repo.insert_job(
        db,
        file_id=file_row.id,
        owner_id=file_row.owner_id,
        status=status,
        options=options,
        model_id=model_id,
        total_pages=0,
        pages_per_chunk=pages_per_chunk,
        chunks=[],
        **extra,
    )


def split_job(svc: Services, job_id: str, *, scratch_dir: str | None = None) -> CreatedJob:
    """Download, validate and split a ``splitting`` job's upload, then park it or start it.

    Idempotent (the intake retries it): a job no longer splitting is answered as it is (a
    pending one gets its conversion started again, in case the run that split it died). The
    upload is streamed to a file under ``scratch_dir`` (Lambda's /tmp) and read from there,
    so memory holds the page tree and one chunk at a time, never the whole upload.
    A job cancelled meanwhile is left alone: no chunk rows, no hold, nothing started.
    """
    settings = svc.settings
    job = job_repo.get_job(svc.db, job_id)
    if job is None:
        raise NotFound(f"no job {job_id}")
    if job.status != "splitting":
        if job.status == "pending":
            # A retry after a run that committed but died before starting the conversion (idempotent by name).
            svc.workflows.start_conversion(job_id)
        logger.info("split skipped", job_id=job_id, status=job.status)
        return _as_created(job)
    file_row = job_repo.get_file(svc.db, str(job.file_id))
    assert file_row is not None  # jobs cascade with their file
    with tempfile.TemporaryDirectory(prefix="split-", dir=scratch_dir) as tmp:
        path = Path(tmp) / "upload.pdf"
        try:
            source_store(svc, file_row).download_to(file_row.s3_key, path, max_bytes=settings.batchlane_max_file_mb * 1024 * 1024)
        except NotFound:  # deleted meanwhile: delete cancels the job first, so this is usually a no-op
            fail_job(svc, job_id, error_id="UPLOAD_MISSING", message="The uploaded file is gone; upload it again.")
            return _as_created(job_repo.get_job(svc.db, job_id))
        except InputError as exc:  # replaced by a bigger object since convert checked its size (PDF_TOO_LARGE)
            fail_job(svc, job_id, error_id=exc.error_id, message=str(exc))
            return _as_created(job_repo.get_job(svc.db, job_id))
        with path.open("rb") as stream:
            try:
                limit = min(settings.batchlane_max_pages, job.max_pages or settings.batchlane_max_pages)
                document = open_pdf_file(stream, max_pages=limit)
                hold = budget.worst_case_hold(svc, path, model_id=job.model_id, max_pages=limit)
                pages = document.page_count
                chunks = document.chunks(job.pages_per_chunk)
                if (refused := _over_budget(svc, job, hold, pages)) is not None:  # before any chunk is written
                    return refused
                # Before the rows: no chunk without its source. A page that cannot be copied raises
                # InputError here (PDF_CORRUPT, PDF_TOO_COMPLEX), after the chunks written are deleted.
                chunk_bytes = store_chunk_sources(svc.store, job_id, document, chunks)
            except InputError as exc:
                failed = fail_job(svc, job_id, error_id=exc.error_id, message=str(exc))
                logger.info("job rejected", job_id=job_id, error_id=exc.error_id, status=failed["status"])
                return _as_created(job_repo.get_job(svc.db, job_id))
    options = job.options or {}
    if job.process_now:
        eligible, why = False, "process_now"
    else:
        eligible, why = batch_eligible(options, pages, lane_configured=settings.batch_lane_configured, min_pages=settings.batch_conversion_min_pages)
        margin_h = settings.batch_deadline_margin_s / 3600
        if eligible and deadline_lane(parse_deadline(options.get("deadline")), datetime.now(UTC), settings.batch_deadline_hours, margin_h):
            eligible, why = False, DEADLINE  # no room for a batch turnaround plus the on-demand time of its pages
    try:
        with svc.db.transaction() as tx:
            locked = job_repo.lock_job(tx, job_id)
            if locked is not None and locked.process_now and eligible:
                eligible, why = False, "process_now"  # flagged between our read and the lock
            status = st.park().target if eligible else st.queue().target
            if locked is not None and locked.status == JobStatus.SPLITTING:
                budget.check_split(svc, tx, owner_id=job.owner_id, job_id=job_id, hold_usd=hold, pages=pages)
            split = job_repo.finish_split(tx, job_id, parked=eligible, total_pages=pages, chunks=chunks, chunk_bytes=chunk_bytes)
            if split is not None:
                ledger.place_hold(tx, job_id=job_id, owner_id=job.owner_id, amount_usd=hold, hours=settings.batchlane_on_demand_window_hours)
    except (BudgetExceeded, LimitReached) as exc:  # nothing was written: the job ends failed, nothing starts
        failed = fail_job(svc, job_id, error_id=exc.error_id, message=str(exc))
        logger.info("job refused by its owner's budget", job_id=job_id, error_id=exc.error_id, hold_usd=str(hold), status=failed["status"])
        return _as_created(job_repo.get_job(svc.db, job_id))
    if split is None:
        logger.info("split discarded", job_id=job_id, reason="job left splitting (cancelled)")
        return _as_created(job_repo.get_job(svc.db, job_id))
    if eligible:
        svc.bus.publish(JOB_PARKED_DETAIL_TYPE, {"jobId": job_id, "modelId": job.model_id, "pages": pages})
        publish_job_change(svc, job_id, "waiting_batch")
    else:
        svc.workflows.start_conversion(job_id)
    logger.info("job split", job_id=job_id, pages=pages, chunks=len(chunks), status=status, lane=why)
    return CreatedJob(job_id, str(job.file_id), status, pages, len(chunks), lane_decision=why)


def _over_budget(svc: Services, job: job_repo.JobRow, hold: Decimal, pages: int) -> CreatedJob | None:
    """The budget check ahead of writing chunk sources (the split's transaction checks again, authoritatively)."""
    try:
        with svc.db.transaction() as tx:
            budget.check_split(svc, tx, owner_id=job.owner_id, job_id=job.id, hold_usd=hold, pages=pages)
    except (BudgetExceeded, LimitReached) as exc:
        fail_job(svc, job.id, error_id=exc.error_id, message=str(exc))
        logger.info("job refused by its owner's budget", job_id=job.id, error_id=exc.error_id, hold_usd=str(hold))
        return _as_created(job_repo.get_job(svc.db, job.id))
    return None


def _as_created(job: job_repo.JobRow | None) -> CreatedJob:
    assert job is not None  # a job row is never deleted while its file lives
    return CreatedJob(job.id, job.file_id, job.status, job.total_pages, job.chunk_count, job.error_id, job.error_message)


def fail_stalled_splits(svc: Services, *, older_than_s: float = SPLIT_STALLED_AFTER_S) -> list[str]:
    """Jobs still ``splitting`` long after their intake must have ended: fail them (SPLIT_STALLED)
    so the file can be converted again. Run by the recovery schedule; real time, never scaled."""
    failed = []
    for job_id in job_repo.jobs_in(svc.db, JobStatus.SPLITTING, unchanged_for_s=older_than_s):
        outcome = fail_job(svc, job_id, error_id="SPLIT_STALLED", message="The upload was not split in time; convert the file again.")
        if outcome["status"] == JobStatus.FAILED:
            failed.append(job_id)
    if failed:
        logger.warning("stalled splits failed", count=len(failed))
    return failed
