"""Job creation: validate the PDF, split it into chunks, park it or start it.

Bad input never raises past here: the job is recorded as failed with a stable error id
and a one-line message, and nothing else is touched (no hold, no execution).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from batchlane.conversion.source import store_chunk_sources
from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.domain.eligibility import batch_eligible
from batchlane.domain.errors import InputError, NotFound
from batchlane.observability import logger
from batchlane.pdf.split import open_pdf
from batchlane.runtime import Services
from batchlane.topology import JOB_PARKED_DETAIL_TYPE


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


def normalise_options(options: dict[str, Any] | None) -> dict[str, Any]:
    """Jobs are hi-fi with parser auto unless the caller says otherwise; unknown keys are rejected."""
    allowed = {"highFidelity", "parser", "mathpix", "modelId", "_batchLane"}
    options = dict(options or {})
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise InputError(f"Unknown option(s): {', '.join(unknown)}.", error_id="OPTIONS_INVALID")
    options.setdefault("highFidelity", True)
    options.setdefault("parser", "auto")
    return options


def create_job(svc: Services, *, file_id: str, options: dict[str, Any] | None = None) -> CreatedJob:
    """Create the conversion job for an uploaded file (files row already exists)."""
    settings = svc.settings
    file_row = job_repo.get_file(svc.db, file_id)
    if file_row is None:
        raise NotFound(f"no file {file_id}")
    owner_id = file_row["owner_id"]
    options = normalise_options(options)
    model_id = str(options.get("modelId") or settings.batchlane_model_id)
    try:
        if model_id not in settings.batchlane_prices:
            raise InputError(f"Model {model_id} has no price configured.", error_id="MODEL_UNKNOWN")
        size = svc.store.size(file_row["s3_key"])
        if size > settings.batchlane_max_file_mb * 1024 * 1024:
            raise InputError(f"The file is {size // (1024 * 1024)} MB; the limit is {settings.batchlane_max_file_mb} MB.", error_id="PDF_TOO_LARGE")
        document = open_pdf(svc.store.get_bytes(file_row["s3_key"]), max_pages=settings.batchlane_max_pages)
    except InputError as exc:
        job = job_repo.insert_job(
            svc.db,
            file_id=file_id,
            owner_id=owner_id,
            status="failed",
            options=options,
            model_id=model_id,
            total_pages=0,
            pages_per_chunk=settings.batchlane_pages_per_chunk,
            chunks=[],
            error_id=exc.error_id,
            error_message=str(exc),
        )
        job_repo.set_file_status(svc.db, file_id, "failed")
        logger.info("job rejected", job_id=str(job["id"]), error_id=exc.error_id)
        return CreatedJob(str(job["id"]), file_id, "failed", 0, 0, exc.error_id, str(exc))

    chunks = document.chunks(settings.batchlane_pages_per_chunk)
    eligible, why = batch_eligible(options, document.page_count, lane_configured=settings.batch_lane_configured, min_pages=settings.batch_conversion_min_pages)
    status = "waiting_batch" if eligible else "pending"
    hold = Decimal(str(settings.batchlane_hold_usd_per_page)) * document.page_count
    with svc.db.transaction() as tx:
        job = job_repo.insert_job(
            tx,
            file_id=file_id,
            owner_id=owner_id,
            status=status,
            options=options,
            model_id=model_id,
            total_pages=document.page_count,
            pages_per_chunk=settings.batchlane_pages_per_chunk,
            chunks=chunks,
        )
        job_id = str(job["id"])
        store_chunk_sources(svc.store, job_id, document, chunks)  # before commit: no chunk without its source
        ledger.place_hold(tx, job_id=job_id, owner_id=owner_id, amount_usd=hold, hours=settings.batchlane_on_demand_window_hours)
        job_repo.set_file_status(tx, file_id, "converting")
    if eligible:
        svc.bus.publish(JOB_PARKED_DETAIL_TYPE, {"jobId": job_id, "modelId": model_id, "pages": document.page_count})
    else:
        svc.workflows.start_conversion(job_id)
    logger.info("job created", job_id=job_id, pages=document.page_count, chunks=len(chunks), status=status, lane=why)
    return CreatedJob(job_id, file_id, status, document.page_count, len(chunks), lane_decision=why)
