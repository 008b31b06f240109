"""What a conversion is expected to cost on each lane, and its worst case: the dry run's figures, the estimate in
a refusal. The same request shapes the engine sends (converter/request.py, ondemand/planner.py) and the same page
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

from batchlane.conversion.savings import marker_tokens, prompt_tokens
from batchlane.converter import ConverterConfig
from batchlane.converter.multipage import MULTI_PAGE_INSTRUCTION
from batchlane.domain import page_form as forms
from batchlane.domain.budget import CHARS_PER_TOKEN, MARKDOWN_OVERHEAD, PAGE_TEXT_TOKENS_MIN, worst_case_usage
from batchlane.domain.cost import PriceTable, Usage
from batchlane.domain.vision import CLAUDE_MAX_IMAGE_TOKENS, PAGE_IMAGE_MAX_TOKENS
from batchlane.ondemand.planner import RequestPlan


@dataclass(frozen=True)
class PageCounts:
    """What the survey (pdf/survey.py) found: pages, blank ones, non-blank ones without text, text over the rest."""

    pages: int
    blank: int
    scans: int
    text_chars: int

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
    )
    return Expected(on_demand, batch, worst, requests, config.page_form)


@dataclass(frozen=True)
class Priced:
    on_demand_usd: Decimal
    batch_usd: Decimal
    worst_usd: Decimal


def priced(expected: Expected, prices: PriceTable, model_id: str) -> Priced:
    return Priced(prices.cost(model_id, expected.on_demand), prices.cost(model_id, expected.batch, batch=True), prices.cost(model_id, expected.worst))
