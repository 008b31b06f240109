"""batchlane.ports.RetryRepository in memory: the contract of db/retries.py's Pg adapter (tests/contract)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from batchlane.domain.status import Entity, RetryStatus, Transition
from batchlane.ports import UniqueViolation
from batchlane.rows import JobRetry
from fakes.jobs import FakeJobs

_MICRO = Decimal("0.000001")  # numeric(14, 6)


@dataclass
class _RetryRows:
    rows: list[JobRetry] = field(default_factory=list)  # insertion order: ids ascending


def _money(value: Decimal | None) -> Decimal | None:
    return None if value is None else Decimal(value).quantize(_MICRO)


class FakeRetries:
    def __init__(self, state: Any) -> None:  # a fakes.FakeState
        self.state = state

    @property
    def _rows(self) -> _RetryRows:
        rows: _RetryRows = self.state.part("retries", _RetryRows)
        return rows

    def _of_job(self, job_id: str) -> list[JobRetry]:
        return sorted((r for r in self._rows.rows if r.job_id == job_id), key=lambda r: r.attempt)

    def running(self, job_id: str) -> JobRetry | None:
        return next((r for r in self._of_job(job_id) if r.status == RetryStatus.RUNNING), None)

    def history(self, job_id: str) -> list[JobRetry]:
        return self._of_job(job_id)

    def get(self, job_id: str, attempt: int) -> JobRetry | None:
        return next((r for r in self._of_job(job_id) if r.attempt == attempt), None)

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
        if FakeJobs(self.state).get_job(job_id) is None:
            raise ValueError(f"no job {job_id}")  # job_retries_job_id_fkey
        if self.running(job_id) is not None:
            raise UniqueViolation("one_running_retry_per_job")
        row = JobRetry(
            id=len(self._rows.rows) + 1,
            job_id=job_id,
            attempt=max((r.attempt for r in self._of_job(job_id)), default=0) + 1,
            status=RetryStatus.RUNNING,
            pages=list(pages),
            error_ids=list(error_ids) if error_ids else None,
            previous_pages_failed=previous_pages_failed,
            previous_total_usd=Decimal(previous_total_usd).quantize(_MICRO),
            previous_markdown_key=previous_markdown_key,
            chunks_before=json.loads(json.dumps(chunks_before)),  # jsonb: a copy, not the caller's list
            pages_failed=None,
            cost_usd=None,
            error_message=None,
            created_at=self.state.clock.now(),
            finished_at=None,
        )
        self._rows.rows.append(row)
        return row

    def finish(self, job_id: str, attempt: int, move: Transition, *, pages_failed: int | None, cost_usd: Decimal, error_message: str | None = None) -> bool:
        if move.entity is not Entity.RETRY:
            raise ValueError(f"{move.entity}.{move.name} is not a transition of a retry")
        rows = self._rows.rows
        for i, row in enumerate(rows):
            if row.job_id == job_id and row.attempt == attempt and move.allows(row.status):
                rows[i] = replace(
                    row,
                    status=move.target,
                    pages_failed=pages_failed,
                    cost_usd=_money(cost_usd),
                    error_message=error_message,
                    finished_at=self.state.clock.now(),
                )
                return True
        return False
