"""Files, jobs and their chunks: the rows and the JobRepository (db/jobs.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from batchlane.pdf.split import ChunkSpan

from batchlane.domain.status import Transition


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


class JobRepository(Protocol):
    """Files, jobs and their chunks (db/jobs.py): every status move goes through domain.status's table.

    A move answers None / False / 0 when the row was not in one of the transition's sources (nothing
    written); a chunk is claimed only while its job is processing, and only its worker completes it."""

    # files
    def insert_file(self, *, owner_id: str, name: str, s3_key: str, size_bytes: int, file_id: str | None = None) -> FileRow: ...
    def get_file(self, file_id: str) -> FileRow | None: ...
    def move_file(self, file_id: str, move: Transition) -> bool: ...
    def mark_file_deleted(self, file_id: str) -> None: ...  # hidden (its rows stay for the ledger); the first time only
    # jobs
    def insert_job(
        self,
        *,
        file_id: str,
        owner_id: str,
        status: str,
        options: dict[str, Any],
        model_id: str,
        total_pages: int,
        pages_per_chunk: int,
        chunks: Sequence[ChunkSpan],
        error_id: str | None = None,
        error_message: str | None = None,
        chunk_status: str | None = None,
        process_now: bool = False,
        max_pages: int | None = None,
    ) -> JobRow: ...  # options: the user's only (an underscore key is refused: the job's state has columns)
    def finish_split(
        self,
        job_id: str,
        *,
        parked: bool,
        total_pages: int,
        chunks: Sequence[ChunkSpan],
        chunk_bytes: Mapping[int, int] | None = None,
        source_type: str = "pdf",
        chunk_records: Mapping[int, int] | None = None,
    ) -> JobRow | None: ...  # chunk_records: a born-digital chunk's pictures to describe (ChunkRow.records)
    def get_job(self, job_id: str) -> JobRow | None: ...
    def lock_job(self, job_id: str) -> JobRow | None: ...  # inside ``with uow:``, serialises the job's moves
    def move_job(self, job_id: str, move: Transition, **fields: Any) -> JobRow | None: ...  # fields: JobRow columns
    def mark_process_now(self, job_id: str, *, only_if: str) -> JobRow | None: ...
    def clear_retry(self, job_id: str) -> JobRow | None: ...
    def jobs_in(self, status: str, *, unchanged_for_s: float) -> list[str]: ...
    def jobs_to_sweep(self, statuses: Sequence[str], *, unchanged_for_s: float, limit: int) -> list[JobRow]:
        """Jobs in ``statuses`` unchanged for ``unchanged_for_s`` s, ``limit`` of them in random order (a pause already
        settled left out): the ones whose workflow may have ended without recording their end."""
        ...

    def jobs_due(self, *, margin_s: float) -> list[str]: ...  # parked jobs whose deadline option is less than margin_s away, soonest first
    def live_job_of_file(self, file_id: str) -> str | None: ...
    def count_live_by_status(self) -> dict[str, int]: ...  # jobs per live status (a gauge); a status with none is absent
    # chunks
    def get_chunks(self, job_id: str) -> list[ChunkRow]: ...
    def get_chunk(self, job_id: str, chunk_index: int) -> ChunkRow | None: ...
    def move_chunks(self, job_id: str, move: Transition, *, indexes: Sequence[int] | None = None, **fields: Any) -> int: ...
    def claim_chunk(self, job_id: str, chunk_index: int, worker_id: str) -> ChunkRow | None: ...
    def heartbeat_chunk(self, job_id: str, chunk_index: int, worker_id: str, pages_done: int) -> bool: ...
    def complete_chunk(
        self,
        job_id: str,
        chunk_index: int,
        worker_id: str,
        *,
        pages_done: int,
        pages_failed: int,
        pages_batch: int,
        cost_usd: Decimal,
        result_key: str,
    ) -> bool: ...
    def add_chunk_spend(self, job_id: str, chunk_index: int, cost_usd: Decimal) -> None: ...
    def chunk_still_owned(self, job_id: str, chunk_index: int, worker_id: str) -> bool: ...
