"""batchlane.ports.JobRepository in memory: the contract of db/jobs.py's Pg adapter (tests/contract).

Every guard of the SQL is here too: a move only from its transition's sources (read from
domain.status's table, so a wrong row there fails the fast tests as well), a chunk claimed only
while its job is processing, heartbeats and completions only by the chunk's own worker.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import timedelta
from decimal import Decimal
from typing import Any

from batchlane.db.jobs import ChunkRow, FileRow, JobRow, check_user_options
from batchlane.domain import status as st
from batchlane.domain.folder_policy import parse_deadline
from batchlane.domain.status import Entity, Transition
from batchlane.pdf.split import ChunkSpan
from batchlane.ports import UniqueViolation

_JOB_FIELDS = frozenset(f.name for f in fields(JobRow))
_CHUNK_FIELDS = frozenset(f.name for f in fields(ChunkRow))


@dataclass
class _JobRows:
    files: dict[str, FileRow] = field(default_factory=dict)
    jobs: dict[str, JobRow] = field(default_factory=dict)
    chunks: dict[tuple[str, int], ChunkRow] = field(default_factory=dict)


def _expect(move: Transition, entity: Entity) -> None:
    if move.entity is not entity:
        raise ValueError(f"{move.entity}.{move.name} is not a transition of a {entity}")


def _known(columns: Mapping[str, Any], allowed: frozenset[str]) -> dict[str, Any]:
    unknown = set(columns) - allowed
    if unknown:
        raise ValueError(f"no such column: {sorted(unknown)}")
    return dict(columns)


class FakeJobs:
    def __init__(self, state: Any) -> None:  # a fakes.FakeState
        self.state = state

    @property
    def _rows(self) -> _JobRows:
        rows: _JobRows = self.state.part("jobs", _JobRows)
        return rows

    # -- files ---------------------------------------------------------------------------
    def insert_file(self, *, owner_id: str, name: str, s3_key: str, size_bytes: int, file_id: str | None = None) -> FileRow:
        now = self.state.clock.now()
        row = FileRow(file_id or str(uuid.uuid4()), owner_id, name, s3_key, size_bytes, st.FileStatus.UPLOADED, None, now, now, None)
        if row.id in self._rows.files:
            raise ValueError(f"file {row.id} exists")
        self._rows.files[row.id] = row
        return row

    def get_file(self, file_id: str) -> FileRow | None:
        return self._rows.files.get(file_id)

    def move_file(self, file_id: str, move: Transition) -> bool:
        _expect(move, Entity.FILE)
        row = self._rows.files.get(file_id)
        if row is None or not move.allows(row.status):
            return False
        self._rows.files[file_id] = replace(row, status=move.target, updated_at=self.state.clock.now())
        return True

    def mark_file_deleted(self, file_id: str) -> None:
        row = self._rows.files.get(file_id)
        if row is not None and row.deleted_at is None:
            now = self.state.clock.now()
            self._rows.files[file_id] = replace(row, deleted_at=now, updated_at=now)

    def put_file(self, row: FileRow) -> FileRow:
        """A file's row as the other fakes write it (a folder file's ``source_bucket``)."""
        self._rows.files[row.id] = row
        return row

    # -- jobs ----------------------------------------------------------------------------
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
    ) -> JobRow:
        check_user_options(options)
        if file_id not in self._rows.files:
            raise ValueError(f"no file {file_id}")  # the foreign key
        if status in st.LIVE_JOB_STATUSES and self.live_job_of_file(file_id) is not None:
            raise UniqueViolation("one_live_job_per_file", f"file {file_id} has a live job")  # the unique index's name
        now = self.state.clock.now()
        job = JobRow(
            id=str(uuid.uuid4()),
            file_id=file_id,
            owner_id=owner_id,
            status=status,
            options=dict(options),
            model_id=model_id,
            total_pages=total_pages,
            pages_per_chunk=pages_per_chunk,
            chunk_count=len(chunks),
            pages_converted=0,
            pages_failed=0,
            pages_batch=0,
            total_cost_usd=Decimal(0),
            error_id=error_id,
            error_message=error_message,
            markdown_key=None,
            execution_name=None,
            created_at=now,
            updated_at=now,
            started_at=None,
            finished_at=now if status in st.FINISHED_JOB_STATUSES else None,
            process_now=process_now,
            max_pages=max_pages,
        )
        self._rows.jobs[job.id] = job
        self._insert_chunks(job.id, chunks, status=chunk_status or status)
        return job

    def _insert_chunks(
        self, job_id: str, chunks: Sequence[ChunkSpan], *, status: str, chunk_bytes: Mapping[int, int] | None = None, chunk_records: Mapping[int, int] | None = None
    ) -> None:
        now = self.state.clock.now()
        for span in chunks:
            key = (job_id, span.index)
            if key in self._rows.chunks:
                raise ValueError(f"chunk {span.index} of job {job_id} exists")
            self._rows.chunks[key] = ChunkRow(
                job_id,
                span.index,
                span.first_page,
                span.last_page,
                status,
                None,
                None,
                0,
                0,
                0,
                0,
                Decimal(0),
                None,
                None,
                now,
                (chunk_bytes or {}).get(span.index),
                (chunk_records or {}).get(span.index),
            )

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
    ) -> JobRow | None:
        move = st.park() if parked else st.queue()
        job = self.move_job(job_id, move, total_pages=total_pages, chunk_count=len(chunks), source_type=source_type)
        if job is not None:
            self._insert_chunks(job_id, chunks, status=move.target, chunk_bytes=chunk_bytes, chunk_records=chunk_records)
        return job

    def get_job(self, job_id: str) -> JobRow | None:
        return self._rows.jobs.get(job_id)

    def lock_job(self, job_id: str) -> JobRow | None:
        return self.get_job(job_id)  # one thread: nothing to serialise against

    def move_job(self, job_id: str, move: Transition, **columns: Any) -> JobRow | None:
        _expect(move, Entity.JOB)
        extra = _known(columns, _JOB_FIELDS)
        if "options" in extra:
            check_user_options(extra["options"])
        if extra.get("retry_pages") is not None:
            extra["retry_pages"] = tuple(extra["retry_pages"])  # an integer[] reads back as a sequence
        job = self._rows.jobs.get(job_id)
        if job is None or not move.allows(job.status):
            return None
        if move.target in st.LIVE_JOB_STATUSES and job.status not in st.LIVE_JOB_STATUSES:
            other = self.live_job_of_file(job.file_id)
            if other is not None and other != job_id:  # a finished job made live again (a retry) beside a newer conversion
                raise UniqueViolation("one_live_job_per_file", f"file {job.file_id} has a live job")  # the unique index's name
        now = self.state.clock.now()
        moved = replace(
            job,
            **extra,
            status=move.target,
            updated_at=now,
            started_at=(job.started_at or now) if move.target == st.JobStatus.PROCESSING else job.started_at,
            finished_at=now if move.target in st.FINISHED_JOB_STATUSES else None,
        )
        self._rows.jobs[job_id] = moved
        return moved

    def mark_process_now(self, job_id: str, *, only_if: str) -> JobRow | None:
        job = self.get_job(job_id)
        if job is None or job.status != only_if:
            return None
        flagged = replace(job, process_now=True, updated_at=self.state.clock.now())
        self._rows.jobs[job_id] = flagged
        return flagged

    def clear_retry(self, job_id: str) -> JobRow | None:
        job = self.get_job(job_id)
        if job is None:
            return None
        cleared = replace(job, retry_attempt=None, retry_pages=None, updated_at=self.state.clock.now())
        self._rows.jobs[job_id] = cleared
        return cleared

    def jobs_in(self, status: str, *, unchanged_for_s: float) -> list[str]:
        # PostgreSQL's now() is a later statement's: a row written before it is "older" by a hair
        cutoff = self.state.clock.now() - timedelta(seconds=unchanged_for_s)
        return [job.id for job in self._rows.jobs.values() if job.status == status and job.updated_at <= cutoff]

    def jobs_to_sweep(self, statuses: Sequence[str], *, unchanged_for_s: float, limit: int) -> list[JobRow]:
        cutoff = self.state.clock.now() - timedelta(seconds=unchanged_for_s)
        due = [
            job
            for job in self._rows.jobs.values()
            if job.status in statuses and not (job.status == st.JobStatus.PAUSED_BUDGET and job.pause_settled) and job.updated_at <= cutoff
        ]
        return random.sample(due, min(len(due), max(limit, 0)))  # ORDER BY random() LIMIT

    def jobs_due(self, *, margin_s: float) -> list[str]:
        parked, soon = st.leave_batch_lane().from_states, self.state.clock.now() + timedelta(seconds=margin_s)
        due = [(deadline, job.id) for job in self._rows.jobs.values() if job.status in parked and (deadline := parse_deadline(job.options.get("deadline")))]
        return [job_id for deadline, job_id in sorted(due) if deadline < soon]

    def put_job(self, job: JobRow) -> JobRow:
        """A job's row as the other fakes change it (the ledger's late batch cost, the budgets' pause)."""
        self._rows.jobs[job.id] = job
        return job

    def jobs_of_owner(self, owner_id: str) -> list[JobRow]:
        """The owner's jobs (for the fake budgets: SQL joins the table, the fakes read each other's rows)."""
        return [job for job in self._rows.jobs.values() if job.owner_id == owner_id]

    def live_job_of_file(self, file_id: str) -> str | None:
        return next((job.id for job in self._rows.jobs.values() if job.file_id == file_id and job.status in st.LIVE_JOB_STATUSES), None)

    def count_live_by_status(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for job in self._rows.jobs.values():
            if job.status in st.LIVE_JOB_STATUSES:
                counts[str(job.status)] = counts.get(str(job.status), 0) + 1
        return counts

    # -- chunks --------------------------------------------------------------------------
    def get_chunks(self, job_id: str) -> list[ChunkRow]:
        return sorted((c for (owner, _), c in self._rows.chunks.items() if owner == job_id), key=lambda c: c.chunk_index)

    def get_chunk(self, job_id: str, chunk_index: int) -> ChunkRow | None:
        return self._rows.chunks.get((job_id, chunk_index))

    def move_chunks(self, job_id: str, move: Transition, *, indexes: Sequence[int] | None = None, **columns: Any) -> int:
        _expect(move, Entity.CHUNK)
        extra = _known(columns, _CHUNK_FIELDS)
        moved = 0
        for chunk in self.get_chunks(job_id):
            if move.allows(chunk.status) and (indexes is None or chunk.chunk_index in indexes):
                self._put(replace(chunk, **extra, status=move.target))
                moved += 1
        return moved

    def _put(self, chunk: ChunkRow) -> ChunkRow:
        chunk = replace(chunk, updated_at=self.state.clock.now())
        self._rows.chunks[(chunk.job_id, chunk.chunk_index)] = chunk
        return chunk

    def _owned(self, job_id: str, chunk_index: int, worker_id: str) -> ChunkRow | None:
        chunk = self.get_chunk(job_id, chunk_index)
        return chunk if chunk is not None and chunk.status == st.ChunkStatus.PROCESSING and chunk.worker_id == worker_id else None

    def claim_chunk(self, job_id: str, chunk_index: int, worker_id: str) -> ChunkRow | None:
        move, job, chunk = st.claim(Entity.CHUNK), self.get_job(job_id), self.get_chunk(job_id, chunk_index)
        if job is None or chunk is None or job.status != st.JobStatus.PROCESSING or not move.allows(chunk.status):
            return None
        now = self.state.clock.now()
        return self._put(replace(chunk, status=move.target, worker_id=worker_id, attempts=chunk.attempts + 1, heartbeat_at=now))

    def heartbeat_chunk(self, job_id: str, chunk_index: int, worker_id: str, pages_done: int) -> bool:
        chunk = self._owned(job_id, chunk_index, worker_id)
        if chunk is None:
            return False
        self._put(replace(chunk, heartbeat_at=self.state.clock.now(), pages_done=pages_done))
        return True

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
    ) -> bool:
        move, chunk = st.complete_chunk(), self.get_chunk(job_id, chunk_index)
        if chunk is None or chunk.worker_id != worker_id or not move.allows(chunk.status):
            return False
        self._put(
            replace(
                chunk,
                status=move.target,
                pages_done=pages_done,
                pages_failed=pages_failed,
                pages_batch=pages_batch,
                cost_usd=chunk.cost_usd + cost_usd,
                result_key=result_key,
            )
        )
        return True

    def add_chunk_spend(self, job_id: str, chunk_index: int, cost_usd: Decimal) -> None:
        chunk = self.get_chunk(job_id, chunk_index)
        if chunk is not None:
            self._put(replace(chunk, cost_usd=chunk.cost_usd + cost_usd))

    def chunk_still_owned(self, job_id: str, chunk_index: int, worker_id: str) -> bool:
        return self._owned(job_id, chunk_index, worker_id) is not None
