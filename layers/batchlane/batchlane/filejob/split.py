"""Job creation, step two (job_split, in the intake workflow): split the upload, then park or start the job.

The upload is streamed to local disk, validated and split into chunk PDFs; the chunk rows and the
funds hold are written in one transaction, then the job is parked for the batch lane or its
conversion started. Bad input never raises past it: the job ends failed with a stable error id.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from batchlane import keys
from batchlane.contract import JOB_PARKED_DETAIL_TYPE
from batchlane.domain import status as st
from batchlane.domain.eligibility import batch_eligible
from batchlane.domain.errors import BudgetExceeded, InputError, LimitReached, NotFound
from batchlane.domain.file_types import DOCUMENT, FileType
from batchlane.domain.folder_policy import DEADLINE, deadline_lane, parse_deadline
from batchlane.domain.status import JobStatus
from batchlane.filejob import budget, describe, intake, page_form_choice
from batchlane.filejob.create import CreatedJob, source_store
from batchlane.filejob.figures import figure_folder
from batchlane.filejob.settle import fail_job
from batchlane.filejob.source import store_chunk_sources, store_document_sources
from batchlane.observability import logger
from batchlane.pdf.split import open_pdf_file, plan_chunks
from batchlane.pdf.survey import survey_pdf
from batchlane.ports import Services
from batchlane.rows import JobRow
from batchlane.webhooks.events import publish_job_change

NOTHING = budget.SubmitMoney(Decimal(0), Decimal(0), Decimal(0))  # a born-digital document: no model call, nothing to hold
BUDGET_WINDOW = "budget_window"  # the lane decision of a job whose batch records do not fit its owner's room: on-demand, a window at a time


def split_job(svc: Services, job_id: str, *, scratch_dir: str | None = None) -> CreatedJob:
    """Download, validate and split a ``splitting`` job's upload, then park it or start it.

    Idempotent (the intake retries it): a job no longer splitting is answered as it is (a
    pending one gets its conversion started again, in case the run that split it died). The
    upload is streamed to a file under ``scratch_dir`` (Lambda's /tmp) and read from there,
    so memory holds the page tree and one chunk at a time, never the whole upload.
    A job cancelled meanwhile is left alone: no chunk rows, no hold, nothing started.
    """
    settings = svc.settings
    uow = svc.uow()
    job = uow.jobs.get_job(job_id)
    if job is None:
        raise NotFound(f"no job {job_id}")
    if job.status != "splitting":
        if job.status == "pending":
            # A retry after a run that committed but died before starting the conversion (idempotent by name).
            svc.workflows.start_conversion(job_id)
        logger.info("split skipped", job_id=job_id, status=job.status)
        return _as_created(job)
    file_row = uow.jobs.get_file(str(job.file_id))
    assert file_row is not None  # jobs cascade with their file
    with tempfile.TemporaryDirectory(prefix="split-", dir=scratch_dir) as tmp:
        path = Path(tmp) / "upload.pdf"
        try:
            source_store(svc, file_row).download_to(file_row.s3_key, path, max_bytes=settings.batchlane_max_file_mb * 1024 * 1024)
        except NotFound:  # deleted meanwhile: delete cancels the job first, so this is usually a no-op
            fail_job(svc, job_id, error_id="UPLOAD_MISSING", message="The uploaded file is gone; upload it again.")
            return _as_created(uow.jobs.get_job(job_id))
        except InputError as exc:  # replaced by a bigger object since convert checked its size (PDF_TOO_LARGE)
            fail_job(svc, job_id, error_id=exc.error_id, message=str(exc))
            return _as_created(uow.jobs.get_job(job_id))
        limit = min(settings.batchlane_max_pages, job.max_pages or settings.batchlane_max_pages)
        try:  # what the file is: a PDF goes on below, a picture becomes one, a born-digital document is converted here
            file_type, path = intake.pages_or_document(path, file_row.name, scratch=Path(tmp), max_pages=limit)
        except InputError as exc:
            fail_job(svc, job_id, error_id=exc.error_id, message=str(exc))
            logger.info("job rejected", job_id=job_id, error_id=exc.error_id, file_name=file_row.name)
            return _as_created(uow.jobs.get_job(job_id))
        if file_type.kind == DOCUMENT:
            return _split_document(svc, job, path, file_type, file_row.name, scratch=Path(tmp), max_pages=limit)
        if file_type.is_image:  # the page view shows the pages as they are sent, not the picture file
            with path.open("rb") as wrapped:
                svc.store.put_stream(keys.pages_source_key(job_id), iter(lambda: wrapped.read(8 << 20), b""), "application/pdf")
        with path.open("rb") as stream:
            try:
                document = open_pdf_file(stream, max_pages=limit)
                survey = survey_pdf(path, max_pages=limit)
                pages = document.page_count
                chunks = document.chunks(job.pages_per_chunk)
                eligible, why = _lane(svc, job, pages)
                config = page_form_choice.converter_config(uow.page_forms, settings, job.options or {})
                money = budget.submit_money(svc, survey, config=config, parked=eligible)
                if (refused := _over_budget(svc, job, money, pages)) is not None:  # before any chunk is written
                    return refused
                # Before the rows: no chunk without its source. A page that cannot be copied raises
                # InputError here (PDF_CORRUPT, PDF_TOO_COMPLEX), after the chunks written are deleted.
                chunk_bytes = store_chunk_sources(svc.store, job_id, document, chunks)
            except InputError as exc:
                failed = fail_job(svc, job_id, error_id=exc.error_id, message=str(exc))
                logger.info("job rejected", job_id=job_id, error_id=exc.error_id, status=failed["status"])
                return _as_created(uow.jobs.get_job(job_id))
    try:
        with uow:
            locked = uow.jobs.lock_job(job_id)
            if locked is not None and locked.process_now and eligible:
                eligible, why = False, "process_now"  # flagged between our read and the lock
                money = budget.submit_money(svc, survey, config=config, parked=False)
            if locked is not None and locked.status == JobStatus.SPLITTING:
                budget.check_submit(svc, uow.budgets, owner_id=job.owner_id, job_id=job_id, money=money, pages=pages)
                if eligible and not budget.hold_fits(svc, uow.budgets, owner_id=job.owner_id, job_id=job_id, hold_usd=money.hold_usd):
                    # its batch records' worst case does not fit what is left: on-demand, a chunk's window at a time
                    eligible, why = False, BUDGET_WINDOW
                    money = budget.submit_money(svc, survey, config=config, parked=False)
            status = st.park().target if eligible else st.queue().target
            split = uow.jobs.finish_split(job_id, parked=eligible, total_pages=pages, chunks=chunks, chunk_bytes=chunk_bytes, source_type=file_type.name)
            if split is not None:
                uow.ledger.place_hold(job_id=job_id, owner_id=job.owner_id, amount_usd=money.hold_usd, hours=settings.batchlane_on_demand_window_hours)
    except (BudgetExceeded, LimitReached) as exc:  # nothing was written: the job ends failed, nothing starts
        failed = fail_job(svc, job_id, error_id=exc.error_id, message=str(exc))
        logger.info("job refused by its owner's budget", job_id=job_id, error_id=exc.error_id, worst_usd=str(money.worst_usd), status=failed["status"])
        return _as_created(uow.jobs.get_job(job_id))
    if split is None:
        logger.info("split discarded", job_id=job_id, reason="job left splitting (cancelled)")
        return _as_created(uow.jobs.get_job(job_id))
    if eligible:
        svc.bus.publish(JOB_PARKED_DETAIL_TYPE, {"jobId": job_id, "modelId": job.model_id, "pages": pages})
        publish_job_change(svc, job_id, "waiting_batch")
    else:
        svc.workflows.start_conversion(job_id)
    logger.info("job split", job_id=job_id, pages=pages, chunks=len(chunks), status=status, lane=why)
    return CreatedJob(job_id, str(job.file_id), status, pages, len(chunks), lane_decision=why)


def _lane(svc: Services, job: JobRow, pages: int) -> tuple[bool, str]:
    """Whether the job parks for the batch lane, and why (its options, its size, its deadline, a process-now flag)."""
    settings, options = svc.settings, job.options or {}
    if job.process_now:
        return False, "process_now"
    eligible, why = batch_eligible(options, pages, lane_configured=settings.batch_lane_configured, min_pages=settings.batch_conversion_min_pages)
    margin_h = settings.batch_deadline_margin_s / 3600
    if eligible and deadline_lane(parse_deadline(options.get("deadline")), datetime.now(UTC), settings.batch_deadline_hours, margin_h):
        return False, DEADLINE  # no room for a batch turnaround plus the on-demand time of its pages
    return eligible, why


def _split_document(svc: Services, job: JobRow, path: Path, file_type: FileType, name: str, *, scratch: Path, max_pages: int) -> CreatedJob:
    """A born-digital document: converted here, in the bounded child (no model call); its pages and figures
    stored, then the job goes on like any other (pending, chunks, assemble, settle) with a $0 hold. With
    describeFigures its pictures are records of their chunks (filejob/describe.py): held at their worst case,
    parked for the batch lane when the job is eligible."""
    job_id = job.id
    figures = describe.FigurePlan()
    try:
        document = intake.convert(path, file_type, name, scratch=scratch, max_pages=max_pages)
        chunks = plan_chunks(len(document.sections), job.pages_per_chunk)
        pages = len(document.sections)
        if describe.wanted(job, source_type=file_type.name):
            figures = describe.plan_figures(svc, document, chunks, model_id=job.model_id, scratch=scratch / "sized")
        # Its pictures' requests are its only model calls: each at its worst case is what it may spend and what it holds.
        money = budget.SubmitMoney(figures.hold_usd, figures.hold_usd, figures.hold_usd) if figures.hold_usd else NOTHING
        if (refused := _over_budget(svc, job, money, pages)) is not None:
            return refused
        chunk_bytes = store_document_sources(svc.store, job_id, document, chunks, folder=figure_folder(name), sized=figures.sized)
    except InputError as exc:
        fail_job(svc, job_id, error_id=exc.error_id, message=str(exc))
        logger.info("job rejected", job_id=job_id, error_id=exc.error_id, file_type=file_type.name)
        return _as_created(svc.uow().jobs.get_job(job_id))
    eligible, why = describe.figures_lane(svc, job, figures.total) if figures.total else (False, "converter")
    uow = svc.uow()
    try:
        with uow:
            locked = uow.jobs.lock_job(job_id)
            if locked is not None and locked.process_now and eligible:
                eligible, why = False, "process_now"  # flagged between our read and the lock
            if locked is not None and locked.status == JobStatus.SPLITTING:
                budget.check_submit(svc, uow.budgets, owner_id=job.owner_id, job_id=job_id, money=money, pages=pages)
            split = uow.jobs.finish_split(
                job_id,
                parked=eligible,
                total_pages=pages,
                chunks=chunks,
                chunk_bytes=chunk_bytes,
                source_type=file_type.name,
                chunk_records=figures.records if figures.sized else None,
            )
            if split is not None:
                uow.ledger.place_hold(job_id=job_id, owner_id=job.owner_id, amount_usd=figures.hold_usd, hours=svc.settings.batchlane_on_demand_window_hours)
    except (BudgetExceeded, LimitReached) as exc:
        fail_job(svc, job_id, error_id=exc.error_id, message=str(exc))
        return _as_created(uow.jobs.get_job(job_id))
    if split is None:
        logger.info("split discarded", job_id=job_id, reason="job left splitting (cancelled)")
        return _as_created(uow.jobs.get_job(job_id))
    if eligible:
        svc.bus.publish(JOB_PARKED_DETAIL_TYPE, {"jobId": job_id, "modelId": job.model_id, "pages": figures.total})
        publish_job_change(svc, job_id, "waiting_batch")
    else:
        svc.workflows.start_conversion(job_id)
    status = "waiting_batch" if eligible else "pending"
    logger.info("document converted", job_id=job_id, file_type=file_type.name, pages=pages, converter=document.converter, figures=figures.total, lane=why)
    return CreatedJob(job_id, str(job.file_id), status, pages, len(chunks), lane_decision=why)


def _over_budget(svc: Services, job: JobRow, money: budget.SubmitMoney, pages: int) -> CreatedJob | None:
    """The budget check ahead of writing chunk sources (the split's transaction checks again, authoritatively)."""
    uow = svc.uow()
    try:
        with uow:
            budget.check_submit(svc, uow.budgets, owner_id=job.owner_id, job_id=job.id, money=money, pages=pages)
    except (BudgetExceeded, LimitReached) as exc:
        fail_job(svc, job.id, error_id=exc.error_id, message=str(exc))
        logger.info("job refused by its owner's budget", job_id=job.id, error_id=exc.error_id, worst_usd=str(money.worst_usd))
        return _as_created(uow.jobs.get_job(job.id))
    return None


def _as_created(job: JobRow | None) -> CreatedJob:
    assert job is not None  # a job row is never deleted while its file lives
    return CreatedJob(job.id, job.file_id, job.status, job.total_pages, job.chunk_count, job.error_id, job.error_message)
