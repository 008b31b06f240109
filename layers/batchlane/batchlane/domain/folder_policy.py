"""A folder job's policy decisions, pure: which failed files run again, and which lane a deadline allows.

``policy.max_retries``: a file whose conversion failed for a reason another attempt can change
(a crash, a throttled start, a lost split) is queued again, up to ``max_retries`` more times. A
reason that lies in the document, the spec or the owner's budget fails the same way again.
"""

from __future__ import annotations

# The document itself, the spec, or the owner's budget: another attempt fails the same way.
NOT_RETRYABLE = frozenset(
    {
        "NOT_PDF",
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


def retry_file(error_id: str | None, attempts: int, max_retries: int) -> bool:
    """True when a file whose conversion failed with ``error_id`` after ``attempts`` conversions runs again."""
    return (error_id or "CONVERSION_FAILED") not in NOT_RETRYABLE and attempts <= max_retries
