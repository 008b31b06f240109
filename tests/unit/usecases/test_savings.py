"""What a job would have cost all on-demand, and its saving (issue 38.1): one definition (domain/savings.py), signed,
the same in the API's live block, the webhooks and the report; pages served by batch priced as the on-demand engine
would bill them, not the billed tokens re-priced."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st
from usecase_fakes import MODEL, new_job

from batchlane.api.live import with_live
from batchlane.api.usecases import job_conversion
from batchlane.claude import ConverterConfig, PageResult
from batchlane.claude.multipage import MULTI_PAGE_INSTRUCTION
from batchlane.domain.cost import Usage
from batchlane.domain.savings import BATCH_SERVED_KEY, ServedAnswer, ledger_money, on_demand_groups, on_demand_usage
from batchlane.filejob.savings import batch_answers_at_on_demand, marker_tokens, prompt_tokens, unused_batch_answers
from batchlane.ondemand.planner import PlannedPage, RequestPlan
from batchlane.pdf.split import Page
from batchlane.ports import Services


def _book(svc: Services, job_id: str, *, on_demand: str, batch_share: str = "0", served_at_on_demand: str = "0") -> None:
    with svc.uow() as uow:
        uow.ledger.add_chunk_cost(
            job_id=job_id, chunk_index=0, model_id=MODEL, input_tokens=1, output_tokens=1, cost_usd=Decimal(on_demand),
            metadata={BATCH_SERVED_KEY: served_at_on_demand},
        )  # fmt: skip
        if Decimal(batch_share):
            row = uow.lanes.insert_lane(lane_id="00000000-0000-4000-8000-0000000000aa", model_id=MODEL, deadline_hours=24, chunks=[(job_id, 0, 50)])
            uow.ledger.add_batch_share(
                job_id=job_id, lane_row_id=int(row.id), model_id=MODEL, input_tokens=1, output_tokens=1, cost_usd=Decimal(batch_share), metadata={}
            )


def _live(svc: Services, job_id: str) -> tuple[Decimal, ...]:
    """The live block's money: cost so far, all on-demand, saving, saving %."""
    job = svc.uow().jobs.get_job(job_id)
    assert job is not None
    live = with_live(svc, job_conversion(svc, job.owner_id, job_id))["live"]
    return tuple(Decimal(live[key]) for key in ("costSoFarUsd", "onDemandUsd", "savingUsd", "savingPercent"))


def test_records_paid_and_not_used_are_a_loss_not_a_saving(svc_on_fakes: Services) -> None:
    # Given the book: a stopped batch job billed $0.84 whose answers were not used, then every page on-demand for $1.82
    job_id = new_job(svc_on_fakes, pages=117)
    _book(svc_on_fakes, job_id, on_demand="1.82", batch_share="0.84")
    live = _live(svc_on_fakes, job_id)
    # Then all on-demand is what the pages cost on-demand ($1.82), and the $0.84 is a loss (before: onDemandUsd 3.50, savingUsd 0.84)
    assert live == (Decimal("2.66"), Decimal("1.82"), Decimal("-0.84"), Decimal("-46.2"))


def test_batch_served_pages_count_at_the_on_demand_engines_price(svc_on_fakes: Services) -> None:
    job_id = new_job(svc_on_fakes, pages=10)
    _book(svc_on_fakes, job_id, on_demand="0.10", batch_share="0.40", served_at_on_demand="0.81")
    live = _live(svc_on_fakes, job_id)
    assert live == (Decimal("0.50"), Decimal("0.91"), Decimal("0.41"), Decimal("45.1"))


def test_a_group_carries_its_prompt_once_and_a_marker_per_page() -> None:
    answers = [ServedAnswer(n, Usage(2000 + n, 500)) for n in (3, 1, 2)]
    [request] = on_demand_usage(answers, page_limit=5, output_budget=6144, single_prompt_tokens=200, group_prompt_tokens=260, marker_tokens=lambda n: 5)
    assert request == Usage(3 * 1800 + 1 + 2 + 3 + 260, 3 * 505)
    # a group of one is the record itself (the single-page request the batch record is)
    assert on_demand_usage(answers[:1], page_limit=5, output_budget=6144, single_prompt_tokens=200, group_prompt_tokens=260, marker_tokens=lambda n: 5) == [
        Usage(2003, 500)
    ]


@given(st.lists(st.integers(min_value=0, max_value=9000), min_size=1, max_size=40), st.integers(min_value=1, max_value=8))
def test_the_groups_are_the_on_demand_planners_groups(outputs: list[int], limit: int) -> None:
    # Given pages whose outputs the planner estimates as they came back, each a few bytes (the byte budget never binds)
    plan = RequestPlan(pages_per_request=limit, max_documents=limit)
    pages = [PlannedPage(Page(number=i + 1, chunk_index=0, pdf_bytes=b"x", blank=False, text_chars=0), out) for i, out in enumerate(outputs)]
    answers = [ServedAnswer(i + 1, Usage(1000, out)) for i, out in enumerate(outputs)]
    # Then domain/savings groups them as the on-demand planner does
    expected = [[p.number for p in group] for group in plan.groups(pages)]
    assert [[a.page for a in group] for group in on_demand_groups(answers, page_limit=plan.page_limit, output_budget=plan.max_tokens * plan.fill)] == expected


def test_a_chunks_batch_answers_are_priced_per_request_at_the_on_demand_price(svc_on_fakes: Services) -> None:
    config = ConverterConfig(model_id=MODEL, max_tokens=8192, temperature=0.0)
    answers = [ServedAnswer(n, Usage(3300, 600)) for n in range(1, 8)]
    single, group = prompt_tokens(config, config.instruction), prompt_tokens(config, MULTI_PAGE_INSTRUCTION)
    first = Usage(5 * (3300 - single) + group, 5 * 600 + sum(marker_tokens(n) for n in range(1, 6)))
    second = Usage(2 * (3300 - single) + group, 2 * 600 + marker_tokens(6) + marker_tokens(7))
    expected = svc_on_fakes.prices.cost(MODEL, first) + svc_on_fakes.prices.cost(MODEL, second)
    assert batch_answers_at_on_demand(answers, config=config, settings=svc_on_fakes.settings, prices=svc_on_fakes.prices) == expected
    assert group > single > 0 and marker_tokens(12) == 5  # "<!-- Page 12 -->" and its blank lines


def test_a_stored_answer_that_did_not_serve_its_page_is_taken_back() -> None:
    # collect counted pages 1-3's answers served; page 2's prompt no longer matched, so it went on-demand
    pages = [
        PageResult(1, "converted", "x", served_by="batch", batch_usage=Usage(10, 5)),
        PageResult(2, "converted", "x", served_by="on_demand", usage=Usage(10, 5), cost_usd=Decimal("0.01")),
        PageResult(3, "converted", "x", served_by="batch", batch_usage=Usage(10, 5)),
        PageResult(4, "converted", "x", served_by="on_demand"),
    ]
    assert unused_batch_answers(pages, {1: Usage(10, 5), 2: Usage(11, 6), 3: Usage(10, 5)}) == [ServedAnswer(2, Usage(11, 6))]


def test_the_money_a_user_reads_from_the_ledger_is_signed_in_decimal_strings() -> None:
    # A saving: $0.40 of a Bedrock job's share served pages that cost $0.80 on-demand, beside $0.10 of on-demand calls.
    saved = ledger_money([("batch", Decimal("0.40"), {}), ("bedrock_on_demand", Decimal("0.10"), {BATCH_SERVED_KEY: "0.80"})])
    assert saved.to_json() == {
        "totalCostUsd": "0.50",
        "onDemandCostUsd": "0.10",
        "batchCostUsd": "0.40",
        "allOnDemandCostUsd": "0.90",
        "savingUsd": "0.40",
        "savingPercent": "44.4",  # 0.40 / 0.90
    }
    # Issue 38's process-now that paid twice: a stopped Bedrock job's $0.84 served nothing, the pages cost $1.82 on-demand.
    paid_twice = ledger_money([("batch", Decimal("0.84"), {}), ("bedrock_on_demand", Decimal("1.82"), None)])
    assert paid_twice.to_json() == {
        "totalCostUsd": "2.66",
        "onDemandCostUsd": "1.82",
        "batchCostUsd": "0.84",
        "allOnDemandCostUsd": "1.82",
        "savingUsd": "-0.84",
        "savingPercent": "-46.2",  # a loss, shown as one
    }
    assert ledger_money([]).to_json()["savingPercent"] == "0"  # nothing billed: no division by zero
