"""Budgets in the job's life: checked at creation and at the split, a pause at the hold, a resume.

* create (API, in the job's INSERT transaction): a free live-job place and budget left, else
  LIVE_JOBS_LIMIT (429) / BUDGET_EXCEEDED (402) and nothing is recorded.
* split (in the transaction that writes the chunks and places the hold): the job's pages within
  the live-page cap and its worst-case hold within what is left, else the job ends failed.
* each on-demand request: reserves its worst case (its pages' input, a whole max_tokens answer) from
  the job's one counter before it is sent, books its real cost after; a request that does not fit stops
  its chunk (kept pages, a continuation).
* chunk start: a job whose booked spend reached its hold, or whose hold cannot carry one more request,
  goes ``paused_budget``; its chunks wait, Settle publishes the pause; the owner resumes it (POST /api/v1/jobs/{jobId}/resume) once the budget allows.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from batchlane.domain.budget import check_hold, check_new_job, raised_hold, request_worst_usage, worst_case_usage
from batchlane.domain.cost import PriceTable, Usage
from batchlane.domain.errors import BudgetExceeded, Conflict, NotFound
from batchlane.observability import logger
from batchlane.pdf.split import Page
from batchlane.ports import Aborted, BudgetRepository, Services

if TYPE_CHECKING:  # the type only: pdf/survey loads pypdfium2, which only the split and the dry run need
    from batchlane.pdf.survey import PageSurvey


def check_create(svc: Services, budgets: BudgetRepository, owner_id: str) -> None:
    """Raise LimitReached / BudgetExceeded before a new job is recorded (``budgets``: the insert's unit of work's, inside its ``with``)."""
    budgets.lock_owner(owner_id)
    check_new_job(budgets.limits_for(owner_id, svc.settings), budgets.standing(owner_id))


def check_split(svc: Services, budgets: BudgetRepository, *, owner_id: str, job_id: str, hold_usd: Decimal, pages: int) -> None:
    """Raise LimitReached / BudgetExceeded before the hold of a split job is placed (``budgets``: the split's unit of work's)."""
    budgets.lock_owner(owner_id)
    check_hold(budgets.limits_for(owner_id, svc.settings), budgets.standing(owner_id, exclude_job=job_id), hold_usd=hold_usd, pages=pages)


def worst_case_survey_usage(survey: PageSurvey, settings: Any) -> Usage:
    """The most a surveyed PDF's pages may use (domain/budget.py): what the funds hold and the dry run's holdUsd price."""
    return worst_case_usage(
        pages=survey.pages,
        blank=survey.blank,
        scans=survey.scans,
        text_chars=survey.text_chars_nonblank,
        max_tokens=settings.batchlane_max_tokens,
        reask=settings.batchlane_coverage_threshold > 0,
    )


def worst_case_hold(svc: Services, survey: PageSurvey, *, model_id: str) -> Decimal:
    """The funds hold of a job: the on-demand price of the most its pages may use (domain/budget.py),
    from their text and blank/scan counts (``survey``: pdf/survey.survey_pdf, sampled past a few hundred pages)."""
    return svc.prices.cost(model_id, worst_case_survey_usage(survey, svc.settings))


def worst_case_pages_hold(svc: Services, *, model_id: str, pages: int) -> Decimal:
    """The hold for ``pages`` pages whose text is not known (a retry): each held at the worst case (domain/budget.py)."""
    settings = svc.settings
    usage = worst_case_usage(pages=pages, blank=0, scans=0, text_chars=0, max_tokens=settings.batchlane_max_tokens, reask=False, unknown=pages)
    return svc.prices.cost(model_id, usage)


def cheapest_request_usd(svc: Services, model_id: str) -> Decimal:
    """The worst case of the smallest request (one page, no text): a hold with less left can send nothing."""
    return svc.prices.cost(model_id, request_worst_usage([0], max_tokens=svc.settings.batchlane_max_tokens))


def pause_at_hold(svc: Services, job_id: str, *, model_id: str | None = None) -> bool:
    """Before a chunk starts: True (and the job is ``paused_budget``) when its spend has reached its hold,
    or what is left of it cannot carry one more request at its worst case."""
    least = cheapest_request_usd(svc, model_id) if model_id else Decimal(0)
    paused = svc.uow().budgets.pause_at_hold(job_id, next_request_usd=least)
    if paused:  # the workflow's Settle step publishes the change (conversion/settle.py)
        logger.warning("job paused at its funds hold", job_id=job_id)
    return paused


class HoldReached(Aborted):
    """The job's hold has not enough left for this request's worst case: the chunk stops like at its deadline."""


class JobHold:
    """The job's one spend counter (funds_holds.committed_usd), shared by all its chunks: each on-demand
    request reserves its worst case before it is sent and books its real cost after (BudgetRepository.reserve). Its page
    threads call it at once: ``budgets`` is one they may share (the process's serial connection's, PageThreadDatabase)."""

    def __init__(self, budgets: BudgetRepository, job_id: str, *, prices: PriceTable, model_id: str, max_tokens: int, on_reached: Callable[[], None]) -> None:
        self._budgets, self._job_id, self._prices, self._model_id, self._max_tokens = budgets, job_id, prices, model_id, max_tokens
        self._on_reached = on_reached

    def reserve(self, pages: list[Page]) -> Decimal:
        """Take the request's worst case from the hold, or raise HoldReached (nothing taken)."""
        chars = [page.text_chars if page.estimate_known else None for page in pages]
        cost = self._prices.cost(self._model_id, request_worst_usage(chars, max_tokens=self._max_tokens))
        taken = self._budgets.reserve(self._job_id, cost)
        if taken is None:
            return Decimal(0)  # no open hold: nothing to count against
        if not taken:
            self._on_reached()
            raise HoldReached("the job's funds hold cannot carry another request")
        return cost

    def settle(self, reserved: Decimal, actual: Decimal) -> None:
        if reserved:
            self._budgets.settle_reservation(self._job_id, reserved=reserved, actual=actual)


def resume_job(svc: Services, owner_id: str, job_id: str) -> dict[str, Any]:
    """paused_budget → processing with a raised hold, if the owner's budget allows it; then the conversion runs again."""
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
        money = uow.budgets.job_money(job_id)
        assert money is not None
        spent = money.spent_usd
        hold = raised_hold(spent=spent, hold=money.hold_usd or Decimal(0), pages_done=money.pages_done, pages_total=money.total_pages)
        uow.budgets.lock_owner(owner_id)
        limits = uow.budgets.limits_for(owner_id, svc.settings)
        others = uow.budgets.standing(owner_id, exclude_job=job_id)
        # This job's spend this month is in ``others`` already (the ledger); its hold may add what it has not spent.
        if others.committed_usd + (hold - spent) > limits.usd_per_month:
            raise BudgetExceeded(
                f"Resuming needs up to {hold - spent:.2f} USD more; this month's budget of {limits.usd_per_month} USD has "
                f"{max(limits.usd_per_month - others.committed_usd, Decimal(0)):.2f} USD left."
            )
        resumed = uow.budgets.resume_paused(job_id, hold_usd=hold)
        assert resumed is not None
        attempt = resumed.budget_resumes
    svc.workflows.start_resume(job_id, attempt)
    logger.info("job resumed after a budget pause", job_id=job_id, hold_usd=str(hold), spent_usd=str(spent), resume=attempt)
    return {"jobId": job_id, "status": resumed.status, "holdUsd": str(hold), "spentUsd": str(spent), "resume": attempt}
