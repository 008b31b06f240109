"""What a conversion is expected to cost on each lane, and its worst case: the dry run's figures, the estimate in
a refusal. The same request shapes the engine sends (claude/request.py, ondemand/planner.py) and the same page
bounds as the budget (domain/budget.py), so an estimate and a bill differ only by what the pages turn out to hold.

Per non-blank page: its image (a page image as Claude reads it, domain/vision.py) and its text (its text layer at
4 characters a token; in the PDF form at least the 1,500 tokens a PDF page's text costs, Anthropic "PDF support");
its answer: its text as Markdown (×1.25, the planner's measured ratio), or ``BATCHLANE_OUTPUT_TOKENS_PER_PAGE``
for a page without a text layer (what a scan's answer runs to is the model's: a setting to calibrate). On-demand:
``BATCHLANE_PAGES_PER_REQUEST`` pages a request, the prompt once a request and a marker a page; batch: one record a
page, the prompt in each, at the batch price.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from batchlane.claude import ConverterConfig
from batchlane.claude.multipage import MULTI_PAGE_INSTRUCTION
from batchlane.contract import CHUNKS_IN_FLIGHT
from batchlane.domain import page_form as forms
from batchlane.domain.budget import (
    CHARS_PER_TOKEN,
    MARKDOWN_OVERHEAD,
    PAGE_TEXT_TOKENS_MIN,
    chunk_window_usage,
    refusal_sentence,
    request_worst_usage,
    room_left,
    worst_case_usage,
)
from batchlane.domain.cost import PriceTable, Usage
from batchlane.domain.vision import CLAUDE_MAX_IMAGE_TOKENS, PAGE_IMAGE_MAX_TOKENS
from batchlane.filejob.savings import marker_tokens, prompt_tokens
from batchlane.ondemand.planner import RequestPlan


@dataclass(frozen=True)
class PageCounts:
    """What the survey (pdf/survey.py) found: pages, blank ones, non-blank ones without text, text over the rest;
    ``unknown``: pages whose text was not read (a page-tree count), at the worst case's unknown-page bound."""

    pages: int
    blank: int
    scans: int
    text_chars: int
    unknown: int = 0

    @property
    def records(self) -> int:
        return max(self.pages - self.blank, 0)


@dataclass(frozen=True)
class Expected:
    """The expected usage on each lane, and the job's worst case (domain/budget.worst_case_usage)."""

    on_demand: Usage
    batch: Usage
    worst: Usage
    requests: int  # on-demand requests
    page_form: str


def expected_usage(counts: PageCounts, *, config: ConverterConfig, settings: Any) -> Expected:
    """The usage the engine is expected to bill for these pages, on-demand and in batch (see the module docstring)."""
    records = counts.records
    plan = RequestPlan.from_settings(settings)
    text_tokens = math.ceil(counts.text_chars / CHARS_PER_TOKEN)
    if config.page_form == forms.IMAGE:
        page_input = records * PAGE_IMAGE_MAX_TOKENS + text_tokens  # the text layer goes as text beside the image
    else:
        page_input = records * CLAUDE_MAX_IMAGE_TOKENS + max(text_tokens, records * PAGE_TEXT_TOKENS_MIN)
    output = math.ceil(counts.text_chars * MARKDOWN_OVERHEAD / CHARS_PER_TOKEN) + counts.scans * int(settings.batchlane_output_tokens_per_page)
    requests = math.ceil(records / plan.page_limit) if records else 0
    single, group = prompt_tokens(config, config.instruction), prompt_tokens(config, MULTI_PAGE_INSTRUCTION)
    grouped = records - (records % plan.page_limit == 1)  # pages in requests of two or more carry a marker
    on_demand = Usage(page_input + requests * group, output + max(grouped, 0) * marker_tokens(records))
    batch = Usage(page_input + records * single, output)
    worst = worst_case_usage(
        pages=counts.pages,
        blank=counts.blank,
        scans=counts.scans,
        text_chars=counts.text_chars,
        max_tokens=int(settings.batchlane_max_tokens),
        reask=float(settings.batchlane_coverage_threshold) > 0,
        unknown=counts.unknown,
    )
    return Expected(on_demand, batch, worst, requests, config.page_form)


@dataclass(frozen=True)
class Priced:
    on_demand_usd: Decimal
    batch_usd: Decimal
    worst_usd: Decimal


def priced(expected: Expected, prices: PriceTable, model_id: str) -> Priced:
    return Priced(prices.cost(model_id, expected.on_demand), prices.cost(model_id, expected.batch, batch=True), prices.cost(model_id, expected.worst))


def dry_run_money(
    svc: Any,
    counts: PageCounts,
    *,
    config: ConverterConfig,
    eligible: bool,
    why: str,
    chunks: int,
    owner_id: str | None,
    deadline: str | None = None,
) -> dict[str, Any]:
    """The dry run's ``estimate`` block: the cost on the lane the job will really take, both figures and the condition
    where that depends (a bulk job below the pool's minimum, a deadline), its worst case, what it holds at a time, and
    the room its owner has left (docs/operations.md "Estimates, holds, savings and pauses")."""
    settings, model_id = svc.settings, config.model_id
    expected = expected_usage(counts, config=config, settings=settings)
    figures = priced(expected, svc.prices, model_id)
    on_demand, batch = str(figures.on_demand_usd), str(figures.batch_usd)
    window = settings.batch_pool_window_minutes
    lane, condition = ("batch" if eligible else "on_demand"), None
    if eligible and counts.records < settings.batch_conversion_min_records:
        lane = "depends"
        condition = (
            f"half price (${batch}) if the batch pool fills a Bedrock job of {settings.batch_conversion_min_records} records "
            f"within {window:g} min (this job has {counts.records}), else on-demand: ${on_demand}"
        )
    elif eligible and deadline:
        lane = "depends"
        condition = (
            f"half price (${batch}) for the pages Bedrock converts before {deadline} less {settings.batch_deadline_margin_hours:g} h, "
            f"the rest on-demand: up to ${on_demand}"
        )
    hold = _hold_at_a_time(svc, counts, model_id=model_id, parked=eligible, chunks=chunks)
    answer: dict[str, Any] = {
        "inputTokens": expected.on_demand.input_tokens,
        "outputTokens": expected.on_demand.output_tokens,
        "onDemandUsd": on_demand,
        "batchUsd": batch,
        "costUsd": batch if lane == "batch" else on_demand,
        "lane": lane,
        "condition": condition,
        "paths": [
            {"lane": "batch", "costUsd": batch, "when": _batch_when(lane, condition)},
            {"lane": "on_demand", "costUsd": on_demand, "when": "the lane it takes" if lane == "on_demand" else "when the batch lane does not take it"},
        ]
        if eligible
        else [{"lane": "on_demand", "costUsd": on_demand, "when": why}],
        "worstCaseUsd": str(figures.worst_usd),
        "holdUsd": str(hold),
        "holdBasis": (
            "its batch records at their worst (a whole answer each) at the batch price, held while they are submitted"
            if eligible
            else f"the requests of its chunks running at once (up to {min(chunks, CHUNKS_IN_FLIGHT)}) at their worst, grown and given back as they run"
        ),
        "basis": (
            f"{expected.page_form} form: each page's image ({CLAUDE_MAX_IMAGE_TOKENS if expected.page_form == forms.PDF else PAGE_IMAGE_MAX_TOKENS} "
            f"tokens at most) and its text (characters / 4{'; at least 1,500 a PDF page' if expected.page_form == forms.PDF else ''}); "
            f"answers: the text as Markdown (x {MARKDOWN_OVERHEAD}), {settings.batchlane_output_tokens_per_page} tokens a page without text; "
            f"{expected.requests} on-demand requests of up to {RequestPlan.from_settings(settings).page_limit} pages"
        ),
    }
    if owner_id is not None:
        answer.update(_room(svc, owner_id, estimate_usd=Decimal(answer["costUsd"]), worst_usd=figures.worst_usd, hold_usd=hold))
    return answer


def _batch_when(lane: str, condition: str | None) -> str:
    if lane == "batch":
        return "the lane it takes (pages Bedrock does not convert go on-demand)"
    return condition or ""


def batch_records_hold(svc: Any, counts: PageCounts, *, model_id: str) -> Decimal:
    """Every record of the job at its worst (its page's input, a whole max_tokens answer), at the batch price."""
    records = counts.records
    if not records:
        return Decimal(0)
    average = counts.text_chars // records
    per_record = request_worst_usage([average], max_tokens=svc.settings.batchlane_max_tokens)
    return svc.prices.cost(model_id, Usage(per_record.input_tokens * records, per_record.output_tokens * records), batch=True)


def chunk_window_usd(svc: Any, model_id: str, pages: int) -> Decimal:
    """What a chunk with ``pages`` pages to convert may spend before its next check (domain/budget.chunk_window_usage)."""
    plan = RequestPlan.from_settings(svc.settings)
    return svc.prices.cost(model_id, chunk_window_usage(pages, page_limit=plan.page_limit, max_tokens=svc.settings.batchlane_max_tokens))


def _hold_at_a_time(svc: Any, counts: PageCounts, *, model_id: str, parked: bool, chunks: int) -> Decimal:
    """What the job holds of its owner's budget at a time (domain/budget.py): its batch records, or its chunks in flight."""
    if not counts.records:
        return Decimal(0)
    if parked:
        return batch_records_hold(svc, counts, model_id=model_id)
    per_chunk = math.ceil(counts.records / max(chunks, 1))
    return min(chunks, CHUNKS_IN_FLIGHT) * chunk_window_usd(svc, model_id, per_chunk)


def _room(svc: Any, owner_id: str, *, estimate_usd: Decimal, worst_usd: Decimal, hold_usd: Decimal) -> dict[str, Any]:
    """What the owner has left this month, and the refusal a conversion would meet (one plain sentence) when it does not fit."""
    budgets = svc.uow().budgets
    limits = budgets.limits_for(owner_id, svc.settings)
    left = room_left(limits, budgets.standing(owner_id))
    refusal = None if worst_usd <= left else refusal_sentence(estimate_usd=estimate_usd, worst_usd=worst_usd, hold_usd=hold_usd, left_usd=left)
    return {"roomLeftUsd": str(left), "budgetUsdPerMonth": str(limits.usd_per_month), "refusal": refusal}
