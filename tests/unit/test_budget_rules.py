"""The budget rules (domain/budget.py): caps, the budget check, the worst case at its named bounds, a chunk's window."""

from __future__ import annotations

from decimal import Decimal

import pytest

from batchlane.domain.budget import (
    CONTEXT_TOKENS,
    IMAGE_TOKENS_PER_PAGE,
    MARKDOWN_OVERHEAD,
    PAGE_OUTPUT_TOKENS,
    PAGE_TEXT_TOKENS_MIN,
    Limits,
    Standing,
    check_hold,
    check_new_job,
    chunk_window_usage,
    request_worst_usage,
    worst_case_usage,
)
from batchlane.domain.cost import Usage
from batchlane.domain.errors import BudgetExceeded, LimitReached

LIMITS = Limits(usd_per_month=Decimal("10"), max_live_jobs=2, max_live_pages=100)
PAGE = {"max_tokens": 8192, "reask": False}


def test_a_new_job_needs_a_live_place_and_budget_left() -> None:
    check_new_job(LIMITS, Standing(Decimal("9.99"), 1, 50))
    with pytest.raises(LimitReached) as caps:
        check_new_job(LIMITS, Standing(Decimal(0), 2, 0))
    assert caps.value.error_id == "LIVE_JOBS_LIMIT"
    with pytest.raises(BudgetExceeded):
        check_new_job(LIMITS, Standing(Decimal("10"), 0, 0))


def test_the_hold_must_fit_what_is_left_and_the_pages_the_cap() -> None:
    check_hold(LIMITS, Standing(Decimal("4"), 1, 40), hold_usd=Decimal("6"), pages=60)
    with pytest.raises(BudgetExceeded):
        check_hold(LIMITS, Standing(Decimal("4"), 1, 40), hold_usd=Decimal("6.01"), pages=10)
    with pytest.raises(LimitReached) as pages:
        check_hold(LIMITS, Standing(Decimal(0), 1, 40), hold_usd=Decimal(0), pages=61)
    assert pages.value.error_id == "LIVE_PAGES_LIMIT"


def test_the_worst_case_holds_each_page_at_its_named_bounds() -> None:
    # Issue 38.4: each page at its text (at least a PDF page's 1,500 tokens), its image as Claude counts it, the prompt in,
    # its answer at the output bound out (its text as Markdown, at least 3,750 tokens); not a whole max_tokens answer a page
    sparse = worst_case_usage(pages=10, blank=0, scans=0, text_chars=1_000, **PAGE)
    dense = worst_case_usage(pages=10, blank=0, scans=0, text_chars=200_000, **PAGE)
    assert sparse.input_tokens == 10 * (PAGE_TEXT_TOKENS_MIN + IMAGE_TOKENS_PER_PAGE + 400)
    assert dense.input_tokens == 10 * (IMAGE_TOKENS_PER_PAGE + 400) + 200_000 // 4  # the text goes in: characters / 4
    assert sparse.output_tokens == 10 * PAGE_OUTPUT_TOKENS == 10 * 3750
    assert dense.output_tokens == 200_000 * 5 // 16  # its text as Markdown: x 1.25 / 4
    assert worst_case_usage(pages=10, blank=0, scans=0, text_chars=400_000, **PAGE).output_tokens == 10 * 8192  # never above max_tokens
    scans = worst_case_usage(pages=10, blank=0, scans=10, text_chars=0, **PAGE)
    assert scans.output_tokens == 10 * PAGE_OUTPUT_TOKENS  # a scan's answer: a dense page's
    assert worst_case_usage(pages=10, blank=10, scans=0, text_chars=0, **PAGE) == worst_case_usage(pages=0, blank=0, scans=0, text_chars=0, **PAGE)
    # never above max_tokens a page
    assert worst_case_usage(pages=2, blank=0, scans=0, text_chars=0, max_tokens=1000, reask=False).output_tokens == 2000


def test_a_page_with_no_estimate_is_held_at_the_whole_context() -> None:
    known = worst_case_usage(pages=3, blank=0, scans=3, text_chars=0, **PAGE)
    unknown = worst_case_usage(pages=3, blank=0, scans=2, text_chars=0, unknown=1, **PAGE)
    assert unknown.input_tokens == 2 * (PAGE_TEXT_TOKENS_MIN + IMAGE_TOKENS_PER_PAGE + 400) + (CONTEXT_TOKENS - 8192)
    assert unknown.input_tokens > known.input_tokens and unknown.output_tokens == 2 * PAGE_OUTPUT_TOKENS + 8192
    # the same bound per request: a request reserves its pages' inputs, within the context, and max_tokens out
    assert request_worst_usage([None], max_tokens=8192) == Usage(CONTEXT_TOKENS - 8192, 8192)
    assert request_worst_usage([8_000, 0], max_tokens=8192) == Usage(2000 + PAGE_TEXT_TOKENS_MIN + 2 * (IMAGE_TOKENS_PER_PAGE + 400), 8192)


def test_the_coverage_reask_asks_the_text_pages_again_with_their_first_answers_in() -> None:
    once = worst_case_usage(pages=4, blank=0, scans=0, text_chars=8_000, **PAGE)
    twice = worst_case_usage(pages=4, blank=0, scans=0, text_chars=8_000, **{**PAGE, "reask": True})
    assert twice.output_tokens == 2 * once.output_tokens
    assert twice.input_tokens == 2 * once.input_tokens + once.output_tokens
    with_scans = worst_case_usage(pages=4, blank=0, scans=2, text_chars=4_000, **{**PAGE, "reask": True})
    assert with_scans.output_tokens == 4 * PAGE_OUTPUT_TOKENS + 2 * PAGE_OUTPUT_TOKENS  # a scan is never re-asked


def test_the_bounds_keep_their_sources() -> None:
    # 42.2: the image as Claude counts it after scaling; the planner's own Markdown ratio
    from batchlane.domain.vision import image_tokens
    from batchlane.ondemand.planner import MARKDOWN_OVERHEAD as PLANNED

    assert IMAGE_TOKENS_PER_PAGE == image_tokens(10_000, 13_000) == 1608
    assert MARKDOWN_OVERHEAD == PLANNED


def test_a_chunks_window_is_its_requests_at_their_worst() -> None:
    window = chunk_window_usage(12, page_limit=5, max_tokens=8192)
    assert window == Usage(12 * (PAGE_TEXT_TOKENS_MIN + IMAGE_TOKENS_PER_PAGE + 400), 3 * 8192)
    assert chunk_window_usage(0, page_limit=5, max_tokens=8192) == Usage()
