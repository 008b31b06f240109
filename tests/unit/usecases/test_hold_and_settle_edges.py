"""A job's money at its edges (filejob/budget.py, filejob/settle.py) on the fakes, with no server: the split's
check against the owner's own limits and other jobs, the hold of pages with no estimate, a pause and a resume at the
last cent, and what Settle and a failure record and announce."""

from __future__ import annotations

from decimal import Decimal

import pytest
from usecase_fakes import MODEL

from batchlane.domain import status as st
from batchlane.domain.budget import IMAGE_TOKENS_PER_PAGE, PAGE_TEXT_TOKENS_MIN, worst_case_usage
from batchlane.domain.cost import Usage
from batchlane.domain.errors import BudgetExceeded, Conflict, LimitReached, NotFound
from batchlane.domain.status import JobStatus
from batchlane.filejob import budget
from batchlane.filejob.settle import fail_job, settle_job
from batchlane.pdf.split import Page, plan_chunks
from batchlane.ports import Services
from fakes import FakeUnitOfWork

OWNER = "owner-1"
PAGES, PER_CHUNK = 4, 2


def _job(uow: FakeUnitOfWork, *, status: str = JobStatus.PROCESSING, hold_usd: str = "1.00", owner: str = OWNER, pages: int = PAGES) -> str:
    file_id = uow.jobs.insert_file(owner_id=owner, name="book.pdf", s3_key=f"uploads/{owner}/book.pdf", size_bytes=100).id
    job = uow.jobs.insert_job(
        file_id=file_id, owner_id=owner, status=status, options={}, model_id=MODEL, total_pages=pages, pages_per_chunk=PER_CHUNK,
        chunks=plan_chunks(pages, PER_CHUNK),
    )  # fmt: skip
    assert uow.jobs.move_file(file_id, st.convert())
    uow.ledger.place_hold(job_id=job.id, owner_id=owner, amount_usd=Decimal(hold_usd), hours=30)
    return job.id


def _spend(uow: FakeUnitOfWork, job_id: str, cost: str, chunk_index: int = 0) -> None:
    uow.ledger.add_chunk_cost(job_id=job_id, chunk_index=chunk_index, model_id=MODEL, input_tokens=100, output_tokens=50, cost_usd=Decimal(cost), metadata={})


def _limit(uow: FakeUnitOfWork, *, usd: str | None = None, pages: int | None = None) -> None:
    uow.budgets.set_override(OWNER, usd_per_month=Decimal(usd) if usd is not None else None, max_live_jobs=None, max_live_pages=pages, updated_by="admin")


def _events(svc: Services, job_id: str) -> list[str]:
    return [detail["status"] for _, detail in svc.bus.events if detail.get("jobId") == job_id]  # type: ignore[attr-defined]


def _pause(svc: Services, uow: FakeUnitOfWork, job_id: str, *, wanted: str = "0.50") -> None:
    """A request of ``wanted`` did not fit the job's hold, and the owner's month has no room: the next chunk start pauses."""
    assert uow.budgets.reserve(job_id, Decimal(wanted)) is False
    job = uow.jobs.get_job(job_id)
    assert job is not None
    assert budget.open_window(svc, job, pages=PER_CHUNK).paused is True


def _paused(svc: Services, uow: FakeUnitOfWork, *, hold_usd: str = "0.10", spent: str = "0.10") -> str:
    """A job paused at its funds hold (its owner's month spent to the cent), the pause settled: it may be resumed."""
    job_id = _job(uow, hold_usd=hold_usd)
    assert uow.budgets.reserve(job_id, Decimal(spent)) is True  # a request sent and booked: reserved, then what it cost
    uow.budgets.settle_reservation(job_id, reserved=Decimal(spent), actual=Decimal(spent))
    _spend(uow, job_id, spent)
    _limit(uow, usd=hold_usd)
    _pause(svc, uow, job_id)
    settle_job(svc, job_id)
    return job_id


def _money(worst: str, *, estimate: str = "0.10", hold: str = "0") -> budget.SubmitMoney:
    return budget.SubmitMoney(Decimal(estimate), Decimal(worst), Decimal(hold))


# -- the split's check ----------------------------------------------------------------------------
def test_the_split_check_applies_the_owners_own_raised_page_cap(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow, pages=PAGES)
    with pytest.raises(LimitReached):
        budget.check_submit(svc_on_fakes, fake_uow.budgets, owner_id=OWNER, job_id=job_id, money=_money("1"), pages=25_000)  # the default: 20,000

    _limit(fake_uow, pages=30_000)

    budget.check_submit(svc_on_fakes, fake_uow.budgets, owner_id=OWNER, job_id=job_id, money=_money("1"), pages=25_000)  # no refusal now


def test_the_split_check_counts_the_owners_other_jobs_but_not_the_job_being_split(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    _job(fake_uow, hold_usd="6")
    splitting = _job(fake_uow, hold_usd="3")
    _limit(fake_uow, usd="10", pages=2 * PAGES)

    budget.check_submit(svc_on_fakes, fake_uow.budgets, owner_id=OWNER, job_id=splitting, money=_money("4"), pages=PAGES)  # 6 + 4, its own 3 aside

    with pytest.raises(BudgetExceeded) as refused:
        budget.check_submit(svc_on_fakes, fake_uow.budgets, owner_id=OWNER, job_id=splitting, money=_money("4.01", hold="1.50"), pages=PAGES)
    assert str(refused.value).startswith(
        "This conversion is estimated at 0.10 USD and could cost up to 4.01 USD at worst (it holds 1.50 USD of your budget at a time "
        "while it runs), but only 4.00 USD of this month's budget is left."
    )


def test_the_split_check_refuses_pages_past_the_cap_with_the_owners_other_live_jobs(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    _job(fake_uow, hold_usd="0")
    splitting = _job(fake_uow, hold_usd="0")
    _limit(fake_uow, pages=PAGES + 3)

    with pytest.raises(LimitReached):
        budget.check_submit(svc_on_fakes, fake_uow.budgets, owner_id=OWNER, job_id=splitting, money=_money("0"), pages=PAGES)


# -- holds ----------------------------------------------------------------------------------------
def test_pages_with_no_known_text_are_each_held_at_a_text_pages_bounds(svc_on_fakes: Services) -> None:
    settings = svc_on_fakes.settings
    worst = worst_case_usage(pages=3, blank=0, scans=0, text_chars=0, max_tokens=settings.batchlane_max_tokens, reask=settings.batchlane_coverage_threshold > 0)

    assert budget.worst_case_pages_usd(svc_on_fakes, model_id=MODEL, pages=3) == svc_on_fakes.prices.cost(MODEL, worst)


def test_the_smallest_request_is_one_page_its_text_bound_image_and_prompt_with_a_whole_answer(svc_on_fakes: Services) -> None:
    answer = svc_on_fakes.settings.batchlane_max_tokens

    assert budget.cheapest_request_usd(svc_on_fakes, MODEL) == svc_on_fakes.prices.cost(
        MODEL, Usage(PAGE_TEXT_TOKENS_MIN + IMAGE_TOKENS_PER_PAGE + 400, answer)
    )


def test_a_job_with_nothing_left_to_send_never_pauses_whatever_its_hold(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    # Issue 38.5: a blank document holds 0 and sends nothing; it paused at 0 and again on every resume
    job_id = _job(fake_uow, hold_usd="0")
    _limit(fake_uow, usd="0")
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None

    assert budget.open_window(svc_on_fakes, job, pages=PER_CHUNK) == budget.Window()
    assert fake_uow.jobs.get_job(job_id).status == JobStatus.PROCESSING  # type: ignore[union-attr]


def _hold_of(svc: Services, job_id: str, growth: budget.Growth, reached: list[bool]) -> budget.JobHold:
    return budget.JobHold(
        svc.page_thread_database().budgets, job_id, prices=svc.prices, model_id=MODEL, max_tokens=svc.settings.batchlane_max_tokens,
        on_reached=lambda: reached.append(True), grow=growth,
    )  # fmt: skip


def test_a_request_beyond_the_window_grows_the_hold_while_the_month_has_room_and_the_chunk_end_gives_it_back(
    svc_on_fakes: Services, fake_uow: FakeUnitOfWork
) -> None:
    # A refused request halved and asked again (or a denser page than the window's bound): its worst case is beyond what
    # the chunk's window left. It used to stop the chunk, and its continuation sent the same group again, each time
    # paying for it and never converting a page (a 9-page job with 2 refused pages spent 2.37 USD in 20 continuations).
    job_id = _job(fake_uow, hold_usd="0")
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None
    growth, reached = budget.Growth(svc_on_fakes, job), []
    hold = _hold_of(svc_on_fakes, job_id, growth, reached)
    page = Page(number=1, chunk_index=0, pdf_bytes=b"", blank=False, text_chars=4000)

    reserved = hold.reserve([page])

    assert reserved > 0 and growth.usd == reserved and not reached
    assert fake_uow.ledger.get_hold(job_id).amount_usd == reserved  # type: ignore[union-attr]
    hold.settle(reserved, Decimal("0.01"))  # it cost a cent
    budget.close_window(svc_on_fakes, job_id, budget.Window(), spent=Decimal("0.01"), grown=growth.usd)
    assert fake_uow.ledger.get_hold(job_id).amount_usd == Decimal("0.01")  # type: ignore[union-attr]  # the rest given back


def test_a_request_the_month_cannot_carry_stops_the_chunk_and_grows_nothing(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow, hold_usd="0")
    _limit(fake_uow, usd="0.05")  # less than one request's worst case
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None
    growth, reached = budget.Growth(svc_on_fakes, job), []
    hold = _hold_of(svc_on_fakes, job_id, growth, reached)

    with pytest.raises(budget.HoldReached):
        hold.reserve([Page(number=1, chunk_index=0, pdf_bytes=b"", blank=False, text_chars=4000)])

    assert reached == [True] and growth.usd == 0
    assert fake_uow.ledger.get_hold(job_id).amount_usd == 0  # type: ignore[union-attr]
    assert budget.open_window(svc_on_fakes, job, pages=PER_CHUNK).paused  # its next start pauses the job, saying why


# -- resume ---------------------------------------------------------------------------------------
def test_resuming_a_job_that_is_not_paused_is_refused_naming_its_state(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow)

    with pytest.raises(Conflict) as refused:
        budget.resume_job(svc_on_fakes, OWNER, job_id)

    assert refused.value.error_id == "NOT_PAUSED"
    assert str(refused.value) == "The job is processing, not paused for its budget."


def test_resuming_a_job_that_does_not_exist_names_it(svc_on_fakes: Services) -> None:
    missing = "00000000-0000-4000-8000-00000000dead"

    with pytest.raises(NotFound) as refused:
        budget.resume_job(svc_on_fakes, OWNER, missing)

    assert refused.value.error_id == "JOB_NOT_FOUND" and missing in str(refused.value)


def test_a_resume_needs_room_for_the_request_that_did_not_fit_to_the_last_cent(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _paused(svc_on_fakes, fake_uow, hold_usd="0.10", spent="0.10")  # the request of 0.50 did not fit
    _limit(fake_uow, usd="0.60")  # its spend, 0.10, and that request: exactly

    answer = budget.resume_job(svc_on_fakes, OWNER, job_id)

    assert answer["status"] == "processing" and Decimal(answer["spentUsd"]) == Decimal("0.10")


def test_a_resume_over_the_budget_says_what_it_needs_and_what_is_left(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _paused(svc_on_fakes, fake_uow)
    _limit(fake_uow, usd="0.15")

    with pytest.raises(BudgetExceeded) as refused:
        budget.resume_job(svc_on_fakes, OWNER, job_id)

    assert str(refused.value) == "Resuming needs room for its next request, up to 0.50 USD; 0.05 USD of this month's budget of 0.15 USD is left."


# -- settle and fail --------------------------------------------------------------------------------
def test_settle_announces_a_pause_on_every_try_so_a_lost_event_is_made_good(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow, hold_usd="0.10")
    _spend(fake_uow, job_id, "0.10")
    _limit(fake_uow, usd="0.10")
    _pause(svc_on_fakes, fake_uow, job_id)

    assert settle_job(svc_on_fakes, job_id) == {"jobId": job_id, "status": "paused_budget", "settled": False}
    settle_job(svc_on_fakes, job_id)

    assert _events(svc_on_fakes, job_id) == ["paused_budget", "paused_budget"]


def test_the_recovery_sweep_announces_a_pause_on_its_first_pass_and_then_answers_quietly(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow, hold_usd="0.10")
    _spend(fake_uow, job_id, "0.10")
    _limit(fake_uow, usd="0.10")
    _pause(svc_on_fakes, fake_uow, job_id)

    settle_job(svc_on_fakes, job_id, once=True)
    assert _events(svc_on_fakes, job_id) == ["paused_budget"]

    assert settle_job(svc_on_fakes, job_id, once=True) == {"jobId": job_id, "status": "paused_budget", "settled": False}
    assert _events(svc_on_fakes, job_id) == ["paused_budget"]


def _assembled_whole(uow: FakeUnitOfWork, job_id: str) -> None:
    for chunk in uow.jobs.get_chunks(job_id):
        assert uow.jobs.claim_chunk(job_id, chunk.chunk_index, "w") is not None
        assert uow.jobs.complete_chunk(
            job_id, chunk.chunk_index, "w", pages_done=chunk.last_page - chunk.first_page + 1, pages_failed=0, pages_batch=0, cost_usd=Decimal("0.1"),
            result_key=f"r{chunk.chunk_index}",
        )  # fmt: skip
        _spend(uow, job_id, "0.1", chunk.chunk_index)
    assert uow.jobs.move_job(job_id, st.assemble(), markdown_key="md", pages_converted=PAGES, pages_failed=0)


def test_a_job_with_every_page_converted_settles_with_no_error(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow)
    _assembled_whole(fake_uow, job_id)

    answer = settle_job(svc_on_fakes, job_id)

    assert answer == {"jobId": job_id, "status": "completed", "totalCostUsd": "0.200000", "settled": True}
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None and (job.status, job.error_id, job.error_message) == ("completed", None, None)


def test_a_failed_job_keeps_its_message_cut_to_500_characters_and_is_announced(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow)
    message = "x" * 600

    fail_job(svc_on_fakes, job_id, error_id="CHUNK_FAILED", message=message)

    job = fake_uow.jobs.get_job(job_id)
    assert job is not None and job.error_message == "x" * 500
    assert _events(svc_on_fakes, job_id) == ["failed"]
