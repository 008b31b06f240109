"""A job's retries of its failed pages, as stored (ports.retries.RetryRepository)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from decimal import Decimal
from typing import Any


@dataclass(frozen=True)
class JobRetry:
    """One job_retries row (0009_job_retries.sql): a retry of a job's failed pages and what the job was before it."""

    id: int
    job_id: str
    attempt: int
    status: str  # running, settled, failed, cancelled (domain.status's RETRY moves)
    pages: list[int]
    error_ids: list[str] | None
    previous_pages_failed: int
    previous_total_usd: Decimal
    previous_markdown_key: str | None
    chunks_before: list[dict[str, Any]]  # the retried chunks as they were: chunkIndex, resultKey, pagesDone, pagesFailed, pagesBatch, attempts
    pages_failed: int | None
    cost_usd: Decimal | None
    error_message: str | None
    created_at: datetime
    finished_at: datetime | None

    @classmethod
    def of(cls, row: dict[str, Any]) -> JobRetry:
        values = {f.name: row[f.name] for f in fields(cls)}
        errors = row["error_ids"]
        return cls(**{**values, "job_id": str(row["job_id"]), "pages": list(row["pages"]), "error_ids": list(errors) if errors else None})
