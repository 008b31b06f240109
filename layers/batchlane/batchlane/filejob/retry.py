"""Failed pages, and retrying only them on a completed job (docs/operations.md, "Retry only what failed").

How a retry reuses the conversion workflow and is undone: docs/module-notes.md "batchlane.filejob.retry".
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from batchlane import keys
from batchlane.claude import PageResult
from batchlane.domain import status as st
from batchlane.domain.advice import page_next_step
from batchlane.domain.errors import Conflict, NotFound
from batchlane.domain.limits import PAGE_TOO_COMPLEX, PAGE_TOO_LARGE
from batchlane.domain.status import Entity
from batchlane.filejob.budget import check_create, check_submit, retry_money
from batchlane.observability import logger
from batchlane.ports import Services, UniqueViolation, UnitOfWork
from batchlane.rows import JobRow

# Short names a user may give for a family of failure reasons (``--error-id throttled``).
REASON_ALIASES = {
    "throttled": frozenset({"ThrottlingException", "TooManyRequestsException", "ServiceUnavailableException", "LeaseWaitTimeout"}),
    "timeout": frozenset({"ReadTimeout", "InvocationEnding", "ModelTimeoutException"}),
}
# Failures decided before any model call: the page was never sent, so it has no lane.
_NEVER_SENT = (PAGE_TOO_LARGE, PAGE_TOO_COMPLEX)
# Reasons that lie in the page itself: the model refused or filtered it, or it is too large to send. A retry
# sends the same page with the same prompt, so it most likely fails the same way, and is charged again.
UNLIKELY_TO_CHANGE = frozenset(
    {
        "stop_reason=refusal",
        "stop_reason=content_filtered",
        "stop_reason=guardrail_intervened",
        "content_filtered",
        "guardrail_intervened",
        PAGE_TOO_LARGE,
        PAGE_TOO_COMPLEX,
    }
)


def retry_cures(reason: str) -> bool:
    """False for a failure a retry cannot cure (a refusal, a filter, a page too large): say so before charging again."""
    return reason not in UNLIKELY_TO_CHANGE


@dataclass(frozen=True)
class FailedPage:
    page: int
    reason: str
    attempts: int
    lane: str | None  # on_demand | batch | None (never sent)
    chunk_index: int

    def to_json(self) -> dict[str, Any]:
        helps = retry_cures(self.reason)
        return {
            "page": self.page,
            "status": "failed",
            "reason": self.reason,
            "attempts": self.attempts,
            "lane": self.lane,
            "chunkIndex": self.chunk_index,
            "retryLikelyToHelp": helps,
            "nextStep": page_next_step(helps),
        }


@dataclass(frozen=True)
class RetryStarted:
    job_id: str
    attempt: int
    pages: list[int]
    status: str
    already_running: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "jobId": self.job_id,
            "retry": self.attempt,
            "pages": self.pages,
            "status": self.status,
            "alreadyRunning": self.already_running,
            "execution": retry_execution_name(self.job_id, self.attempt),
            "lane": "on_demand",
        }


def reason_matches(reason: str, wanted: str) -> bool:
    """``wanted`` is the reason itself, or it without ``stop_reason=`` (``max_tokens``), or an alias (``throttled``)."""
    return wanted in (reason, reason.removeprefix("stop_reason=")) or reason in REASON_ALIASES.get(wanted, ())


def retry_execution_name(job_id: str, attempt: int) -> str:
    return f"retry-{job_id}-{attempt}"


def retry_scope(job: JobRow) -> tuple[int, frozenset[int]] | None:
    """(attempt, pages) while a retry runs on the job, else None."""
    if job.retry_attempt is None:
        return None
    return job.retry_attempt, frozenset(job.retry_pages or ())


# -- reading pages ---------------------------------------------------------------------------
def _attempts_by_chunk(live: dict[int, int], snapshots: list[tuple[int, list[dict[str, Any]]]]) -> dict[tuple[int, int], int]:
    """Chunk attempts per run: run 0 is the conversion, run k retry k. A run's count is in the
    snapshot of the next retry touching the chunk, else on the live chunk row (``live``: index → attempts)."""
    runs: dict[tuple[int, int], int] = {}
    last_run = dict.fromkeys(live, 0)
    for attempt, chunks_before in snapshots:  # (retry number, the chunks as they were before it), oldest first
        for snap in chunks_before:
            index = int(snap["chunkIndex"])
            runs[(index, last_run[index])] = int(snap["attempts"])
            last_run[index] = attempt
    for index, run in last_run.items():
        runs[(index, run)] = live[index]
    return runs


def failed_pages(svc: Services, job_id: str) -> list[FailedPage]:
    """The job's failed pages in page order, from the chunk results the Markdown was assembled from
    (only chunks whose row counts failed pages are read: a 10,000-page job has 200 result files)."""
    uow = svc.uow()
    chunks = uow.jobs.get_chunks(job_id)
    history = uow.retries.history(job_id)
    runs = _attempts_by_chunk({c.chunk_index: c.attempts for c in chunks}, [(r.attempt, r.chunks_before) for r in history])
    failed: list[FailedPage] = []
    for chunk in chunks:
        if chunk.status != "completed" or not chunk.result_key or not chunk.pages_failed:
            continue
        index = chunk.chunk_index
        for item in svc.store.get_json(chunk.result_key)["pages"]:
            result = PageResult.from_json(item)
            if result.status != "failed":
                continue
            tried_in = [0] + [r.attempt for r in history if result.page_number in r.pages]
            attempts = sum(runs.get((index, run), 0) for run in tried_in)
            reason = result.reason or "unknown"
            lane = result.served_by or (None if reason in _NEVER_SENT else "on_demand")
            failed.append(FailedPage(result.page_number, reason, attempts, lane, index))
    return sorted(failed, key=lambda p: p.page)


# -- starting a retry -------------------------------------------------------------------------
def start_retry(svc: Services, job_id: str, *, error_ids: list[str] | None = None, pages: list[int] | None = None) -> RetryStarted:
    """completed (with failed pages) → pending, only the chosen pages' chunks reopened; idempotent
    while a retry runs (a second POST answers the running one)."""
    uow = svc.uow()
    job = uow.jobs.get_job(job_id)
    if job is None:
        raise NotFound(f"No job {job_id}.", error_id="JOB_NOT_FOUND")
    if (running := uow.retries.running(job_id)) is not None:
        return RetryStarted(job_id, running.attempt, list(running.pages), job.status, already_running=True)
    if job.status != "completed":
        raise Conflict(f"The job is {job.status}; only a completed job with failed pages can be retried.", error_id="NOT_RETRYABLE")
    chosen = [p for p in failed_pages(svc, job_id) if (not error_ids or any(reason_matches(p.reason, e) for e in error_ids)) and (not pages or p.page in pages)]
    if not chosen:
        raise Conflict("No failed page matches: nothing to retry.", error_id="NOTHING_TO_RETRY")
    chunk_rows = {c.chunk_index: c for c in uow.jobs.get_chunks(job_id)}
    affected = sorted({p.chunk_index for p in chosen})
    for index in affected:  # the bucket forgets everything after 14 days, chunk sources included
        try:
            svc.store.size(keys.chunk_source_key(job_id, index))
        except NotFound:
            raise Conflict(
                f"The job's source pages expired ({keys.OBJECT_EXPIRY_DAYS}-day lifecycle); convert the file again.", error_id="SOURCE_EXPIRED"
            ) from None
    attempt = len(uow.retries.history(job_id)) + 1
    previous_md = None
    if job.markdown_key:
        previous_md = keys.markdown_before_retry_key(job_id, attempt)
        svc.store.put_bytes(previous_md, svc.store.get_bytes(job.markdown_key), "text/markdown; charset=utf-8")
    snapshot = [
        {
            "chunkIndex": i,
            "resultKey": chunk_rows[i].result_key,
            "pagesDone": chunk_rows[i].pages_done,
            "pagesFailed": chunk_rows[i].pages_failed,
            "pagesBatch": chunk_rows[i].pages_batch,
            "attempts": chunk_rows[i].attempts,
        }
        for i in affected
    ]
    page_numbers = [p.page for p in chosen]
    try:
        with uow:
            locked = uow.jobs.lock_job(job_id)
            assert locked is not None
            if (running := uow.retries.running(job_id)) is not None:  # a concurrent POST won while we prepared
                return RetryStarted(job_id, running.attempt, list(running.pages), locked.status, already_running=True)
            if locked.status != "completed":
                raise Conflict(f"The job is {locked.status}; only a completed job with failed pages can be retried.", error_id="NOT_RETRYABLE")
            money = retry_money(svc, uow.page_forms, model_id=job.model_id, pages=len(page_numbers), source_type=job.source_type)
            check_create(svc, uow.budgets, locked.owner_id)  # a retry is a live job again: 429 LIVE_JOBS_LIMIT at the cap (issue 21.5)
            check_submit(svc, uow.budgets, owner_id=locked.owner_id, job_id=job_id, money=money, pages=len(page_numbers))  # 402 / 429: nothing written
            row = uow.retries.insert(
                job_id=job_id,
                pages=page_numbers,
                error_ids=error_ids,
                previous_pages_failed=locked.pages_failed,
                previous_total_usd=Decimal(locked.total_cost_usd or 0),
                previous_markdown_key=previous_md,
                chunks_before=snapshot,
            )
            if row.attempt != attempt:  # another retry started and ended since we copied the Markdown under n
                raise Conflict("The job changed while the retry was being prepared; send it again.", error_id="JOB_CHANGED")
            uow.jobs.move_job(job_id, st.retry(), retry_attempt=attempt, retry_pages=list(page_numbers), error_id=None, error_message=None)
            uow.jobs.move_chunks(job_id, st.retry(Entity.CHUNK), indexes=affected, attempts=0, worker_id=None)
            uow.ledger.reopen_hold(job_id, extra_usd=money.hold_usd, hours=svc.settings.batchlane_on_demand_window_hours)  # chunk starts grow it
            uow.jobs.move_file(str(job.file_id), st.retry(Entity.FILE))
    except UniqueViolation as exc:
        if exc.constraint == "one_live_job_per_file":  # another conversion of the same file is running
            raise Conflict("The file is being converted again; retry once that conversion has ended.", error_id="CONVERSION_IN_PROGRESS") from exc
        if exc.constraint not in ("one_running_retry_per_job", "job_retries_job_id_attempt_key"):
            raise
        return start_retry(svc, job_id, error_ids=error_ids, pages=pages)  # a concurrent POST won: answer its retry
    try:
        # Only the POST that won: a partial file left by the last run would hold the failed pages as "kept".
        for index in affected:
            svc.store.put_json(keys.chunk_partial_key(job_id, index), {"pages": [], "continuations": 0})
        svc.workflows.start_retry(job_id, attempt)
    except Exception:
        end_retry(svc, job_id, outcome="failed", message="The retry could not be started.")
        raise
    logger.info("retry started", job_id=job_id, retry=attempt, pages=len(page_numbers), chunks=len(affected))
    return RetryStarted(job_id, attempt, page_numbers, "pending")


# -- ending a retry ---------------------------------------------------------------------------
def close_retry(uow: UnitOfWork, job: JobRow, *, total: Decimal, pages_failed: int) -> None:
    """Settle's part (inside its ``with uow:``): the retry row completed with what it cost, the flag gone from the job."""
    scope = retry_scope(job)
    if scope is None:
        return
    attempt, _ = scope
    row = uow.retries.get(job.id, attempt)
    previous = Decimal(row.previous_total_usd) if row else Decimal(0)
    uow.retries.finish(job.id, attempt, st.settle(Entity.RETRY), pages_failed=pages_failed, cost_usd=total - previous)
    uow.jobs.clear_retry(job.id)


def end_retry(svc: Services, job_id: str, *, outcome: str, message: str) -> dict[str, Any] | None:
    """Cancel or fail a running retry: the job is put back as it was (completed, its chunk
    results and Markdown untouched), with what the retry spent so far added to its total.
    None when no retry runs (the caller then does its usual thing)."""
    uow = svc.uow()
    with uow:
        job = uow.jobs.lock_job(job_id)
        retry = uow.retries.running(job_id)
        if job is None or retry is None:
            return None
        if job.status == "assembling" and outcome == "cancelled":
            raise Conflict("The retry is finishing (assembling the Markdown) and can no longer be cancelled.", error_id="CONVERSION_FINISHING")
        for snap in retry.chunks_before:
            uow.jobs.move_chunks(
                job_id,
                st.end_retry(Entity.CHUNK),
                indexes=[int(snap["chunkIndex"])],
                result_key=snap["resultKey"],
                pages_done=snap["pagesDone"],
                pages_failed=snap["pagesFailed"],
                pages_batch=snap["pagesBatch"],
                worker_id=None,
            )
        total = uow.ledger.job_total(job_id)
        failed = retry.previous_pages_failed
        uow.jobs.move_job(
            job_id,
            st.end_retry(),
            retry_attempt=None,
            retry_pages=None,
            total_cost_usd=total,
            pages_failed=failed,
            error_id="PAGES_FAILED",
            error_message=f"{failed} of {job.total_pages} pages could not be converted",
        )
        uow.ledger.close_hold(job_id, outcome="settled", settled_usd=total)
        uow.jobs.move_file(str(job.file_id), st.end_retry(Entity.FILE))
        uow.retries.finish(
            job_id,
            retry.attempt,
            st.transition(Entity.RETRY, {"failed": "fail", "cancelled": "cancel"}[outcome]),
            pages_failed=failed,
            cost_usd=total - Decimal(retry.previous_total_usd),
            error_message=message[:500],
        )
    logger.info("retry ended", job_id=job_id, retry=retry.attempt, outcome=outcome, previous_status=job.status)
    return {"jobId": job_id, "retry": retry.attempt, "status": "completed", "retryStatus": outcome, "previousStatus": job.status}


def retry_history(svc: Services, job_id: str) -> list[dict[str, Any]]:
    """Every retry of the job, oldest first: pages, outcome, cost, and the Markdown before it."""
    return [
        {
            "retry": r.attempt,
            "status": r.status,
            "pages": list(r.pages),
            "errorIds": list(r.error_ids) if r.error_ids else None,
            "pagesFailedBefore": r.previous_pages_failed,
            "pagesFailedAfter": r.pages_failed,
            "costUsd": str(r.cost_usd) if r.cost_usd is not None else None,
            "totalUsdBefore": str(r.previous_total_usd),
            "markdownBeforeKey": r.previous_markdown_key,
            "execution": retry_execution_name(job_id, r.attempt),
            "error": r.error_message,
            "createdAt": r.created_at.isoformat(),
            "finishedAt": r.finished_at.isoformat() if r.finished_at else None,
        }
        for r in svc.uow().retries.history(job_id)
    ]
