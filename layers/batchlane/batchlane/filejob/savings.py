"""Batch answers at the on-demand price, as the on-demand engine would bill them: the figure each batch share
carries for the answers its lane accepted (batch/collect.py), less any a chunk could not use, and domain/savings.py
adds up into ``allOnDemandCostUsd``."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from batchlane.claude import ConverterConfig, PageResult
from batchlane.claude.multipage import MULTI_PAGE_INSTRUCTION
from batchlane.domain.cost import PriceTable, Usage
from batchlane.domain.markdown import page_marker
from batchlane.domain.savings import ServedAnswer, on_demand_usage
from batchlane.ondemand.planner import CHARS_PER_TOKEN, RequestPlan


def prompt_tokens(config: ConverterConfig, instruction: str) -> int:
    """The prompt a request carries besides its pages (system prompt and instruction), at the engine's 4 characters a token."""
    return (len(config.system) + len(instruction)) // CHARS_PER_TOKEN


def marker_tokens(page: int) -> int:
    """What a page's marker adds to a multi-page answer: ``<!-- Page N -->`` and the blank lines around it."""
    return -(-len(page_marker(page) + "\n\n\n\n") // CHARS_PER_TOKEN)


def batch_answers_at_on_demand(answers: Iterable[ServedAnswer], *, config: ConverterConfig, settings: Any, prices: PriceTable) -> Decimal:
    """What the on-demand engine would bill for these batch answers (pages of one chunk): grouped by its planner's
    page limit and output budget, one prompt a request, a marker a page, each request priced on its own (as the
    ledger books them)."""
    answers = list(answers)
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


def unused_batch_answers(pages: Iterable[PageResult], stored: dict[int, Usage]) -> list[ServedAnswer]:
    """The stored batch answers (by page) that did not serve their page (a prompt changed since the lane prepared it):
    collect counted them served, so the chunk takes them back (domain/savings.py)."""
    return [ServedAnswer(p.page_number, stored[p.page_number]) for p in pages if p.batch_usage is None and p.page_number in stored]
