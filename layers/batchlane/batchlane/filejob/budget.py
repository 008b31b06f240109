"""Budgets in the job's life: checked at creation and at the split, the hold grown a window at a time, a pause, a resume.

* create (API, in the job's INSERT transaction): a free live-job place and budget left, else
  LIVE_JOBS_LIMIT (429) / BUDGET_EXCEEDED (402) and nothing is recorded.
* split (in the transaction that writes the chunks and places the hold): the job's pages within the live-page cap
  and its own worst case within what is left of its owner's month, else the job ends failed with one plain sentence
  (its estimate, its worst case, the hold, the room left). The hold placed is what it can spend before its next
  check: its batch records' worst case at the batch price when it parks, else nothing yet.
* each chunk start grows the hold by what the chunk may spend (its requests at their worst), as far as the owner's
  month allows, under the owner's lock; the chunk's end gives back what it did not spend.
* each on-demand request reserves its worst case from the job's one counter before it is sent, books its real cost
  after; a request that does not fit grows the hold by its worst case when the owner's month has room (a halving,
  a re-ask, a dense page), else stops its chunk (kept pages, a continuation), whose next start pauses the job
  (``paused_budget``) and says which of the owner's jobs hold the rest. The owner resumes it (POST /api/v1/jobs/{jobId}/resume) once there is room.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from batchlane.claude import ConverterConfig
from batchlane.domain.budget import (
    check_new_job,
    check_worst_case,
    grant,
    pause_message,
    request_worst_usage,
    room_left,
    worst_case_usage,
)
from batchlane.domain.cost import PriceTable, Usage
from batchlane.domain.errors import BudgetExceeded, Conflict, NotFound
from batchlane.filejob import page_form_choice
from batchlane.filejob.estimate import PageCounts, batch_records_hold, chunk_window_usd, expected_usage, priced
from batchlane.observability import logger
from batchlane.pdf.split import Page
from batchlane.ports import Aborted, BudgetRepository, PageFormRepository, Services, UnitOfWork
from batchlane.rows import JobRow

if TYPE_CHECKING:  # the type only: pdf/survey loads pypdfium2, which only the split and the dry run need
    from batchlane.pdf.survey import PageSurvey


def check_create(svc: Services, budgets: BudgetRepository, owner_id: str) -> None:
    """Raise LimitReached / BudgetExceeded before a new job is recorded (``budgets``: the insert's unit of work's, inside its ``with``)."""
    budgets.lock_owner(owner_id)
    check_new_job(budgets.limits_for(owner_id, svc.settings), budgets.standing(owner_id))


@dataclass(frozen=True)
class SubmitMoney:
    """A job's money as the split sees it: its estimate (the lane it takes), its worst case, the hold it places."""

    estimate_usd: Decimal
    worst_usd: Decimal
    hold_usd: Decimal


def submit_money(svc: Services, survey: PageSurvey, *, config: ConverterConfig, parked: bool) -> SubmitMoney:
    """The split's figures: the expected cost on the job's lane, its worst case (domain/budget.py) and its first hold:
    a parked job's batch records at their worst at the batch price (all may be billed before the next check, its
    collect), an on-demand job nothing (each chunk start grows it)."""
    counts = PageCounts(survey.pages, survey.blank, survey.scans, survey.text_chars_nonblank)
    figures = priced(expected_usage(counts, config=config, settings=svc.settings), svc.prices, config.model_id)
    hold = batch_records_hold(svc, counts, model_id=config.model_id) if parked else Decimal(0)
    return SubmitMoney(figures.batch_usd if parked else figures.on_demand_usd, figures.worst_usd, hold)


def check_submit(svc: Services, budgets: BudgetRepository, *, owner_id: str, job_id: str, money: SubmitMoney, pages: int) -> None:
    """Raise LimitReached / BudgetExceeded at the split: the live-page cap, the job's worst case within what is left
    (``budgets``: the split's unit of work's)."""
    budgets.lock_owner(owner_id)
    check_worst_case(
        budgets.limits_for(owner_id, svc.settings),
        budgets.standing(owner_id, exclude_job=job_id),
        estimate_usd=money.estimate_usd,
        worst_usd=money.worst_usd,
        hold_usd=money.hold_usd,
        pages=pages,
    )


def hold_fits(svc: Services, budgets: BudgetRepository, *, owner_id: str, job_id: str, hold_usd: Decimal) -> bool:
    """Whether a first hold of ``hold_usd`` fits what is left of the owner's month (after :func:`check_submit`, same transaction)."""
    return hold_usd <= room_left(budgets.limits_for(owner_id, svc.settings), budgets.standing(owner_id, exclude_job=job_id))


def worst_case_survey_usage(survey: PageSurvey, settings: Any) -> Usage:
    """The most a surveyed PDF's pages may use (domain/budget.py): the dry run's and the refusal's worst case."""
    return worst_case_usage(
        pages=survey.pages,
        blank=survey.blank,
        scans=survey.scans,
        text_chars=survey.text_chars_nonblank,
        max_tokens=settings.batchlane_max_tokens,
        reask=settings.batchlane_coverage_threshold > 0,
    )


def worst_case_pages_usd(svc: Services, *, model_id: str, pages: int) -> Decimal:
    """The worst case of ``pages`` pages whose text is not known (a retry): each a text page at the bounds (domain/budget.py)."""
    settings = svc.settings
    reask = settings.batchlane_coverage_threshold > 0
    usage = worst_case_usage(pages=pages, blank=0, scans=0, text_chars=0, max_tokens=settings.batchlane_max_tokens, reask=reask)
    return svc.prices.cost(model_id, usage)


# The former name: the retry's figure is a worst case, not a hold any more (the hold grows a window at a time).
worst_case_pages_hold = worst_case_pages_usd


def retry_money(svc: Services, page_forms: PageFormRepository, *, model_id: str, pages: int, source_type: str = "pdf") -> SubmitMoney:
    """A retry of ``pages`` failed pages: its estimate (pages without a known text, as scans, in the page form the
    retry will send: the one recorded for the model, or the image form for a picture's job), its worst case, no first hold."""
    config = page_form_choice.converter_config(page_forms, svc.settings, {"modelId": model_id}, source_type=source_type)
    estimate = priced(expected_usage(PageCounts(pages, 0, pages, 0), config=config, settings=svc.settings), svc.prices, model_id).on_demand_usd
    return SubmitMoney(estimate, worst_case_pages_usd(svc, model_id=model_id, pages=pages), Decimal(0))


def cheapest_request_usd(svc: Services, model_id: str) -> Decimal:
    """The worst case of the smallest request (one page, no text): a hold with less left can send nothing."""
    return svc.prices.cost(model_id, request_worst_usage([0], max_tokens=svc.settings.batchlane_max_tokens))


@dataclass(frozen=True)
class Window:
    """A chunk start's growth of its job's hold: ``granted`` (given back at its end), or ``paused``."""

    granted: Decimal = Decimal(0)
    paused: bool = False


def open_window(svc: Services, job: JobRow, *, pages: int) -> Window:
    """Before a chunk starts: grow the job's hold by what the chunk may spend, as far as its owner's month allows
    (one transaction, the owner locked: two jobs never grow into the same room). Then pause the job, saying why, only
    when the request it must send next (the last one that did not fit) cannot fit what the hold has left."""
    if pages <= 0:
        return Window()
    window_usd = chunk_window_usd(svc, job.model_id, pages)
    with svc.uow() as uow:
        uow.budgets.lock_owner(job.owner_id)
        hold = uow.ledger.get_hold(job.id)
        if hold is None or hold.outcome is not None:
            return Window()  # no open hold: no limit (a job from before holds, or one ending)
        limits = uow.budgets.limits_for(job.owner_id, svc.settings)
        standing = uow.budgets.standing(job.owner_id, exclude_job=job.id)
        spent = uow.ledger.job_total(job.id)
        need = max(window_usd, hold.wanted_usd)  # at least room for the request that did not fit (a denser page's)
        granted = grant(need, limits=limits, standing=standing, open_usd=hold.amount_usd - spent)
        # what the hold has left: less what its requests took, or what the job booked if more (the ledger is the truth)
        left = hold.amount_usd + granted - max(hold.committed_usd, spent)
        next_usd = hold.wanted_usd  # 0 until a request was refused: a chunk of blank pages sends nothing (issue 38.5)
        if next_usd > left:  # the request it must send next does not fit even with all the room there is
            message = pause_message(
                next_usd=next_usd,
                left_usd=left,
                limits=limits,
                holders=uow.budgets.holders(job.owner_id, exclude_job=job.id),
            )
            paused = uow.budgets.pause_at_hold(job.id, next_request_usd=next_usd, spent_usd=spent, message=message)
            granted = Decimal(0)  # nothing runs: the hold does not grow
        else:
            paused = False
            if granted:
                uow.budgets.grow_hold(job.id, by=granted)
    if paused:  # the workflow's Settle step publishes the change (filejob/settle.py)
        logger.warning("job paused: its next request does not fit its owner's budget", job_id=job.id, wanted_usd=str(next_usd))
    return Window(granted, paused)


def close_window(svc: Services, job_id: str, window: Window, *, spent: Decimal, grown: Decimal = Decimal(0)) -> None:
    """The chunk's invocation ended: its job's hold gives back what the chunk did not spend of its window and of what
    its requests grew it by (:class:`Growth`)."""
    granted = window.granted + grown
    if granted:
        svc.uow().budgets.release_hold(job_id, granted=granted, spent=min(spent, granted))


class Growth:
    """A request that does not fit what the chunk's window left (a refused request halved and re-asked, the coverage
    re-ask, a denser page than the window's bound): the job's hold grows by that request's worst case when its owner's
    month has room for it (the owner locked, as at a chunk start), and the chunk goes on; else the request is not sent
    and the chunk stops (its next start pauses the job). ``usd``: what it grew by, given back at the chunk's end."""

    def __init__(self, svc: Services, job: JobRow) -> None:
        self._svc, self._job, self._lock = svc, job, threading.Lock()
        self.usd = Decimal(0)

    def __call__(self, cost: Decimal) -> bool:
        """Called from a page thread: one transaction on the page threads' connection (they never open their own)."""
        job, settings = self._job, self._svc.settings

        def grow(uow: UnitOfWork) -> bool:
            uow.budgets.lock_owner(job.owner_id)
            hold = uow.ledger.get_hold(job.id)
            if hold is None or hold.outcome is not None:
                return False
            limits = uow.budgets.limits_for(job.owner_id, settings)
            standing = uow.budgets.standing(job.owner_id, exclude_job=job.id)
            if grant(cost, limits=limits, standing=standing, open_usd=hold.amount_usd - uow.ledger.job_total(job.id)) < cost:
                return False
            return uow.budgets.grow_hold(job.id, by=cost) is not None

        if not self._svc.page_thread_database().in_one_transaction(grow):
            return False
        with self._lock:
            self.usd += cost
        return True


class HoldReached(Aborted):
    """The job's hold has not enough left for this request's worst case: the chunk stops like at its deadline."""


class JobHold:
    """The job's one spend counter (funds_holds.committed_usd), shared by all its chunks: each on-demand
    request reserves its worst case before it is sent and books its real cost after (BudgetRepository.reserve). Its page
    threads call it at once: ``budgets`` is one they may share (the process's serial connection's, PageThreadDatabase)."""

    def __init__(
        self,
        budgets: BudgetRepository,
        job_id: str,
        *,
        prices: PriceTable,
        model_id: str,
        max_tokens: int,
        on_reached: Callable[[], None],
        grow: Callable[[Decimal], bool] | None = None,
    ) -> None:
        self._budgets, self._job_id, self._prices, self._model_id, self._max_tokens = budgets, job_id, prices, model_id, max_tokens
        self._on_reached, self._grow = on_reached, grow

    def reserve(self, pages: list[Page]) -> Decimal:
        """Take the request's worst case from the hold (grown for it when it does not fit and the owner's month has
        room: :class:`Growth`), or raise HoldReached (nothing taken)."""
        chars = [page.text_chars if page.estimate_known else None for page in pages]
        cost = self._prices.cost(self._model_id, request_worst_usage(chars, max_tokens=self._max_tokens))
        taken = self._budgets.reserve(self._job_id, cost)
        if taken is None:
            return Decimal(0)  # no open hold: nothing to count against
        if not taken and self._grow is not None and self._grow(cost):
            taken = self._budgets.reserve(self._job_id, cost)
        if not taken:
            self._on_reached()
            raise HoldReached("the job's funds hold cannot carry another request")
        return cost

    def settle(self, reserved: Decimal, actual: Decimal) -> None:
        if reserved:
            self._budgets.settle_reservation(self._job_id, reserved=reserved, actual=actual)


def resume_job(svc: Services, owner_id: str, job_id: str) -> dict[str, Any]:
    """paused_budget → processing when its owner's month has room for the request it could not send; then the
    conversion runs again (each chunk start grows the hold as before)."""
    uow = svc.uow()
    with uow:
        job = uow.jobs.lock_job(job_id)
        if job is None or job.owner_id != owner_id:
            raise NotFound(f"No job {job_id}.", error_id="JOB_NOT_FOUND")
        if job.status != "paused_budget":
            raise Conflict(f"The job is {job.status}, not paused for its budget.", error_id="NOT_PAUSED")
        if not job.pause_settled:
            # Chunks that were running when it paused still finish; a new run started now would race the old one's end.
            raise Conflict("The job's running chunks are still finishing; resume it in a minute.", error_id="PAUSE_DRAINING")
        hold = uow.ledger.get_hold(job_id)
        spent = uow.ledger.job_total(job_id)
        wanted = max(hold.wanted_usd if hold is not None else Decimal(0), cheapest_request_usd(svc, job.model_id))
        uow.budgets.lock_owner(owner_id)
        limits = uow.budgets.limits_for(owner_id, svc.settings)
        standing = uow.budgets.standing(owner_id, exclude_job=job_id)
        open_usd = (hold.amount_usd - spent) if hold is not None else Decimal(0)
        left = hold.amount_usd - hold.committed_usd if hold is not None else Decimal(0)
        room = max(limits.usd_per_month - standing.committed_usd - max(open_usd, Decimal(0)), Decimal(0))
        if left + room < wanted:
            raise BudgetExceeded(
                f"Resuming needs room for its next request, up to {wanted:.2f} USD; {left + room:.2f} USD of this month's budget of "
                f"{limits.usd_per_month} USD is left."
            )
        resumed = uow.budgets.resume_paused(job_id, hold_usd=hold.amount_usd if hold is not None else Decimal(0))
        assert resumed is not None
        attempt = resumed.budget_resumes
    svc.workflows.start_resume(job_id, attempt)
    logger.info("job resumed after a budget pause", job_id=job_id, spent_usd=str(spent), resume=attempt)
    amount = hold.amount_usd if hold is not None else Decimal(0)
    return {"jobId": job_id, "status": resumed.status, "holdUsd": str(amount), "spentUsd": str(spent), "resume": attempt}
