"""Files, jobs and their chunks, as stored (ports.jobs.JobRepository)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from decimal import Decimal
from typing import Any


@dataclass(frozen=True)
class FileRow:
    """One files row (0001_init.sql, 0005_files_deleted_at.sql, 0014_folder_jobs.sql)."""

    id: str
    owner_id: str
    name: str
    s3_key: str
    size_bytes: int
    status: str
    source_bucket: str | None
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None

    @classmethod
    def of(cls, row: dict[str, Any]) -> FileRow:
        values: dict[str, Any] = {f.name: row.get(f.name) for f in fields(cls)}  # source_bucket, deleted_at came later
        return cls(**{**values, "id": str(row["id"])})


@dataclass(frozen=True)
class JobRow:
    """One large_conversion_jobs row (0001_init.sql, 0006_job_splitting.sql; the job's own state: 0030_job_state_columns.sql).

    ``options`` is what the user asked for, nothing else; the job's state is in typed columns."""

    id: str
    file_id: str
    owner_id: str
    status: str
    options: dict[str, Any]
    model_id: str
    total_pages: int
    pages_per_chunk: int
    chunk_count: int
    pages_converted: int
    pages_failed: int
    pages_batch: int
    total_cost_usd: Decimal
    error_id: str | None
    error_message: str | None
    markdown_key: str | None
    execution_name: str | None
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    batch_primed: bool = False  # a lane's accepted answers wait for its chunks (they are not asked again)
    batch_cost_usd: Decimal = Decimal(0)  # what its lanes cost: total = chunk costs + this
    pause_settled: bool = False  # paused at its hold, and the paused run's last step ran: it may be resumed
    budget_resumes: int = 0  # how many times it was resumed after a budget pause
    process_now: bool = False  # go on-demand, never wait for the batch lane (process now while splitting; priority high)
    max_pages: int | None = None  # a folder policy's page limit (None: the deployment's)
    retry_attempt: int | None = None  # the retry of failed pages running on the job (None: none runs)
    retry_pages: tuple[int, ...] | None = None  # the pages that retry converts again
    source_type: str = "pdf"  # what the file is (domain/file_types.py; 0043_job_source_type.sql): set at the split

    @classmethod
    def of(cls, row: dict[str, Any]) -> JobRow:
        values = {f.name: row[f.name] for f in fields(cls)}  # columns added later are not read here
        pages = row["retry_pages"]
        return cls(
            **{
                **values,
                "id": str(row["id"]),
                "file_id": str(row["file_id"]),
                "options": dict(row["options"] or {}),
                "retry_pages": tuple(pages) if pages is not None else None,
            }
        )


@dataclass(frozen=True)
class ChunkRow:
    """One chunk_jobs row (0001_init.sql, 0015_chunk_statuses.sql)."""

    job_id: str
    chunk_index: int
    first_page: int
    last_page: int
    status: str
    worker_id: str | None
    heartbeat_at: datetime | None
    attempts: int
    pages_done: int
    pages_failed: int
    pages_batch: int
    cost_usd: Decimal
    result_key: str | None
    error: str | None
    updated_at: datetime
    source_bytes: int | None = None  # its source PDF's size, where the split knew it (0022_chunk_source_bytes.sql)
    records: int | None = None  # batch records when not one per page: a born-digital chunk's pictures to describe (0044_chunk_records.sql)

    @classmethod
    def of(cls, row: dict[str, Any]) -> ChunkRow:
        values: dict[str, Any] = {f.name: row.get(f.name) for f in fields(cls)}  # source_bytes came later
        return cls(**{**values, "job_id": str(row["job_id"])})
