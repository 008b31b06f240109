"""A folder job's policy decisions, pure: which failed files run again, and which lane a deadline allows.

``policy.deadline``: until the pool (issue 13) exists, a deadline closer than the batch lane's
turnaround (timeout + grace, ``batch_deadline_hours``) sends the file on-demand; one already past
is refused at submit.

``policy.max_retries``: a file whose conversion failed for a reason another attempt can change
(a crash, a throttled start, a lost split) is queued again, up to ``max_retries`` more times. A
reason that lies in the document, the spec or the owner's budget fails the same way again.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from batchlane.domain.budget import Limits
from batchlane.domain.errors import InputError

DEADLINE = "deadline"  # the lane reason a deadline gives

# The document itself, the spec, or the owner's budget: another attempt fails the same way.
NOT_RETRYABLE = frozenset(
    {
        "NOT_PDF",
        "FILE_TYPE_UNSUPPORTED",  # the listing's id for a file of another type (issue 43; NOT_PDF before it)
        "FILE_EMPTY",
        "IMAGE_CORRUPT",
        "IMAGE_TOO_LARGE",
        "IMAGE_TOO_MANY_PAGES",
        "DOCUMENT_CORRUPT",
        "DOCUMENT_TOO_COMPLEX",
        "DOCUMENT_TOO_MANY_PAGES",
        "PDF_NOT_PDF",  # the id the split raises (pdf/split.py sniff); NOT_PDF is kept for rows written before
        "PDF_EMPTY",
        "PDF_CORRUPT",
        "PDF_ENCRYPTED",
        "PDF_TOO_COMPLEX",
        "PDF_TOO_LARGE",
        "PDF_TOO_MANY_PAGES",
        "PDF_NO_PAGES",
        "OUTPUT_COLLISION",
        "BUDGET_EXCEEDED",
        "LIVE_JOBS_LIMIT",
        "LIVE_PAGES_LIMIT",
        "MODEL_NOT_ALLOWED",
        "MODEL_UNKNOWN",
        "OPTIONS_INVALID",
        "CALLBACK_INVALID",
        "CANCELLED",
    }
)


def waits_for_capacity(error_id: str | None, pages: int, limits: Limits) -> bool:
    """True when a file's conversion failed only because its owner's live-page cap was full at its split, and the
    document alone fits the cap: it is queued again (no attempt counted against ``max_retries``); one larger than
    the cap can never start, and fails."""
    return error_id == "LIVE_PAGES_LIMIT" and 0 < pages <= limits.max_live_pages


def retry_file(error_id: str | None, attempts: int, max_retries: int) -> bool:
    """True when a file whose conversion failed with ``error_id`` after ``attempts`` conversions runs again."""
    return (error_id or "CONVERSION_FAILED") not in NOT_RETRYABLE and attempts <= max_retries


def aware(moment: datetime) -> datetime:
    """A deadline without a zone is UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def check_deadline(deadline: datetime | None, now: datetime, *, field: str = "policy.deadline") -> None:
    """DEADLINE_PAST (400) for a deadline nobody can meet any more; ``field`` is the name the caller used."""
    if deadline is not None and aware(deadline) <= now:
        raise InputError(f"{field} {aware(deadline).isoformat()} has already passed.", error_id="DEADLINE_PAST")


def deadline_lane(deadline: datetime | None, now: datetime, batch_turnaround_hours: float, margin_hours: float = 0.0) -> str | None:
    """``"deadline"`` when what is left before the deadline is shorter than the batch lane's turnaround
    plus the on-demand time of its pages (``margin_hours``): the file goes on-demand. None when the
    deadline leaves the batch lane room (or there is none)."""
    if deadline is None:
        return None
    return DEADLINE if aware(deadline) - now < timedelta(hours=batch_turnaround_hours + margin_hours) else None


def deadline_opt_outs(deadlines: dict[str, datetime | None], now: datetime, batch_turnaround_hours: float, margin_hours: float = 0.0) -> list[str]:
    """The named deadlines that leave the batch lane no room (their work goes on-demand at full
    price): like the lane opt-out options, they need the priority permission (issue 21.5)."""
    return [name for name, deadline in deadlines.items() if deadline_lane(deadline, now, batch_turnaround_hours, margin_hours)]


def parse_deadline(value: object) -> datetime | None:
    """A job's ``deadline`` option (ISO 8601, or a datetime) as an aware datetime; InputError DEADLINE_INVALID otherwise."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return aware(value)
    try:
        return aware(datetime.fromisoformat(str(value).replace("Z", "+00:00")))
    except ValueError:
        raise InputError(f"deadline {value!r} is not an ISO 8601 date and time.", error_id="DEADLINE_INVALID") from None
