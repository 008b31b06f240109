"""Files, jobs and chunks: every status change is guarded on the current status."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any, Protocol

from batchlane.db.connection import Row
from batchlane.pdf.split import ChunkSpan

LIVE_JOB_STATUSES = ("splitting", "pending", "waiting_batch", "processing", "paused_budget", "assembling")
# Every status a job can be in, in the order a job passes through them (0006_job_splitting.sql).
JOB_STATUSES = (*LIVE_JOB_STATUSES, "completed", "failed", "cancelled")
TERMINAL_JOB_STATUSES = ("completed", "failed", "cancelled")


class Runner(Protocol):
    """A Database or a Transaction: anything with run/one."""

    def run(self, sql: str, **params: Any) -> list[Row]: ...
    def one(self, sql: str, **params: Any) -> Row | None: ...


# -- files -------------------------------------------------------------------------------
def insert_file(db: Runner, *, owner_id: str, name: str, s3_key: str, size_bytes: int, file_id: str | None = None) -> Row:
    row = db.one(
        "INSERT INTO files (id, owner_id, name, s3_key, size_bytes) VALUES (COALESCE(CAST(:id AS uuid), gen_random_uuid()), :owner, :name, :key, :size) RETURNING *",
        id=file_id,
        owner=owner_id,
        name=name,
        key=s3_key,
        size=size_bytes,
    )
    assert row is not None
    return row


def get_file(db: Runner, file_id: str) -> Row | None:
    return db.one("SELECT * FROM files WHERE id = CAST(:id AS uuid)", id=file_id)


def set_file_status(db: Runner, file_id: str, status: str) -> None:
    db.run("UPDATE files SET status = :s, updated_at = now() WHERE id = CAST(:id AS uuid)", s=status, id=file_id)


# -- jobs --------------------------------------------------------------------------------
def insert_job(
    db: Runner,
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
) -> Row:
    job = db.one(
        """INSERT INTO large_conversion_jobs
             (file_id, owner_id, status, options, model_id, total_pages, pages_per_chunk, chunk_count, error_id, error_message,
              finished_at)
           VALUES (CAST(:file_id AS uuid), :owner, :status, CAST(:options AS jsonb), :model, :pages, :ppc, :chunks, :error_id, :error_message,
                   CASE WHEN :status IN ('failed', 'completed', 'cancelled') THEN now() END)
           RETURNING *""",
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
    insert_chunks(db, str(job["id"]), chunks, status=status)
    return job


def insert_chunks(db: Runner, job_id: str, chunks: Sequence[ChunkSpan], *, status: str) -> None:
    for span in chunks:
        db.run(
            "INSERT INTO chunk_jobs (job_id, chunk_index, first_page, last_page, status) VALUES (CAST(:job AS uuid), :i, :first, :last, :status)",
            job=job_id,
            i=span.index,
            first=span.first_page,
            last=span.last_page,
            status=status,
        )


def finish_split(db: Runner, job_id: str, *, status: str, total_pages: int, chunks: Sequence[ChunkSpan]) -> Row | None:
    """splitting → ``status`` with the page count and the chunk rows; None when the job left
    splitting meanwhile (cancelled): then nothing is written."""
    job = transition_job(db, job_id, from_statuses=("splitting",), to_status=status, total_pages=total_pages, chunk_count=len(chunks))
    if job is not None:
        insert_chunks(db, job_id, chunks, status=status)
    return job


def get_job(db: Runner, job_id: str) -> Row | None:
    return db.one("SELECT * FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=job_id)


def lock_job(db: Runner, job_id: str) -> Row | None:
    """SELECT ... FOR UPDATE: serialises the transitions of one job."""
    return db.one("SELECT * FROM large_conversion_jobs WHERE id = CAST(:id AS uuid) FOR UPDATE", id=job_id)


def transition_job(db: Runner, job_id: str, *, from_statuses: Sequence[str], to_status: str, **fields: Any) -> Row | None:
    """Move a job only if it is in one of ``from_statuses``; None when it was not."""
    sets = ", ".join(f"{name} = :f_{name}" for name in fields)
    params = {f"f_{name}": value for name, value in fields.items()}
    row = db.one(
        f"""UPDATE large_conversion_jobs SET status = :to, updated_at = now(){", " + sets if sets else ""},
               started_at = CASE WHEN :to = 'processing' THEN COALESCE(started_at, now()) ELSE started_at END,
               finished_at = CASE WHEN :to IN ('completed', 'failed', 'cancelled') THEN now() ELSE finished_at END
            WHERE id = CAST(:id AS uuid) AND status = ANY(CAST(:from_ AS text[])) RETURNING *""",
        to=to_status,
        id=job_id,
        from_=list(from_statuses),
        **params,
    )
    return row


def list_jobs(db: Runner, *, status: str | None = None, owner_id: str | None = None, limit: int = 100) -> list[Row]:
    return db.run(
        """SELECT * FROM large_conversion_jobs
           WHERE (CAST(:status AS text) IS NULL OR status = :status) AND (CAST(:owner AS text) IS NULL OR owner_id = :owner)
           ORDER BY created_at DESC LIMIT :limit""",
        status=status,
        owner=owner_id,
        limit=limit,
    )


# -- chunks ------------------------------------------------------------------------------
def get_chunks(db: Runner, job_id: str) -> list[Row]:
    return db.run("SELECT * FROM chunk_jobs WHERE job_id = CAST(:id AS uuid) ORDER BY chunk_index", id=job_id)


def get_chunk(db: Runner, job_id: str, chunk_index: int) -> Row | None:
    return db.one("SELECT * FROM chunk_jobs WHERE job_id = CAST(:id AS uuid) AND chunk_index = :i", id=job_id, i=chunk_index)


def set_chunks_status(db: Runner, job_id: str, *, from_statuses: Sequence[str], to_status: str) -> int:
    rows = db.run(
        """UPDATE chunk_jobs SET status = :to, updated_at = now()
           WHERE job_id = CAST(:id AS uuid) AND status = ANY(CAST(:from_ AS text[])) RETURNING chunk_index""",
        to=to_status,
        id=job_id,
        from_=list(from_statuses),
    )
    return len(rows)


def claim_chunk(db: Runner, job_id: str, chunk_index: int, worker_id: str) -> Row | None:
    """pending (or a previous attempt's processing) → processing for this worker, if the job is processing."""
    return db.one(
        """UPDATE chunk_jobs c SET status = 'processing', worker_id = :w, attempts = c.attempts + 1,
               heartbeat_at = now(), updated_at = now()
           FROM large_conversion_jobs j
           WHERE c.job_id = CAST(:id AS uuid) AND c.chunk_index = :i AND j.id = c.job_id
             AND j.status = 'processing' AND c.status IN ('pending', 'processing')
           RETURNING c.*""",
        id=job_id,
        i=chunk_index,
        w=worker_id,
    )


def heartbeat_chunk(db: Runner, job_id: str, chunk_index: int, worker_id: str, pages_done: int) -> bool:
    """Guarded on status processing and this worker: False means stop (cancelled or taken over)."""
    row = db.one(
        """UPDATE chunk_jobs SET heartbeat_at = now(), pages_done = :n, updated_at = now()
           WHERE job_id = CAST(:id AS uuid) AND chunk_index = :i AND status = 'processing' AND worker_id = :w
           RETURNING chunk_index""",
        id=job_id,
        i=chunk_index,
        w=worker_id,
        n=pages_done,
    )
    return row is not None


def complete_chunk(
    db: Runner,
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
    row = db.one(
        """UPDATE chunk_jobs SET status = 'completed', pages_done = :done, pages_failed = :failed, pages_batch = :batch,
               cost_usd = cost_usd + :cost, result_key = :key, updated_at = now()
           WHERE job_id = CAST(:id AS uuid) AND chunk_index = :i AND status = 'processing' AND worker_id = :w
           RETURNING chunk_index""",
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


def add_chunk_spend(db: Runner, job_id: str, chunk_index: int, cost_usd: Decimal) -> None:
    db.run(
        "UPDATE chunk_jobs SET cost_usd = cost_usd + :cost, updated_at = now() WHERE job_id = CAST(:id AS uuid) AND chunk_index = :i",
        id=job_id,
        i=chunk_index,
        cost=cost_usd,
    )
