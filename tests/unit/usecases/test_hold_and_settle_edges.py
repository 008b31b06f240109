"""A job's money at its edges (conversion/budget.py, conversion/settle.py) on the fakes, with no server: the split's
check against the owner's own limits and other jobs, the hold of pages with no estimate, a pause and a resume at the
last cent, and what Settle and a failure record and announce."""

from __future__ import annotations

from decimal import Decimal

import pytest
from usecase_fakes import MODEL

from batchlane.conversion import budget
from batchlane.conversion.settle import fail_job, settle_job
from batchlane.domain import status as st
from batchlane.domain.budget import raised_hold, request_worst_usage
from batchlane.domain.cost import Usage
from batchlane.domain.errors import BudgetExceeded, Conflict, LimitReached, NotFound
from batchlane.domain.status import JobStatus
from batchlane.pdf.split import plan_chunks
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


def _paused(svc: Services, uow: FakeUnitOfWork, *, hold_usd: str = "0.10", spent: str = "0.10") -> str:
    """A job paused at its funds hold, the pause settled: it may be resumed."""
    job_id = _job(uow, hold_usd=hold_usd)
    _spend(uow, job_id, spent)
    assert budget.pause_at_hold(svc, job_id) is True
    settle_job(svc, job_id)
    return job_id


# -- the split's check ----------------------------------------------------------------------------
def test_the_split_check_applies_the_owners_own_raised_page_cap(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow, pages=PAGES)
    with pytest.raises(LimitReached):
        budget.check_split(svc_on_fakes, fake_uow.budgets, owner_id=OWNER, job_id=job_id, hold_usd=Decimal(1), pages=25_000)  # the default: 20,000

    _limit(fake_uow, pages=30_000)

    budget.check_split(svc_on_fakes, fake_uow.budgets, owner_id=OWNER, job_id=job_id, hold_usd=Decimal(1), pages=25_000)  # no refusal now


def test_the_split_check_counts_the_owners_other_jobs_but_not_the_job_being_split(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    _job(fake_uow, hold_usd="6")
    splitting = _job(fake_uow, hold_usd="3")
    _limit(fake_uow, usd="10", pages=2 * PAGES)

    budget.check_split(svc_on_fakes, fake_uow.budgets, owner_id=OWNER, job_id=splitting, hold_usd=Decimal(4), pages=PAGES)  # 6 + 4, its own 3 aside

    with pytest.raises(BudgetExceeded):
        budget.check_split(svc_on_fakes, fake_uow.budgets, owner_id=OWNER, job_id=splitting, hold_usd=Decimal("4.01"), pages=PAGES)


def test_the_split_check_refuses_pages_past_the_cap_with_the_owners_other_live_jobs(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    _job(fake_uow, hold_usd="0")
    splitting = _job(fake_uow, hold_usd="0")
    _limit(fake_uow, pages=PAGES + 3)

    with pytest.raises(LimitReached):
        budget.check_split(svc_on_fakes, fake_uow.budgets, owner_id=OWNER, job_id=splitting, hold_usd=Decimal(0), pages=PAGES)


# -- holds ----------------------------------------------------------------------------------------
def test_pages_with_no_known_text_are_each_held_at_a_whole_context_request(svc_on_fakes: Services) -> None:
    one = request_worst_usage([None], max_tokens=svc_on_fakes.settings.batchlane_max_tokens)

    held = budget.worst_case_pages_hold(svc_on_fakes, model_id=MODEL, pages=3)

    assert held == svc_on_fakes.prices.cost(MODEL, Usage(3 * one.input_tokens, 3 * one.output_tokens))


def test_the_smallest_request_is_one_page_image_and_prompt_with_a_whole_answer(svc_on_fakes: Services) -> None:
    answer = svc_on_fakes.settings.batchlane_max_tokens

    assert budget.cheapest_request_usd(svc_on_fakes, MODEL) == svc_on_fakes.prices.cost(MODEL, Usage(1600 + 400, answer))


def test_without_a_model_a_chunk_pauses_only_once_the_spend_reaches_the_hold(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow, hold_usd="0.50")
    _spend(fake_uow, job_id, "0.20")  # 0.30 left: less than a dollar, more than nothing

    assert budget.pause_at_hold(svc_on_fakes, job_id) is False

    job = fake_uow.jobs.get_job(job_id)
    assert job is not None and job.status == JobStatus.PROCESSING


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


def test_a_resume_that_uses_the_monthly_budget_to_the_last_cent_is_allowed(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    # Paused with 0.05 of its 0.50 hold unspent (too little for one more request): that rest is not counted twice
    job_id = _job(fake_uow, hold_usd="0.50")
    assert fake_uow.budgets.reserve(job_id, Decimal("0.45")) is True  # requests sent and booked: reserved, then what they cost
    fake_uow.budgets.settle_reservation(job_id, reserved=Decimal("0.45"), actual=Decimal("0.45"))
    _spend(fake_uow, job_id, "0.45")
    assert budget.pause_at_hold(svc_on_fakes, job_id, model_id=MODEL) is True
    settle_job(svc_on_fakes, job_id)
    hold = raised_hold(spent=Decimal("0.45"), hold=Decimal("0.50"), pages_done=0, pages_total=PAGES)
    _limit(fake_uow, usd=str(hold))  # its spend this month, 0.45, and the 'hold - spend' the raised hold may add

    answer = budget.resume_job(svc_on_fakes, OWNER, job_id)

    assert (answer["status"], answer["holdUsd"]) == ("processing", str(hold))


def test_a_resume_over_the_budget_says_what_it_needs_and_what_is_left(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _paused(svc_on_fakes, fake_uow)
    _limit(fake_uow, usd="0.15")
    hold = raised_hold(spent=Decimal("0.10"), hold=Decimal("0.10"), pages_done=0, pages_total=PAGES)

    with pytest.raises(BudgetExceeded) as refused:
        budget.resume_job(svc_on_fakes, OWNER, job_id)

    assert str(refused.value) == f"Resuming needs up to {hold - Decimal('0.10'):.2f} USD more; this month's budget of 0.15 USD has 0.05 USD left."


def test_a_paused_job_whose_hold_was_closed_resumes_with_a_hold_from_its_spend_alone(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _paused(svc_on_fakes, fake_uow, hold_usd="0.10", spent="0.10")
    assert fake_uow.ledger.close_hold(job_id, outcome="released", settled_usd=Decimal(0))

    answer = budget.resume_job(svc_on_fakes, OWNER, job_id)

    assert answer["holdUsd"] == str(raised_hold(spent=Decimal("0.10"), hold=Decimal(0), pages_done=0, pages_total=PAGES))
    assert Decimal(answer["holdUsd"]) < Decimal(1)


# -- settle and fail --------------------------------------------------------------------------------
def test_settle_announces_a_pause_on_every_try_so_a_lost_event_is_made_good(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow, hold_usd="0.10")
    _spend(fake_uow, job_id, "0.10")
    assert budget.pause_at_hold(svc_on_fakes, job_id) is True

    assert settle_job(svc_on_fakes, job_id) == {"jobId": job_id, "status": "paused_budget", "settled": False}
    settle_job(svc_on_fakes, job_id)

    assert _events(svc_on_fakes, job_id) == ["paused_budget", "paused_budget"]


def test_the_recovery_sweep_announces_a_pause_on_its_first_pass_and_then_answers_quietly(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow, hold_usd="0.10")
    _spend(fake_uow, job_id, "0.10")
    assert budget.pause_at_hold(svc_on_fakes, job_id) is True

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
