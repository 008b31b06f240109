"""Per-user budgets and caps, and the worst-case size of a job's funds hold (pure rules).

The checks run inside the transaction that creates the job or places its hold (db/budgets.py
locks the owner first), so two concurrent conversions can never both fit into the same
remaining budget. docs/operations.md "Budgets, caps and fair sharing".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

from batchlane.domain.cost import Usage
from batchlane.domain.errors import BudgetExceeded, LimitReached

# A page's input tokens: its text layer (CHARS_PER_TOKEN characters a token), its page image (Claude
# counts width x height / 750 and scales a page to at most ~1.15 megapixels: 1,600 tokens at most) and
# the prompt of the request carrying it. A request's input never exceeds the model's context window
# less its output cap: what a page with no estimate (its content read cut short) is held at.
IMAGE_TOKENS_PER_PAGE = 1600
PROMPT_TOKENS_PER_REQUEST = 400
CHARS_PER_TOKEN = 4
CONTEXT_TOKENS = 200_000


@dataclass(frozen=True)
class Limits:
    """An owner's budget for the calendar month (UTC) and caps on what may be live at once."""

    usd_per_month: Decimal
    max_live_jobs: int
    max_live_pages: int


@dataclass(frozen=True)
class Standing:
    """What an owner has committed: this month's spend plus what open holds may still spend."""

    committed_usd: Decimal
    live_jobs: int
    live_pages: int
    spent_usd: Decimal = Decimal(0)  # this month's spend, within committed_usd (the rest is held)


# How a refusal says the limit is raised (docs/operations.md "Budgets, caps and fair sharing").
RAISE_HOW = "an admin raises it for you with `batchlane budget --set-for USER {flag} N` (PUT /api/v1/admin/budgets/{{ownerId}}), the default with cdk.json context budget.{key}"


def _raise(flag: str, key: str) -> str:
    return RAISE_HOW.format(flag=flag, key=key)


def check_new_job(limits: Limits, standing: Standing) -> None:
    """Before a job is recorded: a free live-job place and some budget left."""
    if standing.live_jobs >= limits.max_live_jobs:
        raise LimitReached(
            f"You have {standing.live_jobs} conversions running; the live-job limit (maxLiveJobs) is {limits.max_live_jobs}. "
            f"Wait for one to end, or {_raise('--max-live-jobs', 'maxLiveJobs')}.",
            error_id="LIVE_JOBS_LIMIT",
        )
    if standing.committed_usd >= limits.usd_per_month:
        raise BudgetExceeded(
            f"This month's budget (usdPerMonth) of {limits.usd_per_month} USD is committed ({standing.committed_usd:.2f} USD spent or held); "
            f"{_raise('--usd-per-month', 'usdPerMonth')}."
        )


def check_hold(limits: Limits, standing: Standing, *, hold_usd: Decimal, pages: int) -> None:
    """Before a job's hold is placed: its pages within the live-page cap, its hold within the budget."""
    if standing.live_pages + pages > limits.max_live_pages:
        raise LimitReached(
            f"The job's {pages} pages with the {standing.live_pages} pages of your other running conversions exceed the live-page limit "
            f"(maxLivePages) of {limits.max_live_pages}; wait for one to end, or {_raise('--max-live-pages', 'maxLivePages')}.",
            error_id="LIVE_PAGES_LIMIT",
        )
    if standing.committed_usd + hold_usd > limits.usd_per_month:
        left = max(limits.usd_per_month - standing.committed_usd, Decimal(0))
        needs = "more than the whole budget" if hold_usd > limits.usd_per_month else f"{left:.2f} USD of it is left"
        raise BudgetExceeded(
            f"The conversion may cost up to {hold_usd:.2f} USD (its funds hold); this month's budget (usdPerMonth) is {limits.usd_per_month} USD, "
            f"{needs}; {_raise('--usd-per-month', 'usdPerMonth')}."
        )


def page_input_tokens(text_chars: int | None, *, max_tokens: int) -> int:
    """The most input tokens one page's request may carry: its text, its image, the prompt;
    ``None`` (no estimate: the page was too complex to read within its budget) the whole context."""
    if text_chars is None:
        return CONTEXT_TOKENS - max_tokens
    return math.ceil(text_chars / CHARS_PER_TOKEN) + IMAGE_TOKENS_PER_PAGE + PROMPT_TOKENS_PER_REQUEST


def request_worst_usage(text_chars: list[int | None], *, max_tokens: int) -> Usage:
    """The most one request over pages with these text sizes may use: their inputs (within the
    context window) and a whole ``max_tokens`` answer. What the request reserves from its job's hold."""
    inputs = sum(page_input_tokens(chars, max_tokens=max_tokens) for chars in text_chars)
    return Usage(min(inputs, CONTEXT_TOKENS - max_tokens), max_tokens)


def worst_case_usage(*, pages: int, blank: int, scans: int, text_chars: int, max_tokens: int, reask: bool, unknown: int = 0) -> Usage:
    """Tokens a job may use at most: every non-blank page in a request of its own with its text, its
    image and the prompt in, a whole ``max_tokens`` answer out; ``unknown`` pages (no estimate) at the
    context window; with the coverage re-ask on, every text page asked twice (the second time with the first answer)."""
    records = max(pages - blank, 0)
    known = max(records - unknown, 0)
    text_pages = max(known - scans, 0) + min(unknown, records)
    per_page = IMAGE_TOKENS_PER_PAGE + PROMPT_TOKENS_PER_REQUEST
    text_input = math.ceil(text_chars / CHARS_PER_TOKEN) if known else 0
    unknown_input = min(unknown, records) * page_input_tokens(None, max_tokens=max_tokens)
    usage = Usage(known * per_page + text_input + unknown_input, records * max_tokens)
    if reask:
        again = max(known - scans, 0) * per_page + text_input + unknown_input + text_pages * max_tokens
        usage = usage + Usage(again, text_pages * max_tokens)
    return usage


def raised_hold(*, spent: Decimal, hold: Decimal, pages_done: int, pages_total: int) -> Decimal:
    """The hold a paused job resumes with: its cost so far per page done, over all its pages, plus half,
    and never less than the hold it had plus the same share again for the pages left."""
    left = max(pages_total - pages_done, 0)
    per_page = spent / max(pages_done, 1)
    projected = spent + per_page * left * Decimal("1.5")
    by_share = spent + hold * Decimal(left) / Decimal(max(pages_total, 1))
    return max(projected, by_share, hold).quantize(Decimal("0.000001"))
