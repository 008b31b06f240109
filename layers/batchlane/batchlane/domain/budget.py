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

# Input tokens of one page (its text and its image) and the prompt of a request carrying it:
# the same figures as the dry run's estimate (conversion/dryrun.py).
INPUT_TOKENS_PER_PAGE = 3000
PROMPT_TOKENS_PER_REQUEST = 400
CHARS_PER_TOKEN = 4
MARKDOWN_OVERHEAD = 1.25
# The worst case allows an answer twice as long as the page's text predicts (tables, markup).
OUTPUT_HEADROOM = 2


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


def worst_case_usage(*, pages: int, blank: int, scans: int, text_chars: int, max_tokens: int, scan_tokens: int, reask: bool) -> Usage:
    """Tokens a job may use at most: every non-blank page in a request of its own, answers up to
    twice what the page's text predicts (a scan: twice ``scan_tokens``), each capped at ``max_tokens``,
    and with the coverage re-ask on, every text page asked twice (the second time with the first answer)."""
    records = max(pages - blank, 0)
    text_pages = max(records - scans, 0)
    page_input = INPUT_TOKENS_PER_PAGE + PROMPT_TOKENS_PER_REQUEST
    text_output = min(text_pages * max_tokens, math.ceil(text_chars / CHARS_PER_TOKEN * MARKDOWN_OVERHEAD * OUTPUT_HEADROOM))
    scan_output = scans * min(max_tokens, scan_tokens * OUTPUT_HEADROOM)
    usage = Usage(records * page_input, text_output + scan_output)
    if reask:
        usage = usage + Usage(text_pages * page_input + text_output, text_output)
    return usage


def raised_hold(*, spent: Decimal, hold: Decimal, pages_done: int, pages_total: int) -> Decimal:
    """The hold a paused job resumes with: its cost so far per page done, over all its pages, plus half,
    and never less than the hold it had plus the same share again for the pages left."""
    left = max(pages_total - pages_done, 0)
    per_page = spent / max(pages_done, 1)
    projected = spent + per_page * left * Decimal("1.5")
    by_share = spent + hold * Decimal(left) / Decimal(max(pages_total, 1))
    return max(projected, by_share, hold).quantize(Decimal("0.000001"))
