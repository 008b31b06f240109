"""Files, jobs and their chunks: the JobRepository (db/jobs.py; its rows: rows/jobs.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from batchlane.pdf.split import ChunkSpan

from batchlane.domain.status import Transition
from batchlane.rows.jobs import ChunkRow, FileRow, JobRow


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
