"""job_retries: one row per retry of a job's failed pages (0009_job_retries.sql)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from batchlane.db.connection import Row
from batchlane.db.jobs import Runner
from batchlane.domain.status import Entity, RetryStatus, Transition
from batchlane.rows import JobRetry


def _one(row: Row | None) -> JobRetry | None:
    return JobRetry.of(row) if row is not None else None


class PgRetries:
    """batchlane.ports.RetryRepository on PostgreSQL, bound to one Database or Transaction."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner

    def running(self, job_id: str) -> JobRetry | None:
        return _one(self.runner.one("SELECT * FROM job_retries WHERE job_id = CAST(:id AS uuid) AND status = :running", id=job_id, running=RetryStatus.RUNNING))

    def history(self, job_id: str) -> list[JobRetry]:
        return [JobRetry.of(r) for r in self.runner.run("SELECT * FROM job_retries WHERE job_id = CAST(:id AS uuid) ORDER BY attempt", id=job_id)]

    def get(self, job_id: str, attempt: int) -> JobRetry | None:
        return _one(self.runner.one("SELECT * FROM job_retries WHERE job_id = CAST(:id AS uuid) AND attempt = :n", id=job_id, n=attempt))

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
        """The next attempt number for the job; the partial unique index refuses a second running retry."""
        row = self.runner.one(
            """INSERT INTO job_retries (job_id, attempt, pages, error_ids, previous_pages_failed, previous_total_usd, previous_markdown_key, chunks_before)
               VALUES (CAST(:id AS uuid), (SELECT COALESCE(max(attempt), 0) + 1 FROM job_retries WHERE job_id = CAST(:id AS uuid)),
                       CAST(:pages AS integer[]), CAST(:errors AS text[]), :failed, :total, :md, CAST(:chunks AS jsonb))
               RETURNING *""",
            id=job_id,
            pages=list(pages),
            errors=list(error_ids) if error_ids else None,
            failed=previous_pages_failed,
            total=previous_total_usd,
            md=previous_markdown_key,
            chunks=json.dumps(chunks_before),
        )
        assert row is not None
        return JobRetry.of(row)

    def finish(self, job_id: str, attempt: int, move: Transition, *, pages_failed: int | None, cost_usd: Decimal, error_message: str | None = None) -> bool:
        """running → settled, failed or cancelled (``move``); False when the retry had already ended (a repeated settle, a late cancel)."""
        if move.entity is not Entity.RETRY:
            raise ValueError(f"{move.entity}.{move.name} is not a transition of a retry")
        row = self.runner.one(
            """UPDATE job_retries SET status = :to, pages_failed = :failed, cost_usd = :cost, error_message = :msg, finished_at = now()
               WHERE job_id = CAST(:id AS uuid) AND attempt = :n AND status = ANY(CAST(:from_ AS text[])) RETURNING id""",
            id=job_id,
            n=attempt,
            to=move.target,
            from_=move.from_states,
            failed=pages_failed,
            cost=cost_usd,
            msg=error_message,
        )
        return row is not None
