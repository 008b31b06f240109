"""A job's money at the edges `make mutate` found open (filejob/budget.py, stop 47), on the fakes with no server:
the create check against the owner's own limits, the parked hold's fit, a retry's figures, a hold grown by a request
to the last cent, and a resume counted with the job's own open hold (or with no hold at all, a job from before holds)."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest
from usecase_fakes import MODEL

from batchlane.claude import ConverterConfig
from batchlane.domain import page_form as forms
from batchlane.domain import status as st
from batchlane.domain.budget import worst_case_usage
from batchlane.domain.errors import BudgetExceeded, Conflict, LimitReached
from batchlane.domain.status import JobStatus
from batchlane.filejob import budget
from batchlane.filejob.estimate import PageCounts, chunk_window_usd, expected_usage, priced
from batchlane.pdf.split import plan_chunks
from batchlane.ports import Services
from fakes import FakeUnitOfWork

OWNER, OTHER = "owner-1", "owner-2"
HAIKU = "us.anthropic.claude-haiku-4-5-20251001-v1:0"  # priced apart from the default model: a figure priced for the wrong model shows


def _job(
    uow: FakeUnitOfWork, *, status: str = JobStatus.PROCESSING, hold_usd: str | None = "1.00", owner: str = OWNER, pages: int = 4, model: str = MODEL
) -> str:
    file_id = uow.jobs.insert_file(owner_id=owner, name="book.pdf", s3_key=f"uploads/{owner}/book.pdf", size_bytes=100).id
    job = uow.jobs.insert_job(
        file_id=file_id, owner_id=owner, status=status, options={}, model_id=model, total_pages=pages, pages_per_chunk=2, chunks=plan_chunks(pages, 2),
    )  # fmt: skip
    assert uow.jobs.move_file(file_id, st.convert())
    if hold_usd is not None:
        uow.ledger.place_hold(job_id=job.id, owner_id=owner, amount_usd=Decimal(hold_usd), hours=30)
    return job.id


def _spend(uow: FakeUnitOfWork, job_id: str, cost: str) -> None:
    uow.ledger.add_chunk_cost(job_id=job_id, chunk_index=0, model_id=MODEL, input_tokens=100, output_tokens=50, cost_usd=Decimal(cost), metadata={})


def _limit(uow: FakeUnitOfWork, owner: str = OWNER, *, usd: str | None = None, jobs: int | None = None, pages: int | None = None) -> None:
    uow.budgets.set_override(owner, usd_per_month=None if usd is None else Decimal(usd), max_live_jobs=jobs, max_live_pages=pages, updated_by="admin")


def _hold(uow: FakeUnitOfWork, job_id: str) -> tuple[Decimal, Decimal]:
    hold = uow.ledger.get_hold(job_id)
    assert hold is not None
    return hold.amount_usd, hold.committed_usd


# -- the create check ------------------------------------------------------------------------------
def test_a_new_job_is_refused_at_the_owners_own_live_job_limit_not_another_owners(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    _job(fake_uow, hold_usd="0")
    _job(fake_uow, hold_usd="0", owner=OTHER)
    _job(fake_uow, hold_usd="0", owner=OTHER)
    _limit(fake_uow, jobs=2)  # the default is 20

    budget.check_create(svc_on_fakes, fake_uow.budgets, OWNER)  # one live job of its own: room for a second

    _job(fake_uow, hold_usd="0")
    with pytest.raises(LimitReached) as refused:
        budget.check_create(svc_on_fakes, fake_uow.budgets, OWNER)
    assert refused.value.error_id == "LIVE_JOBS_LIMIT"
    assert str(refused.value).startswith("You have 2 conversions running; the live-job limit (maxLiveJobs) is 2.")


def test_a_new_job_is_refused_once_the_owners_month_is_committed(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    spent = _job(fake_uow, hold_usd="0.40")
    _spend(fake_uow, spent, "0.40")
    _job(fake_uow, hold_usd="5", owner=OTHER)  # another owner's hold is not this owner's budget
    _limit(fake_uow, usd="0.41")

    budget.check_create(svc_on_fakes, fake_uow.budgets, OWNER)

    _limit(fake_uow, usd="0.40")
    with pytest.raises(BudgetExceeded) as refused:
        budget.check_create(svc_on_fakes, fake_uow.budgets, OWNER)
    assert str(refused.value).startswith("This month's budget (usdPerMonth) of 0.40 USD is committed (0.40 USD spent or held)")


# -- the parked hold's fit (the split) --------------------------------------------------------------
def test_a_parked_jobs_first_hold_fits_the_owners_month_to_the_cent_beside_its_other_jobs(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    _job(fake_uow, hold_usd="2.00")  # another of the owner's jobs holds 2.00
    _job(fake_uow, hold_usd="9.00", owner=OTHER)
    splitting = _job(fake_uow, hold_usd="3.00")  # its own hold (placed in the same transaction) is not counted against it
    _limit(fake_uow, usd="5.00")

    fits = budget.hold_fits(svc_on_fakes, fake_uow.budgets, owner_id=OWNER, job_id=splitting, hold_usd=Decimal("3.00"))
    too_much = budget.hold_fits(svc_on_fakes, fake_uow.budgets, owner_id=OWNER, job_id=splitting, hold_usd=Decimal("3.01"))

    assert (fits, too_much) == (True, False)


def test_a_parked_hold_is_checked_against_the_deployments_default_when_the_owner_has_no_limit(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    splitting = _job(fake_uow, hold_usd="0")
    default = Decimal(str(svc_on_fakes.settings.batchlane_budget_usd_per_month))

    assert budget.hold_fits(svc_on_fakes, fake_uow.budgets, owner_id=OWNER, job_id=splitting, hold_usd=default)
    assert not budget.hold_fits(svc_on_fakes, fake_uow.budgets, owner_id=OWNER, job_id=splitting, hold_usd=default + Decimal("0.01"))


# -- a retry's figures --------------------------------------------------------------------------------
def test_a_retrys_money_is_its_pages_as_scans_on_demand_at_their_models_price_with_no_first_hold(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    svc = svc_on_fakes
    config = ConverterConfig.from_settings(svc.settings, {"modelId": HAIKU})

    money = budget.retry_money(svc, fake_uow.page_forms, model_id=HAIKU, pages=3)

    scans = priced(expected_usage(PageCounts(3, 0, 3, 0), config=config, settings=svc.settings), svc.prices, HAIKU)
    assert money.estimate_usd == scans.on_demand_usd > 0
    settings = svc.settings
    worst = worst_case_usage(pages=3, blank=0, scans=0, text_chars=0, max_tokens=settings.batchlane_max_tokens, reask=settings.batchlane_coverage_threshold > 0)
    assert money.worst_usd == svc.prices.cost(HAIKU, worst)
    assert money.hold_usd == 0
    sonnet = budget.retry_money(svc, fake_uow.page_forms, model_id=MODEL, pages=3)
    assert money.estimate_usd < sonnet.estimate_usd and money.worst_usd < sonnet.worst_usd  # Haiku is the cheaper model


def test_a_retrys_estimate_is_priced_in_the_page_form_the_retry_will_send(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    """The retry sends its pages in the form recorded for the model (the setting auto), and a picture's job in the
    image form: its estimate is priced so, not in the PDF form a fresh read of the setting would give (stop 47)."""
    svc = svc_on_fakes
    assert svc.settings.batchlane_page_form == forms.AUTO

    def scans_in(form: str) -> Decimal:
        config = dataclasses.replace(ConverterConfig.from_settings(svc.settings, {"modelId": HAIKU}), page_form=form)
        return priced(expected_usage(PageCounts(3, 0, 3, 0), config=config, settings=svc.settings), svc.prices, HAIKU).on_demand_usd

    assert scans_in(forms.IMAGE) != scans_in(forms.PDF), "the two forms are priced apart (else this test tells nothing)"
    assert budget.retry_money(svc, fake_uow.page_forms, model_id=HAIKU, pages=3).estimate_usd == scans_in(forms.PDF)
    assert budget.retry_money(svc, fake_uow.page_forms, model_id=HAIKU, pages=3, source_type="png").estimate_usd == scans_in(forms.IMAGE)
    fake_uow.page_forms.record_form(HAIKU, forms.IMAGE, source="refusal", detail="documents are not supported")
    assert budget.retry_money(svc, fake_uow.page_forms, model_id=HAIKU, pages=3).estimate_usd == scans_in(forms.IMAGE)


# -- a hold grown by one request ----------------------------------------------------------------------
def _growth(svc: Services, uow: FakeUnitOfWork, job_id: str) -> budget.Growth:
    job = uow.jobs.get_job(job_id)
    assert job is not None
    return budget.Growth(svc, job)


def test_a_request_grows_the_hold_when_the_month_has_room_beside_the_jobs_own_open_hold_to_the_cent(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    # The job holds 0.50 and spent 0.20 of it (0.30 still open); the month has 0.20 spent, 0.30 open, and the request
    cost = Decimal("0.14")
    job_id = _job(fake_uow, hold_usd="0.50")
    _spend(fake_uow, job_id, "0.20")
    _limit(fake_uow, usd="0.64")
    growth = _growth(svc_on_fakes, fake_uow, job_id)

    assert growth(cost) is True
    assert growth.usd == cost and _hold(fake_uow, job_id)[0] == Decimal("0.64")


def test_a_request_a_cent_past_the_months_room_is_not_granted_and_grows_nothing(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow, hold_usd="0.50")
    _spend(fake_uow, job_id, "0.20")
    _limit(fake_uow, usd="0.63")
    growth = _growth(svc_on_fakes, fake_uow, job_id)

    assert growth(Decimal("0.14")) is False
    assert growth.usd == 0 and _hold(fake_uow, job_id)[0] == Decimal("0.50")


def test_another_jobs_hold_takes_the_room_a_request_would_grow_into(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow, hold_usd="0")
    _job(fake_uow, hold_usd="9.90")  # the owner's other job
    _job(fake_uow, hold_usd="50", owner=OTHER)
    _limit(fake_uow, usd="10.00")
    growth = _growth(svc_on_fakes, fake_uow, job_id)

    assert growth(Decimal("0.11")) is False
    assert growth(Decimal("0.10")) is True
    assert growth.usd == Decimal("0.10") and _hold(fake_uow, job_id)[0] == Decimal("0.10")


def test_every_growth_of_a_chunk_is_counted_so_its_end_gives_all_of_them_back(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow, hold_usd="0")
    growth = _growth(svc_on_fakes, fake_uow, job_id)

    assert growth(Decimal("0.14")) and growth(Decimal("0.30"))

    assert growth.usd == Decimal("0.44") and _hold(fake_uow, job_id)[0] == Decimal("0.44")
    budget.close_window(svc_on_fakes, job_id, budget.Window(), spent=Decimal("0.05"), grown=growth.usd)
    assert _hold(fake_uow, job_id)[0] == Decimal("0.05")  # what was spent stays held, the rest goes back


def test_a_job_with_no_open_hold_never_grows_one(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    none = _job(fake_uow, hold_usd=None)
    ended = _job(fake_uow, hold_usd="0.50")
    assert fake_uow.ledger.close_hold(ended, outcome="released", settled_usd=Decimal(0))  # its hold has an outcome: the job ended

    for job_id in (none, ended):
        growth = _growth(svc_on_fakes, fake_uow, job_id)
        assert growth(Decimal("0.14")) is False and growth.usd == 0
    assert fake_uow.ledger.get_hold(none) is None and _hold(fake_uow, ended)[0] == Decimal("0.50")


# -- resume --------------------------------------------------------------------------------------------
def _paused_with_open_hold(svc: Services, uow: FakeUnitOfWork) -> str:
    """Paused with 0.50 of its 1.00 hold spent and the request it could not send, 0.60, bigger than the 0.50 left."""
    job_id = _job(uow, hold_usd="1.00")
    assert uow.budgets.reserve(job_id, Decimal("0.50")) is True
    _spend(uow, job_id, "0.50")
    assert uow.budgets.reserve(job_id, Decimal("0.60")) is False
    _limit(uow, usd="1.00")
    job = uow.jobs.get_job(job_id)
    assert job is not None and budget.open_window(svc, job, pages=2).paused
    assert uow.budgets.mark_pause_settled(job_id)
    return job_id


def test_a_resume_counts_the_jobs_own_open_hold_once_to_the_cent(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    # The month: 0.50 spent and 0.50 still held by the job; its next request needs 0.60, of which its hold has 0.50
    job_id = _paused_with_open_hold(svc_on_fakes, fake_uow)
    _job(fake_uow, hold_usd="3", owner=OTHER)
    _limit(fake_uow, usd="1.09")

    with pytest.raises(BudgetExceeded) as refused:
        budget.resume_job(svc_on_fakes, OWNER, job_id)
    assert str(refused.value) == "Resuming needs room for its next request, up to 0.60 USD; 0.59 USD of this month's budget of 1.09 USD is left."

    _limit(fake_uow, usd="1.10")
    answer = budget.resume_job(svc_on_fakes, OWNER, job_id)

    assert answer == {"jobId": job_id, "status": "processing", "holdUsd": "1.000000", "spentUsd": "0.500000", "resume": 1}
    assert ("resume", f"{job_id}-1") in svc_on_fakes.workflows.started  # type: ignore[attr-defined]


def test_a_resume_while_its_running_chunks_finish_is_refused_until_the_pause_settles(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow, hold_usd="0.10")
    assert fake_uow.budgets.reserve(job_id, Decimal("0.50")) is False
    _limit(fake_uow, usd="0.10")
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None and budget.open_window(svc_on_fakes, job, pages=2).paused

    with pytest.raises(Conflict) as refused:
        budget.resume_job(svc_on_fakes, OWNER, job_id)

    assert refused.value.error_id == "PAUSE_DRAINING"
    assert str(refused.value) == "The job's running chunks are still finishing; resume it in a minute."
    assert fake_uow.jobs.get_job(job_id).status == JobStatus.PAUSED_BUDGET  # type: ignore[union-attr]


def _paused_without_hold(uow: FakeUnitOfWork) -> str:
    """A job paused before holds existed: no hold row at all, its pause settled."""
    job_id = _job(uow, status=JobStatus.PAUSED_BUDGET, hold_usd=None)
    assert uow.budgets.mark_pause_settled(job_id)
    return job_id


def test_a_job_paused_without_a_hold_resumes_when_the_month_has_room_for_the_smallest_request(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    cheapest = budget.cheapest_request_usd(svc_on_fakes, MODEL)
    job_id = _paused_without_hold(fake_uow)
    _limit(fake_uow, usd=str(cheapest))

    answer = budget.resume_job(svc_on_fakes, OWNER, job_id)

    assert answer == {"jobId": job_id, "status": "processing", "holdUsd": "0", "spentUsd": "0", "resume": 1}
    assert fake_uow.ledger.get_hold(job_id) is None


def test_a_job_paused_without_a_hold_stays_paused_a_cent_short_of_the_smallest_request(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    cheapest = budget.cheapest_request_usd(svc_on_fakes, MODEL)
    job_id = _paused_without_hold(fake_uow)
    short = (cheapest - Decimal("0.01")).quantize(Decimal("0.01"))
    _limit(fake_uow, usd=str(short))

    with pytest.raises(BudgetExceeded) as refused:
        budget.resume_job(svc_on_fakes, OWNER, job_id)

    assert str(refused.value) == (
        f"Resuming needs room for its next request, up to {cheapest:.2f} USD; {short:.2f} USD of this month's budget of {short} USD is left."
    )
    assert fake_uow.jobs.get_job(job_id).status == JobStatus.PAUSED_BUDGET  # type: ignore[union-attr]


# -- the worst case of pages with no known text --------------------------------------------------------
def test_pages_retried_with_the_re_ask_off_are_held_at_one_ask_each(svc_on_fakes: Services) -> None:
    asked_twice = budget.worst_case_pages_usd(svc_on_fakes, model_id=MODEL, pages=3)
    svc_on_fakes.settings = svc_on_fakes.settings.model_copy(update={"batchlane_coverage_threshold": 0.0})  # type: ignore[misc]

    once = budget.worst_case_pages_usd(svc_on_fakes, model_id=MODEL, pages=3)

    settings = svc_on_fakes.settings
    assert once == svc_on_fakes.prices.cost(
        MODEL, worst_case_usage(pages=3, blank=0, scans=0, text_chars=0, max_tokens=settings.batchlane_max_tokens, reask=False)
    )
    assert once < asked_twice


# -- a chunk start's window -------------------------------------------------------------------------------
def _start(svc: Services, uow: FakeUnitOfWork, job_id: str, pages: int = 2) -> budget.Window:
    job = uow.jobs.get_job(job_id)
    assert job is not None
    return budget.open_window(svc, job, pages=pages)


@pytest.mark.parametrize("pages", [1, 2, 5])
def test_a_chunk_start_grows_the_hold_by_its_window_beside_the_jobs_own_spend_to_the_cent(svc_on_fakes: Services, fake_uow: FakeUnitOfWork, pages: int) -> None:
    # The job holds 0.50 and spent 0.20 of it: the month counts 0.20 spent and 0.30 open, and room for the window exactly
    window = chunk_window_usd(svc_on_fakes, MODEL, pages)
    job_id = _job(fake_uow, hold_usd="0.50")
    _spend(fake_uow, job_id, "0.20")
    _limit(fake_uow, usd=str(Decimal("0.50") + window))

    assert _start(svc_on_fakes, fake_uow, job_id, pages) == budget.Window(window, False)
    assert _hold(fake_uow, job_id)[0] == Decimal("0.50") + window


def test_a_chunk_start_with_nothing_to_convert_opens_no_window_and_never_pauses(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow, hold_usd="0.10")
    assert fake_uow.budgets.reserve(job_id, Decimal("0.50")) is False  # a request that did not fit
    _limit(fake_uow, usd="0.10")

    assert _start(svc_on_fakes, fake_uow, job_id, pages=0) == budget.Window()
    assert fake_uow.jobs.get_job(job_id).status == JobStatus.PROCESSING  # type: ignore[union-attr]


def test_a_job_with_no_open_hold_gets_no_window(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    none = _job(fake_uow, hold_usd=None)
    ended = _job(fake_uow, hold_usd="0.50")
    assert fake_uow.ledger.close_hold(ended, outcome="released", settled_usd=Decimal(0))

    assert _start(svc_on_fakes, fake_uow, none) == budget.Window() and _start(svc_on_fakes, fake_uow, ended) == budget.Window()
    assert fake_uow.ledger.get_hold(none) is None and _hold(fake_uow, ended)[0] == Decimal("0.50")


def test_the_request_that_did_not_fit_runs_when_what_is_left_meets_it_exactly(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow, hold_usd="1.00")
    assert fake_uow.budgets.reserve(job_id, Decimal("0.50")) is True
    assert fake_uow.budgets.reserve(job_id, Decimal("0.60")) is False  # 0.50 left, the request wants 0.60
    _limit(fake_uow, usd="1.10")  # the month: 1.00 held, room for 0.10 more

    window = _start(svc_on_fakes, fake_uow, job_id)

    assert window == budget.Window(Decimal("0.10"), False)  # 0.50 + 0.10 meets 0.60: not paused
    assert _hold(fake_uow, job_id)[0] == Decimal("1.10")


def test_a_pause_names_the_owners_other_jobs_holding_the_rest_never_itself_and_grows_nothing(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow, hold_usd="1.00")
    assert fake_uow.budgets.reserve(job_id, Decimal("0.50")) is True
    assert fake_uow.budgets.reserve(job_id, Decimal("0.60")) is False
    other = _job(fake_uow, hold_usd="2.00")
    _job(fake_uow, hold_usd="7.00", owner=OTHER)
    _limit(fake_uow, usd="3.05")  # 3.00 held: room for 0.05 more, so 0.55 left for the 0.60 request

    window = _start(svc_on_fakes, fake_uow, job_id)

    assert window == budget.Window(Decimal(0), True)
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None and job.status == JobStatus.PAUSED_BUDGET
    assert job.error_message is not None and job.error_message.startswith(
        "Paused: its next request may cost up to 0.60 USD and 0.55 USD of this month's budget of 3.05 USD is left. "
        f"Your other conversions hold the rest: book.pdf ({other}) holds 2.00 USD. "
    )
    assert job_id not in job.error_message
    budget.close_window(svc_on_fakes, job_id, window, spent=Decimal(0))
    assert _hold(fake_uow, job_id)[0] == Decimal("1.00")  # the pause granted nothing, and nothing is given back


def test_a_job_that_booked_more_than_its_requests_reserved_pauses_on_what_it_booked(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    # The ledger is the truth: 0.80 booked while only 0.10 stays reserved, so 0.20 of the 1.00 hold is left for a 0.60 request
    job_id = _job(fake_uow, hold_usd="1.00")
    assert fake_uow.budgets.reserve(job_id, Decimal("0.50")) is True
    assert fake_uow.budgets.reserve(job_id, Decimal("0.60")) is False
    fake_uow.budgets.settle_reservation(job_id, reserved=Decimal("0.50"), actual=Decimal("0.10"))
    _spend(fake_uow, job_id, "0.80")
    _limit(fake_uow, usd="1.00")

    assert _start(svc_on_fakes, fake_uow, job_id) == budget.Window(Decimal(0), True)
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None and job.status == JobStatus.PAUSED_BUDGET
    assert job.error_message is not None and job.error_message.startswith("Paused: its next request may cost up to 0.60 USD and 0.20 USD")
