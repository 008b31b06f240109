"""The batch-served pages of a chunk at the on-demand price, as the on-demand engine would bill them: the
figure each chunk's ledger row carries and domain/savings.py adds up into ``allOnDemandCostUsd``."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from batchlane.converter import ConverterConfig, PageResult
from batchlane.converter.multipage import MULTI_PAGE_INSTRUCTION
from batchlane.domain.cost import PriceTable
from batchlane.domain.markdown import page_marker
from batchlane.domain.savings import ServedAnswer, on_demand_usage
from batchlane.ondemand.planner import CHARS_PER_TOKEN, RequestPlan


def prompt_tokens(config: ConverterConfig, instruction: str) -> int:
    """The prompt a request carries besides its pages (system prompt and instruction), at the engine's 4 characters a token."""
    return (len(config.system) + len(instruction)) // CHARS_PER_TOKEN


def marker_tokens(page: int) -> int:
    """What a page's marker adds to a multi-page answer: ``<!-- Page N -->`` and the blank lines around it."""
    return -(-len(page_marker(page) + "\n\n\n\n") // CHARS_PER_TOKEN)


def batch_served_at_on_demand(pages: Iterable[PageResult], *, config: ConverterConfig, settings: Any, prices: PriceTable) -> Decimal:
    """What the on-demand engine would bill for the batch answers these pages were served from: grouped by its
    planner's page limit and output budget, one prompt a request, a marker a page, each request priced on its own
    (as the ledger books them)."""
    answers = [ServedAnswer(p.page_number, p.batch_usage) for p in pages if p.batch_usage is not None]
    if not answers:
        return Decimal(0)
    plan = RequestPlan.from_settings(settings)
    requests = on_demand_usage(
        answers,
        page_limit=plan.page_limit,
        output_budget=plan.max_tokens * plan.fill,
        single_prompt_tokens=prompt_tokens(config, config.instruction),
        group_prompt_tokens=prompt_tokens(config, MULTI_PAGE_INSTRUCTION),
        marker_tokens=marker_tokens,
    )
    return sum((prices.cost(config.model_id, usage) for usage in requests), Decimal(0))
