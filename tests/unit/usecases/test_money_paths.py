"""The funds hold's per-request counter and the job's worst-case hold (filejob/budget.py) on the fakes, with no
server: the money paths `make mutate` found reached by no fast test (docs/testing.md, "Mutation testing")."""

from __future__ import annotations

from decimal import Decimal

import pytest
from usecase_fakes import MODEL

from batchlane.claude import ConverterConfig
from batchlane.domain.budget import request_worst_usage
from batchlane.domain.cost import Usage
from batchlane.filejob import budget
from batchlane.filejob.budget import HoldReached, JobHold
from batchlane.pdf.split import Page
from batchlane.pdf.survey import PageSurvey
from batchlane.ports import Services
from fakes import FakeUnitOfWork

JOB = "00000000-0000-4000-8000-000000000001"


def _page(number: int, *, chars: int = 1000, known: bool = True) -> Page:
    return Page(number=number, chunk_index=0, pdf_bytes=b"", blank=False, text_chars=chars, estimate_known=known)


def _hold(svc: Services, uow: FakeUnitOfWork, amount: Decimal, reached: list[str]) -> JobHold:
    uow.ledger.place_hold(job_id=JOB, owner_id="owner-1", amount_usd=amount, hours=30)
    return JobHold(
        uow.budgets, JOB, prices=svc.prices, model_id=MODEL, max_tokens=svc.settings.batchlane_max_tokens, on_reached=lambda: reached.append("reached")
    )


def _worst(svc: Services, chars: list[int | None]) -> Decimal:
    return svc.prices.cost(MODEL, request_worst_usage(chars, max_tokens=svc.settings.batchlane_max_tokens))


def test_each_request_reserves_its_worst_case_and_the_one_that_does_not_fit_is_refused_once(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    one = _worst(svc_on_fakes, [1000])
    reached: list[str] = []
    hold = _hold(svc_on_fakes, fake_uow, one * 2, reached)
    assert hold.reserve([_page(1)]) == one
    assert hold.reserve([_page(2)]) == one
    with pytest.raises(HoldReached):
        hold.reserve([_page(3)])
    assert reached == ["reached"]
    held = fake_uow.ledger.get_hold(JOB)
    assert held is not None and held.committed_usd == one * 2  # the refused one took nothing


def test_a_request_over_several_pages_reserves_their_inputs_and_one_answer(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    hold = _hold(svc_on_fakes, fake_uow, Decimal(100), [])
    taken = hold.reserve([_page(1, chars=400), _page(2, chars=4000)])
    assert taken == _worst(svc_on_fakes, [400, 4000])
    assert _worst(svc_on_fakes, [400]) < taken < _worst(svc_on_fakes, [400]) + _worst(svc_on_fakes, [4000])  # one answer, not two


def test_a_page_with_no_estimate_is_reserved_at_the_whole_context(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    hold = _hold(svc_on_fakes, fake_uow, Decimal(100), [])
    unknown = hold.reserve([_page(1, chars=0, known=False)])
    assert unknown == _worst(svc_on_fakes, [None])
    assert unknown > _worst(svc_on_fakes, [200_000 // 4])  # more than any page whose text is counted


def test_a_reservation_settles_at_the_real_cost_and_frees_the_rest_for_the_next_request(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    one = _worst(svc_on_fakes, [1000])
    hold = _hold(svc_on_fakes, fake_uow, one + one / 2, [])
    reserved = hold.reserve([_page(1)])
    with pytest.raises(HoldReached):
        hold.reserve([_page(2)])  # half a worst case left
    hold.settle(reserved, Decimal("0.001"))
    held = fake_uow.ledger.get_hold(JOB)
    assert held is not None and held.committed_usd == Decimal("0.001")
    assert hold.reserve([_page(2)]) == one  # the real cost was small: the next fits


def test_a_job_with_no_open_hold_reserves_and_settles_nothing(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    reached: list[str] = []
    hold = JobHold(fake_uow.budgets, JOB, prices=svc_on_fakes.prices, model_id=MODEL, max_tokens=8192, on_reached=lambda: reached.append("x"))
    assert hold.reserve([_page(1)]) == Decimal(0)
    hold.settle(Decimal(0), Decimal("0.5"))
    assert fake_uow.ledger.get_hold(JOB) is None and reached == []


def _survey(pages: int, *, blank: int = 0, scans: int = 0, chars: int = 0) -> PageSurvey:
    return PageSurvey(pages=pages, blank=blank, text_chars_nonblank=chars, scans=scans, inspected=pages)


def test_a_jobs_worst_case_is_priced_from_its_pages_and_its_first_hold_is_what_its_lane_submits(svc_on_fakes: Services) -> None:
    svc = svc_on_fakes
    config = ConverterConfig.from_settings(svc.settings)
    ten = budget.submit_money(svc, _survey(10, chars=20_000), config=config, parked=False)
    assert ten.worst_usd == svc.prices.cost(MODEL, budget.worst_case_survey_usage(_survey(10, chars=20_000), svc.settings))
    assert ten.hold_usd == 0, "on-demand: nothing held until a chunk starts"
    assert 0 < ten.estimate_usd < ten.worst_usd
    assert budget.submit_money(svc, _survey(20, chars=40_000), config=config, parked=False).worst_usd > ten.worst_usd
    assert budget.submit_money(svc, _survey(10, blank=4, chars=20_000), config=config, parked=False).worst_usd < ten.worst_usd  # a blank page is never sent
    blank = budget.submit_money(svc, _survey(10, blank=10), config=config, parked=True)
    assert (blank.worst_usd, blank.hold_usd, blank.estimate_usd) == (0, 0, 0)
    parked = budget.submit_money(svc, _survey(10, chars=20_000), config=config, parked=True)
    # parked: its ten records at their worst (a whole answer each) at the batch price, all billed before its next check
    assert parked.hold_usd == svc.prices.cost(MODEL, Usage(10 * request_worst_usage([2000], max_tokens=8192).input_tokens, 10 * 8192), batch=True)
