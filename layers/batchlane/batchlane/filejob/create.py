"""Job creation, step one (job_create, behind the API's 29 s): cheap checks, then the job is opened.

Options, model and the upload's size are checked, the job is recorded ``splitting`` and its intake
workflow started (the split is filejob/split.py's). Bad input never raises past it: the job ends
failed with a stable error id and a one-line message, and nothing else is touched.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from batchlane.domain import status as st
from batchlane.domain.errors import InputError, NotFound
from batchlane.domain.folder_policy import check_deadline, parse_deadline
from batchlane.domain.status import JobStatus
from batchlane.filejob import budget
from batchlane.filejob.settle import fail_job
from batchlane.observability import logger
from batchlane.ports import JobRepository, Services
from batchlane.rows import FileRow, JobRow
from batchlane.webhooks import subscription
from batchlane.webhooks.events import publish_job_change


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


ASSEMBLY_MODES = ("document", "none")
CONVERSION_FORMATS = ("md", "docx", "html", "json")  # formats/render.py; docs/formats.md "Outputs"  # none: the page-by-page Markdown (docs/architecture.md "Assembly")


def normalise_options(options: dict[str, Any] | None) -> dict[str, Any]:
    """Jobs are hi-fi with parser auto unless the caller says otherwise; unknown keys are rejected.
    An underscore key is the job's own state, never an option (``_batchLane``, the bulk opt-in's first spelling, is
    ``batchLane`` only since decision 0031)."""
    allowed = {"highFidelity", "parser", "mathpix", "modelId", "batchLane", "deadline", "assembly", "conversionFormats", "describeFigures", *subscription.OPTION_KEYS}
    options = dict(options or {})
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise InputError(f"Unknown option(s): {', '.join(unknown)}.", error_id="OPTIONS_INVALID")
    options.setdefault("highFidelity", True)
    options.setdefault("parser", "auto")
    if options.get("assembly", "document") not in ASSEMBLY_MODES:
        raise InputError("options.assembly is document (one document, the default) or none (page by page).", error_id="OPTIONS_INVALID")
    if "conversionFormats" in options:
        options["conversionFormats"] = check_formats(options["conversionFormats"])
    if not isinstance(options.get("describeFigures", False), bool):  # docs/formats.md "Pictures described"
        raise InputError("options.describeFigures is true or false (describe a born-digital document's pictures with Claude).", error_id="OPTIONS_INVALID")
    if "deadline" in options:
        deadline = parse_deadline(options.pop("deadline"))
        if deadline is not None:
            check_deadline(deadline, datetime.now(UTC), field="options.deadline")
            options["deadline"] = deadline.isoformat()
    return options


def check_formats(value: Any) -> dict[str, bool]:
    """``conversionFormats``: ``{"md": true, "docx": true, "html": true, "json": true}``; md is always written
    (it cannot be turned off), any other key is refused (OPTIONS_INVALID)."""
    if not isinstance(value, dict) or not all(isinstance(v, bool) for v in value.values()):
        raise InputError("options.conversionFormats is an object of true/false, e.g. {\"md\": true, \"docx\": true}.", error_id="OPTIONS_INVALID")
    unknown = sorted(set(value) - set(CONVERSION_FORMATS))
    if unknown:
        raise InputError(f"options.conversionFormats: unknown format(s) {', '.join(unknown)}; the formats are {', '.join(CONVERSION_FORMATS)}.", error_id="OPTIONS_INVALID")
    if value.get("md") is False:
        raise InputError("options.conversionFormats.md cannot be false: the Markdown is always written.", error_id="OPTIONS_INVALID")
    return {"md": True, **{k: v for k, v in value.items() if k != "md"}}


def source_store(svc: Services, file_row: FileRow) -> Any:
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
    uow = svc.uow()
    file_row = uow.jobs.get_file(file_id)
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
            uow.jobs,
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
        uow.jobs.move_file(file_id, st.reject())
        logger.info("job rejected", job_id=job.id, error_id=exc.error_id)
        publish_job_change(svc, job.id, "failed")
        return CreatedJob(job.id, file_id, "failed", 0, 0, exc.error_id, str(exc))
    with uow:
        budget.check_create(svc, uow.budgets, file_row.owner_id)  # raises before anything is recorded
        job = _insert_job(
            uow.jobs, file_row, JobStatus.SPLITTING, options, model_id, settings.batchlane_pages_per_chunk, process_now=on_demand, max_pages=max_pages or None
        )
        uow.jobs.move_file(file_id, st.convert())
    job_id = job.id
    try:
        svc.workflows.start_intake(job_id)
    except Exception:
        # Without its intake the job would hold the file "splitting" for ever: fail it, then report.
        fail_job(svc, job_id, error_id="INTAKE_UNAVAILABLE", message="The conversion could not be started; convert the file again.")
        raise
    logger.info("job opened", job_id=job_id, file_id=file_id, size_bytes=size)
    return CreatedJob(job_id, file_id, "splitting", 0, 0)


def _insert_job(jobs: JobRepository, file_row: FileRow, status: str, options: dict[str, Any], model_id: str, pages_per_chunk: int, **extra: Any) -> JobRow:
    """The job row, before its pages are known (the split fills in pages and chunks); ``extra``: error, process_now, max_pages."""
    return jobs.insert_job(
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
