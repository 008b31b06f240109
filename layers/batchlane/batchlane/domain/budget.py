"""Per-user budgets and caps, a job's worst case and its hold (pure rules).

* A job's **worst case** (:func:`worst_case_usage`) is every non-blank page at its named bound below (and, with
  the coverage re-ask on, every text page asked twice). A job is refused at submit only when that does not fit
  what is left of its owner's month (:func:`check_worst_case`), with one plain sentence.
* Its **hold** is what it can spend before the next check, not its worst case at once: the chunks it has in
  flight (each chunk start grows the hold by the worst case of that chunk's requests, under the owner's lock, and
  gives back what the chunk did not spend when it ends) and the batch records it submitted (their worst case at
  the batch price). Each request still reserves its own worst case from the hold first (db/budgets.reserve), so
  the owner's budget is never overrun, however many jobs and chunks run at once.
* A job pauses only when the request it is about to send cannot fit what its owner has left then, and says which
  of the owner's jobs hold the rest (:func:`pause_message`).

The checks run inside the transaction that creates the job or grows its hold (db/budgets.py locks the owner
first). docs/operations.md "Budgets, caps and fair sharing"; the numbers and why: docs/decisions (holds record).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from batchlane.domain.cost import Usage
from batchlane.domain.errors import BudgetExceeded, LimitReached
from batchlane.domain.vision import CLAUDE_MAX_IMAGE_TOKENS

# The bounds a page is held at, each with its source:
# - its image: Claude counts width x height / 750 after scaling an image to at most ~1.15 megapixels (Anthropic
#   "Vision", domain/vision.py): 1,608 tokens at most, whatever form or size it was sent in;
# - its text: its text layer at CHARS_PER_TOKEN characters a token, and at least PAGE_TEXT_TOKENS_MIN: Anthropic's
#   "PDF support" puts a page's text at 1,500-3,000 tokens (the PDF form is billed so, the offline emulator too);
# - the prompt of the request carrying it (system prompt and instruction, claude/request.py: ~900 characters,
#   rounded up);
# - its answer: its Markdown is its text plus MARKDOWN_OVERHEAD (ondemand/planner.py's measured ratio), at least
#   PAGE_OUTPUT_TOKENS: a dense page's 3,000 text tokens (Anthropic, as above) as Markdown; never above max_tokens.
# A request's input never exceeds the model's context window less its output cap: what a page with no estimate
# (its content read cut short) is held at.
IMAGE_TOKENS_PER_PAGE = CLAUDE_MAX_IMAGE_TOKENS
PROMPT_TOKENS_PER_REQUEST = 400
CHARS_PER_TOKEN = 4
PAGE_TEXT_TOKENS_MIN = 1500
MARKDOWN_OVERHEAD = 1.25
PAGE_OUTPUT_TOKENS = math.ceil(3000 * MARKDOWN_OVERHEAD)  # 3,750
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


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


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
    """Before a job's first hold is placed: its pages within the live-page cap, that hold within the budget."""
    check_pages(limits, standing, pages=pages)
    if standing.committed_usd + hold_usd > limits.usd_per_month:
        left = max(limits.usd_per_month - standing.committed_usd, Decimal(0))
        raise BudgetExceeded(
            f"The conversion holds {hold_usd:.2f} USD while it runs and {left:.2f} USD of this month's budget (usdPerMonth) of "
            f"{limits.usd_per_month} USD is left; {_raise('--usd-per-month', 'usdPerMonth')}."
        )


def check_pages(limits: Limits, standing: Standing, *, pages: int) -> None:
    """The job's pages with the pages of the owner's other live jobs within the live-page cap."""
    if standing.live_pages + pages > limits.max_live_pages:
        raise LimitReached(
            f"The job's {pages} pages with the {standing.live_pages} pages of your other running conversions exceed the live-page limit "
            f"(maxLivePages) of {limits.max_live_pages}; wait for one to end, or {_raise('--max-live-pages', 'maxLivePages')}.",
            error_id="LIVE_PAGES_LIMIT",
        )


def room_left(limits: Limits, standing: Standing) -> Decimal:
    """What is left of the owner's month beside the job (``standing`` leaves the job's own hold out)."""
    return max(limits.usd_per_month - standing.committed_usd, Decimal(0))


def refusal_sentence(*, estimate_usd: Decimal, worst_usd: Decimal, hold_usd: Decimal, left_usd: Decimal) -> str:
    """The one plain sentence a refused job gets: its estimate, its worst case, the hold, the room left."""
    return (
        f"This conversion is estimated at {estimate_usd:.2f} USD and could cost up to {worst_usd:.2f} USD at worst "
        f"(it holds {hold_usd:.2f} USD of your budget at a time while it runs), but only {left_usd:.2f} USD of this month's budget is left."
    )


def check_worst_case(limits: Limits, standing: Standing, *, estimate_usd: Decimal, worst_usd: Decimal, hold_usd: Decimal, pages: int) -> None:
    """At submit (the split): the live-page cap, and the job's own worst case within what is left of the month;
    refused only when it does not fit (a job that fits is never refused for its hold)."""
    check_pages(limits, standing, pages=pages)
    left = room_left(limits, standing)
    if worst_usd > left:
        raise BudgetExceeded(
            refusal_sentence(estimate_usd=estimate_usd, worst_usd=worst_usd, hold_usd=hold_usd, left_usd=left)
            + f" {_upper_first(_raise('--usd-per-month', 'usdPerMonth'))}."
        )


def grant(need: Decimal, *, limits: Limits, standing: Standing, open_usd: Decimal) -> Decimal:
    """How much a job's hold may grow for ``need`` (what its chunk may spend before the next check): all of it, or
    what the owner's month has left beside what every open hold (``standing``, without the job's) and the job's own
    open hold (``open_usd``: its hold less its spend) already keep; never less than nothing."""
    return max(min(need, limits.usd_per_month - standing.committed_usd - max(open_usd, Decimal(0))), Decimal(0))


@dataclass(frozen=True)
class Holder:
    """One of the owner's jobs holding part of the budget: its id, its file's name, what it holds beyond its spend."""

    job_id: str
    name: str
    held_usd: Decimal


def pause_message(*, next_usd: Decimal, left_usd: Decimal, limits: Limits, holders: Sequence[Holder]) -> str:
    """Why a job paused, in words its owner can act on: the request it could not send, what was left, who holds the rest."""
    held = "; ".join(f"{h.name} ({h.job_id}) holds {h.held_usd:.2f} USD" for h in holders[:5])
    rest = f" Your other conversions hold the rest: {held}." if held else ""
    return (
        f"Paused: its next request may cost up to {next_usd:.2f} USD and {left_usd:.2f} USD of this month's budget of "
        f"{limits.usd_per_month} USD is left.{rest} Resume it when they end or the budget allows "
        f"(batchlane resume JOB, POST /api/v1/jobs/{{jobId}}/resume)."
    )


def page_input_tokens(text_chars: int | None, *, max_tokens: int) -> int:
    """The most input tokens one page's request may carry: its text (at least a PDF page's), its image, the prompt;
    ``None`` (no estimate: the page was too complex to read within its budget) the whole context."""
    if text_chars is None:
        return CONTEXT_TOKENS - max_tokens
    return max(math.ceil(text_chars / CHARS_PER_TOKEN), PAGE_TEXT_TOKENS_MIN) + IMAGE_TOKENS_PER_PAGE + PROMPT_TOKENS_PER_REQUEST


def request_worst_usage(text_chars: list[int | None], *, max_tokens: int) -> Usage:
    """The most one request over pages with these text sizes may use: their inputs (within the context window)
    and a whole ``max_tokens`` answer. What the request reserves from its job's hold: it can never use more."""
    inputs = sum(page_input_tokens(chars, max_tokens=max_tokens) for chars in text_chars)
    return Usage(min(inputs, CONTEXT_TOKENS - max_tokens), max_tokens)


def chunk_window_usage(pages: int, *, page_limit: int, max_tokens: int) -> Usage:
    """What a chunk with ``pages`` pages to convert may spend before its next check: each of its requests
    (``page_limit`` pages a request) at its worst, pages at the text bound (a denser page's request reserves more,
    and when the window runs out the chunk stops and its next start grows the hold again)."""
    if pages <= 0:
        return Usage()
    requests = math.ceil(pages / max(page_limit, 1))
    per_page = page_input_tokens(PAGE_TEXT_TOKENS_MIN * CHARS_PER_TOKEN, max_tokens=max_tokens)
    return Usage(min(pages * per_page, requests * (CONTEXT_TOKENS - max_tokens)), requests * max_tokens)


def page_output_tokens(text_chars: int, *, max_tokens: int) -> int:
    """The most a page's answer runs to: its text as Markdown, at least a dense page's, never above max_tokens."""
    return min(max(PAGE_OUTPUT_TOKENS, math.ceil(text_chars * MARKDOWN_OVERHEAD / CHARS_PER_TOKEN)), max_tokens)


def worst_case_usage(*, pages: int, blank: int, scans: int, text_chars: int, max_tokens: int, reask: bool, unknown: int = 0) -> Usage:
    """Tokens a job may use at worst: every non-blank page in a request of its own with its text (at least a PDF
    page's), its image and the prompt in, and its answer at the output bound out; ``unknown`` pages (no estimate)
    at the context window and a whole ``max_tokens`` answer; with the coverage re-ask on, every text page asked
    twice, the second time with its first answer in. ``text_chars`` is over the known pages."""
    records = max(pages - blank, 0)
    unknown = min(unknown, records)
    known = max(records - unknown, 0)
    text_pages = max(known - scans, 0) + unknown
    text_input = max(math.ceil(text_chars / CHARS_PER_TOKEN), known * PAGE_TEXT_TOKENS_MIN) if known else 0
    known_input = known * (IMAGE_TOKENS_PER_PAGE + PROMPT_TOKENS_PER_REQUEST) + text_input
    known_output = min(max(known * PAGE_OUTPUT_TOKENS, math.ceil(text_chars * MARKDOWN_OVERHEAD / CHARS_PER_TOKEN)), known * max_tokens)
    unknown_input = unknown * page_input_tokens(None, max_tokens=max_tokens)
    usage = Usage(known_input + unknown_input, known_output + unknown * max_tokens)
    if reask and text_pages:
        # The known text pages again with their first answers in (a scan is never re-asked); the unknown ones again at the window.
        share = Decimal(max(known - scans, 0)) / Decimal(known) if known else Decimal(0)
        again_input = int(known_input * share) + int(known_output * share) + unknown_input
        usage = usage + Usage(again_input, int(known_output * share) + unknown * max_tokens)
    return usage
