"""Files, jobs and chunks: every status change is guarded on the current status."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, Protocol

from batchlane.db.connection import Row
from batchlane.domain import status as st
from batchlane.domain.status import Entity, Transition
from batchlane.pdf.split import ChunkSpan
from batchlane.rows import ChunkRow, FileRow, JobRow

LIVE_JOB_STATUSES = st.LIVE_JOB_STATUSES
# Every status a job can be in, in the order a job passes through them.
JOB_STATUSES: tuple[str, ...] = tuple(st.JobStatus)
_JSONB_COLUMNS = frozenset({"options"})


class Runner(Protocol):
    """A Database or a Transaction: anything with run/one."""

    def run(self, sql: str, **params: Any) -> list[Row]: ...
    def one(self, sql: str, **params: Any) -> Row | None: ...


def _job(row: Row | None) -> JobRow | None:
    return JobRow.of(row) if row is not None else None


def _chunk(row: Row | None) -> ChunkRow | None:
    return ChunkRow.of(row) if row is not None else None


def _expect(move: Transition, entity: Entity) -> None:
    if move.entity is not entity:
        raise ValueError(f"{move.entity}.{move.name} is not a transition of a {entity}")


def check_user_options(options: Mapping[str, Any]) -> None:
    """The job's own state has columns (0030): an underscore key in ``options`` is a bug, refused before it is stored."""
    internal = sorted(k for k in options if k.startswith("_"))
    if internal:
        raise ValueError(f"job state {internal} belongs in its columns, not in the user's options")


def _sets(fields: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``, col = :f_col ...`` for extra columns written with a move (jsonb columns cast)."""
    if "options" in fields:
        check_user_options(fields["options"])
    parts = [f"{name} = CAST(:f_{name} AS jsonb)" if name in _JSONB_COLUMNS else f"{name} = :f_{name}" for name in fields]
    return "".join(f", {part}" for part in parts), {f"f_{name}": value for name, value in fields.items()}


class PgJobs:
    """batchlane.ports.JobRepository on PostgreSQL, bound to one Database or Transaction."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner

    # files
    def insert_file(self, *, owner_id: str, name: str, s3_key: str, size_bytes: int, file_id: str | None = None) -> FileRow:
        row = self.runner.one(
            "INSERT INTO files (id, owner_id, name, s3_key, size_bytes) VALUES (COALESCE(CAST(:id AS uuid), gen_random_uuid()), :owner, :name, :key, :size) RETURNING *",
            id=file_id,
            owner=owner_id,
            name=name,
            key=s3_key,
            size=size_bytes,
        )
        assert row is not None
        return FileRow.of(row)

    def get_file(self, file_id: str) -> FileRow | None:
        row = self.runner.one("SELECT * FROM files WHERE id = CAST(:id AS uuid)", id=file_id)
        return FileRow.of(row) if row is not None else None

    def move_file(self, file_id: str, move: Transition) -> bool:
        """The file follows its job (``move`` a file transition); False when it was not in a from-state."""
        _expect(move, Entity.FILE)
        row = self.runner.one(
            "UPDATE files SET status = :to, updated_at = now() WHERE id = CAST(:id AS uuid) AND status = ANY(CAST(:from_ AS text[])) RETURNING id",
            to=move.target,
            from_=move.from_states,
            id=file_id,
        )
        return row is not None

    def mark_file_deleted(self, file_id: str) -> None:
        """Hide the file (its rows stay for the ledger); once only."""
        self.runner.run("UPDATE files SET deleted_at = now(), updated_at = now() WHERE id = CAST(:id AS uuid) AND deleted_at IS NULL", id=file_id)

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
    ) -> JobRow:
        """The job and its chunks, in ``chunk_status`` (default: the job's status). ``options``: the user's only."""
        check_user_options(options)
        job = self.runner.one(
            """INSERT INTO large_conversion_jobs
                 (file_id, owner_id, status, options, model_id, total_pages, pages_per_chunk, chunk_count, error_id, error_message,
                  finished_at, process_now, max_pages)
               VALUES (CAST(:file_id AS uuid), :owner, :status, CAST(:options AS jsonb), :model, :pages, :ppc, :chunks, :error_id, :error_message,
                       CASE WHEN :status = ANY(CAST(:finished AS text[])) THEN now() END, :process_now, :max_pages)
               RETURNING *""",
            process_now=process_now,
            max_pages=max_pages,
            finished=list(st.FINISHED_JOB_STATUSES),
            file_id=file_id,
            owner=owner_id,
            status=status,
            options=options,
            model=model_id,
            pages=total_pages,
            ppc=pages_per_chunk,
            chunks=len(chunks),
            error_id=error_id,
            error_message=error_message,
        )
        assert job is not None
        self.insert_chunks(str(job["id"]), chunks, status=chunk_status or status)
        return JobRow.of(job)

    def insert_chunks(
        self, job_id: str, chunks: Sequence[ChunkSpan], *, status: str, chunk_bytes: Mapping[int, int] | None = None, chunk_records: Mapping[int, int] | None = None
    ) -> None:
        """The chunk rows; ``chunk_bytes`` (chunk index → its source PDF's size) where the split knows it; ``chunk_records``
        (chunk index → its batch records) where they are not one per page (a born-digital chunk's pictures)."""
        for span in chunks:
            self.runner.run(
                """INSERT INTO chunk_jobs (job_id, chunk_index, first_page, last_page, status, source_bytes, records)
                   VALUES (CAST(:job AS uuid), :i, :first, :last, :status, :size, :records)""",
                job=job_id,
                i=span.index,
                first=span.first_page,
                last=span.last_page,
                status=status,
                size=(chunk_bytes or {}).get(span.index),
                records=(chunk_records or {}).get(span.index),
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
        """splitting → waiting_batch (``parked``) or pending, with the page count, the file's type and the chunk rows;
        None when the job left splitting meanwhile (cancelled): then nothing is written."""
        move = st.park() if parked else st.queue()
        job = self.move_job(job_id, move, total_pages=total_pages, chunk_count=len(chunks), source_type=source_type)
        if job is not None:
            self.insert_chunks(job_id, chunks, status=move.target, chunk_bytes=chunk_bytes, chunk_records=chunk_records)
        return job

    def get_job(self, job_id: str) -> JobRow | None:
        return _job(self.runner.one("SELECT * FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=job_id))

    def lock_job(self, job_id: str) -> JobRow | None:
        """SELECT ... FOR UPDATE: serialises the transitions of one job."""
        return _job(self.runner.one("SELECT * FROM large_conversion_jobs WHERE id = CAST(:id AS uuid) FOR UPDATE", id=job_id))

    def move_job(self, job_id: str, move: Transition, **fields: Any) -> JobRow | None:
        """Move a job along ``move`` (a job transition of domain.status) with extra columns; None when it
        was not in one of the move's from-states. Entering processing stamps started_at; finishing, finished_at."""
        _expect(move, Entity.JOB)
        sets, params = _sets(fields)
        row = self.runner.one(
            f"""UPDATE large_conversion_jobs SET status = :to, updated_at = now(){sets},
                   started_at = CASE WHEN :to = 'processing' THEN COALESCE(started_at, now()) ELSE started_at END,
                   finished_at = CASE WHEN :to = ANY(CAST(:finished AS text[])) THEN now() END
                WHERE id = CAST(:id AS uuid) AND status = ANY(CAST(:from_ AS text[])) RETURNING *""",
            to=move.target,
            id=job_id,
            from_=move.from_states,
            finished=list(st.FINISHED_JOB_STATUSES),
            **params,
        )
        return _job(row)

    def mark_process_now(self, job_id: str, *, only_if: str) -> JobRow | None:
        """Send the job on-demand once split (process now while ``only_if``, i.e. splitting); None when it was not."""
        return _job(
            self.runner.one(
                """UPDATE large_conversion_jobs SET process_now = true, updated_at = now()
               WHERE id = CAST(:id AS uuid) AND status = :only_if RETURNING *""",
                id=job_id,
                only_if=only_if,
            )
        )

    def clear_retry(self, job_id: str) -> JobRow | None:
        """The running retry's scope gone from the job (settle's part; its row in job_retries keeps the history)."""
        return _job(
            self.runner.one(
                """UPDATE large_conversion_jobs SET retry_attempt = NULL, retry_pages = NULL, updated_at = now()
               WHERE id = CAST(:id AS uuid) RETURNING *""",
                id=job_id,
            )
        )

    def jobs_in(self, status: str, *, unchanged_for_s: float) -> list[str]:
        """Ids of the jobs in ``status`` not updated for ``unchanged_for_s`` seconds (stalled)."""
        rows = self.runner.run(
            "SELECT id FROM large_conversion_jobs WHERE status = :status AND updated_at < now() - make_interval(secs => :secs)",
            status=status,
            secs=unchanged_for_s,
        )
        return [str(r["id"]) for r in rows]

    def jobs_to_sweep(self, statuses: Sequence[str], *, unchanged_for_s: float, limit: int) -> list[JobRow]:
        """Live jobs in ``statuses`` unchanged for ``unchanged_for_s`` s, ``limit`` of them in random order: the ones whose
        workflow may have ended without recording their end (operations/recovery.py). Random, so that more than ``limit``
        long-running jobs cannot hide an ended one from every run. A pause already settled is left alone."""
        rows = self.runner.run(
            """SELECT * FROM large_conversion_jobs
               WHERE status = ANY(CAST(:statuses AS text[])) AND NOT (status = :paused AND pause_settled)
                 AND updated_at < now() - make_interval(secs => :secs)
               ORDER BY random() LIMIT :limit""",
            statuses=list(statuses),
            paused=str(st.JobStatus.PAUSED_BUDGET),
            secs=unchanged_for_s,
            limit=limit,
        )
        return [JobRow.of(row) for row in rows]

    def jobs_due(self, *, margin_s: float) -> list[str]:
        """Parked jobs whose ``deadline`` option is less than ``margin_s`` away: they must leave for on-demand now."""
        rows = self.runner.run(
            """SELECT id FROM large_conversion_jobs
               WHERE status = ANY(CAST(:parked AS text[])) AND options ? 'deadline'
                 AND CAST(options ->> 'deadline' AS timestamptz) < now() + make_interval(secs => :secs)
               ORDER BY CAST(options ->> 'deadline' AS timestamptz)""",
            parked=[str(x) for x in st.leave_batch_lane().from_states],
            secs=margin_s,
        )
        return [str(r["id"]) for r in rows]

    def live_job_of_file(self, file_id: str) -> str | None:
        """The id of the file's live job (at most one: one_live_job_per_file), if any."""
        row = self.runner.one(
            "SELECT id FROM large_conversion_jobs WHERE file_id = CAST(:id AS uuid) AND status = ANY(CAST(:live AS text[]))",
            id=file_id,
            live=list(st.LIVE_JOB_STATUSES),
        )
        return str(row["id"]) if row else None

    def count_live_by_status(self) -> dict[str, int]:
        """How many jobs are in each live status (a gauge)."""
        rows = self.runner.run(
            "SELECT status, count(*) AS n FROM large_conversion_jobs WHERE status = ANY(CAST(:live AS text[])) GROUP BY status",
            live=list(st.LIVE_JOB_STATUSES),
        )
        return {r["status"]: int(r["n"]) for r in rows}

    def list_jobs(self, *, status: str | None = None, owner_id: str | None = None, limit: int = 100) -> list[JobRow]:
        """Jobs newest first (for tests and tools; the API lists through the read model)."""
        rows = self.runner.run(
            """SELECT * FROM large_conversion_jobs
               WHERE (CAST(:status AS text) IS NULL OR status = :status) AND (CAST(:owner AS text) IS NULL OR owner_id = :owner)
               ORDER BY created_at DESC LIMIT :limit""",
            status=status,
            owner=owner_id,
            limit=limit,
        )
        return [JobRow.of(row) for row in rows]

    # chunks
    def get_chunks(self, job_id: str) -> list[ChunkRow]:
        return [ChunkRow.of(row) for row in self.runner.run("SELECT * FROM chunk_jobs WHERE job_id = CAST(:id AS uuid) ORDER BY chunk_index", id=job_id)]

    def get_chunk(self, job_id: str, chunk_index: int) -> ChunkRow | None:
        return _chunk(self.runner.one("SELECT * FROM chunk_jobs WHERE job_id = CAST(:id AS uuid) AND chunk_index = :i", id=job_id, i=chunk_index))

    def move_chunks(self, job_id: str, move: Transition, *, indexes: Sequence[int] | None = None, **fields: Any) -> int:
        """Move the job's chunks (those of ``indexes`` only, when given) that are in one of the move's
        from-states; the number moved."""
        _expect(move, Entity.CHUNK)
        sets, params = _sets(fields)
        rows = self.runner.run(
            f"""UPDATE chunk_jobs SET status = :to, updated_at = now(){sets}
                WHERE job_id = CAST(:id AS uuid) AND status = ANY(CAST(:from_ AS text[]))
                  AND (CAST(:indexes AS integer[]) IS NULL OR chunk_index = ANY(CAST(:indexes AS integer[])))
                RETURNING chunk_index""",
            to=move.target,
            id=job_id,
            from_=move.from_states,
            indexes=list(indexes) if indexes is not None else None,
            **params,
        )
        return len(rows)

    def claim_chunk(self, job_id: str, chunk_index: int, worker_id: str) -> ChunkRow | None:
        """pending (or a previous attempt's processing) → processing for this worker, if the job is processing."""
        move = st.claim(Entity.CHUNK)
        return _chunk(
            self.runner.one(
                """UPDATE chunk_jobs c SET status = :to, worker_id = :w, attempts = c.attempts + 1,
                   heartbeat_at = now(), updated_at = now()
               FROM large_conversion_jobs j
               WHERE c.job_id = CAST(:id AS uuid) AND c.chunk_index = :i AND j.id = c.job_id
                 AND j.status = :job_status AND c.status = ANY(CAST(:from_ AS text[]))
               RETURNING c.*""",
                id=job_id,
                i=chunk_index,
                w=worker_id,
                to=move.target,
                from_=move.from_states,
                job_status=st.JobStatus.PROCESSING,
            )
        )

    def heartbeat_chunk(self, job_id: str, chunk_index: int, worker_id: str, pages_done: int) -> bool:
        """Guarded on status processing and this worker: False means stop (cancelled or taken over)."""
        row = self.runner.one(
            """UPDATE chunk_jobs SET heartbeat_at = now(), pages_done = :n, updated_at = now()
               WHERE job_id = CAST(:id AS uuid) AND chunk_index = :i AND status = :processing AND worker_id = :w
               RETURNING chunk_index""",
            processing=st.ChunkStatus.PROCESSING,
            id=job_id,
            i=chunk_index,
            w=worker_id,
            n=pages_done,
        )
        return row is not None

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
        row = self.runner.one(
            """UPDATE chunk_jobs SET status = :to, pages_done = :done, pages_failed = :failed, pages_batch = :batch,
                   cost_usd = cost_usd + :cost, result_key = :key, updated_at = now()
               WHERE job_id = CAST(:id AS uuid) AND chunk_index = :i AND status = ANY(CAST(:from_ AS text[])) AND worker_id = :w
               RETURNING chunk_index""",
            to=st.complete_chunk().target,
            from_=st.complete_chunk().from_states,
            id=job_id,
            i=chunk_index,
            w=worker_id,
            done=pages_done,
            failed=pages_failed,
            batch=pages_batch,
            cost=cost_usd,
            key=result_key,
        )
        return row is not None

    def add_chunk_spend(self, job_id: str, chunk_index: int, cost_usd: Decimal) -> None:
        self.runner.run(
            "UPDATE chunk_jobs SET cost_usd = cost_usd + :cost, updated_at = now() WHERE job_id = CAST(:id AS uuid) AND chunk_index = :i",
            id=job_id,
            i=chunk_index,
            cost=cost_usd,
        )

    def chunk_still_owned(self, job_id: str, chunk_index: int, worker_id: str) -> bool:
        """Read-only: is the chunk still processing under this worker (not cancelled, not taken over)?"""
        row = self.runner.one(
            """SELECT count(*) AS owned FROM chunk_jobs
               WHERE job_id = CAST(:id AS uuid) AND chunk_index = :i AND status = :processing AND worker_id = :w""",
            id=job_id,
            i=chunk_index,
            w=worker_id,
            processing=st.ChunkStatus.PROCESSING,
        )
        return bool(row and row["owned"])
