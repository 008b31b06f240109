"""A job's retries of its failed pages (db/retries.py)."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any, Protocol

from batchlane.domain.status import Transition
from batchlane.rows.retries import JobRetry


class RetryRepository(Protocol):
    """job_retries (db/retries.py): one row per retry of a job's failed pages, numbered 1, 2, … per job; at most one
    runs at a time (a second raises UniqueViolation ``one_running_retry_per_job``)."""

    def running(self, job_id: str) -> JobRetry | None: ...
    def history(self, job_id: str) -> list[JobRetry]: ...  # oldest first (by attempt)
    def get(self, job_id: str, attempt: int) -> JobRetry | None: ...
    def insert(
        self,
        *,
        job_id: str,
        pages: Sequence[int],
        error_ids: Sequence[str] | None,
        previous_pages_failed: int,
        previous_total_usd: Decimal,
        previous_markdown_key: str | None,
        chunks_before: list[dict[str, Any]],
    ) -> JobRetry:
        """A running retry numbered one past the job's highest (an empty ``error_ids`` is kept as None)."""
        ...

    def finish(self, job_id: str, attempt: int, move: Transition, *, pages_failed: int | None, cost_usd: Decimal, error_message: str | None = None) -> bool:
        """running → settled, failed or cancelled (``move``, a RETRY transition: another entity's raises ValueError),
        stamped finished; False when the retry had already ended (a repeated settle, a late cancel)."""
        ...
