"""conversion_batch_jobs: one row per job, preparing → submitted [→ stopping] → closed, every move guarded.

``stopping``: the lane gave up on a Bedrock job that was still running (collect failing,
a submit that failed after the job was created). The job was told to stop and its
conversion went on-demand; the row waits for the terminal status to bill it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from decimal import Decimal
from typing import Any

from batchlane.db.connection import Row
from batchlane.db.jobs import Runner
from batchlane.domain import status as st
from batchlane.domain.status import BatchRowState, BedrockJobStatus, Transition

# "Lost" is ours: GetModelInvocationJob answered ResourceNotFoundException. Nothing more
# will come from that job, so it ends like a terminal status (collect what exists).
LOST = BedrockJobStatus.LOST.value
TERMINAL_BEDROCK_STATUSES = st.TERMINAL_BEDROCK_STATUSES
IN_FLIGHT_STATES = st.IN_FLIGHT_BATCH_ROW_STATES
_CLAIM_LOCK = 7_357_202  # the advisory lock that serialises claimers


@dataclass(frozen=True)
class BatchRow:
    """One conversion_batch_jobs row (0001_init.sql, 0008_batch_row_stopping.sql)."""

    id: int
    job_id: str
    state: str
    end_state: str | None
    reason: str | None
    model_id: str
    bedrock_job_arn: str | None
    bedrock_job_name: str | None
    bedrock_status: str | None
    task_tokens: list[str]
    record_count: int | None
    input_bytes: int | None
    accepted_count: int | None
    fallback_count: int | None
    manifest_key: str | None
    output_uri: str | None
    deadline: datetime | None
    attempts: int
    collect_attempts: int
    cost_usd: Decimal | None
    created_at: datetime
    prepare_started_at: datetime | None
    prepared_at: datetime | None
    submitted_at: datetime | None
    terminal_seen_at: datetime | None
    collect_started_at: datetime | None
    closed_at: datetime | None
    resumed_at: datetime | None
    updated_at: datetime

    @property
    def arn(self) -> str:
        """The Bedrock job's ARN; only a row that was submitted has one."""
        if self.bedrock_job_arn is None:
            raise ValueError(f"the batch row of job {self.job_id} ({self.state}) has no Bedrock job")
        return self.bedrock_job_arn

    @classmethod
    def of(cls, row: Row) -> BatchRow:
        values = {f.name: row[f.name] for f in fields(cls)}  # columns added later are not read here
        return cls(**{**values, "job_id": str(row["job_id"]), "task_tokens": list(row["task_tokens"] or [])})


@dataclass(frozen=True)
class ParkedJob:
    job_id: str
    model_id: str


def _one(db: Runner, sql: str, **params: Any) -> BatchRow | None:
    row = db.one(sql, **params)
    return BatchRow.of(row) if row is not None else None


def _all(db: Runner, sql: str, **params: Any) -> list[BatchRow]:
    return [BatchRow.of(row) for row in db.run(sql, **params)]


def get_row(db: Runner, job_id: str) -> BatchRow | None:
    return _one(db, "SELECT * FROM conversion_batch_jobs WHERE job_id = CAST(:job AS uuid)", job=job_id)


def lock_row(db: Runner, job_id: str) -> BatchRow | None:
    """SELECT ... FOR UPDATE: a user's action and the lane's steps on one row go one at a time."""
    return _one(db, "SELECT * FROM conversion_batch_jobs WHERE job_id = CAST(:job AS uuid) FOR UPDATE", job=job_id)


def count_in_flight(db: Runner, model_id: str) -> int:
    row = db.one(
        "SELECT count(*) AS n FROM conversion_batch_jobs WHERE state = ANY(CAST(:states AS text[])) AND model_id = :model",
        states=list(IN_FLIGHT_STATES),
        model=model_id,
    )
    return int(row["n"]) if row else 0


def count_past_deadline(db: Runner) -> int:
    """Rows not closed whose deadline has passed (a gauge: should stay 0)."""
    row = db.one("SELECT count(*) AS n FROM conversion_batch_jobs WHERE state <> :closed AND deadline < now()", closed=BatchRowState.CLOSED)
    return int(row["n"]) if row else 0


def lock_claims(db: Runner) -> None:
    """Transaction-level advisory lock: two claimers never overshoot the concurrent-job quota."""
    db.run("SELECT pg_advisory_xact_lock(:key)", key=_CLAIM_LOCK)


def claimable_jobs(db: Runner, *, limit: int = 500) -> list[ParkedJob]:
    """Parked jobs without a batch row, locked (SKIP LOCKED: a cancel or process-now in flight keeps its job),
    in fair order: round robin across owners, weighted by what each already has in flight. An owner's k-th
    waiting job has turn k + (their batch rows in flight); lowest turns first, ties oldest first
    (docs/operations.md "Budgets, caps and fair sharing")."""
    rows = db.run(
        """WITH waiting AS (
                SELECT j.id, j.owner_id, j.created_at,
                       row_number() OVER (PARTITION BY j.owner_id ORDER BY j.created_at, j.id) AS turn
                FROM large_conversion_jobs j
                WHERE j.status = ANY(CAST(:from_ AS text[]))
                  AND NOT EXISTS (SELECT 1 FROM conversion_batch_jobs b WHERE b.job_id = j.id)),
              busy AS (
                SELECT j.owner_id, count(*) AS n FROM conversion_batch_jobs b JOIN large_conversion_jobs j ON j.id = b.job_id
                WHERE b.state = ANY(CAST(:in_flight AS text[])) GROUP BY j.owner_id)
           SELECT j.id, j.model_id FROM large_conversion_jobs j
           JOIN waiting w ON w.id = j.id
           LEFT JOIN busy ON busy.owner_id = w.owner_id
           WHERE j.status = ANY(CAST(:from_ AS text[]))
           ORDER BY w.turn + COALESCE(busy.n, 0), w.created_at, j.id
           LIMIT :limit
           FOR UPDATE OF j SKIP LOCKED""",
        from_=list(st.claim().from_states),
        in_flight=list(IN_FLIGHT_STATES),
        limit=limit,
    )
    return [ParkedJob(str(r["id"]), r["model_id"]) for r in rows]


def preparing_job_ids(db: Runner) -> list[str]:
    """Parked jobs whose row is preparing: each should have a batch-lane execution."""
    rows = db.run(
        """SELECT b.job_id FROM conversion_batch_jobs b JOIN large_conversion_jobs j ON j.id = b.job_id
           WHERE b.state = :preparing AND j.status = ANY(CAST(:parked AS text[]))""",
        preparing=BatchRowState.PREPARING,
        parked=st.claim().from_states,
    )
    return [str(r["job_id"]) for r in rows]


def stranded_job_ids(db: Runner, *, older_than_s: float) -> list[str]:
    """Jobs still parked whose row closed (or went stopping) ``older_than_s`` ago: the lane's resume never came."""
    rows = db.run(
        """SELECT j.id FROM large_conversion_jobs j JOIN conversion_batch_jobs b ON b.job_id = j.id
           WHERE j.status = ANY(CAST(:parked AS text[])) AND b.state = ANY(CAST(:left AS text[]))
             AND COALESCE(b.closed_at, b.updated_at) < now() - make_interval(secs => :secs)""",
        parked=st.leave_batch_lane().from_states,
        left=[BatchRowState.CLOSED, BatchRowState.STOPPING],
        secs=older_than_s,
    )
    return [str(r["id"]) for r in rows]


def insert_preparing(db: Runner, *, job_id: str, model_id: str, deadline_hours: float) -> BatchRow | None:
    """The unique row for a job; None when the job already has one."""
    return _one(
        db,
        """INSERT INTO conversion_batch_jobs (job_id, state, model_id, deadline)
           VALUES (CAST(:job AS uuid), :preparing, :model, now() + make_interval(secs => :secs))
           ON CONFLICT (job_id) DO NOTHING RETURNING *""",
        preparing=BatchRowState.PREPARING,
        job=job_id,
        model=model_id,
        secs=deadline_hours * 3600,
    )


def insert_closed(db: Runner, *, job_id: str, model_id: str, end_state: str, reason: str) -> BatchRow | None:
    """A row born closed (the user left the lane before any claim), so the claimer never takes the job."""
    return _one(
        db,
        """INSERT INTO conversion_batch_jobs (job_id, state, model_id, end_state, reason, closed_at, accepted_count, fallback_count)
           VALUES (CAST(:job AS uuid), :closed, :model, :end_state, :reason, now(), 0, 0)
           ON CONFLICT (job_id) DO NOTHING RETURNING *""",
        closed=BatchRowState.CLOSED,
        job=job_id,
        model=model_id,
        end_state=end_state,
        reason=reason,
    )


def record_prepared(db: Runner, job_id: str, *, record_count: int, input_bytes: int, manifest_key: str) -> BatchRow | None:
    return _one(
        db,
        """UPDATE conversion_batch_jobs SET record_count = :n, input_bytes = :bytes, manifest_key = :key, prepared_at = now(), updated_at = now()
           WHERE job_id = CAST(:job AS uuid) AND state = :preparing RETURNING *""",
        preparing=BatchRowState.PREPARING,
        job=job_id,
        n=record_count,
        bytes=input_bytes,
        key=manifest_key,
    )


def mark_submitted(db: Runner, job_id: str, *, arn: str, name: str, output_uri: str, deadline_hours: float) -> BatchRow | None:
    """preparing → submitted; returns the row either way once it holds this ARN (a retried submit adopts)."""
    move = st.submit()
    row = _one(
        db,
        """UPDATE conversion_batch_jobs SET state = :to, bedrock_job_arn = :arn, bedrock_job_name = :name, output_uri = :out,
               submitted_at = now(), deadline = now() + make_interval(secs => :secs), attempts = attempts + 1, updated_at = now()
           WHERE job_id = CAST(:job AS uuid) AND state = ANY(CAST(:from_ AS text[])) RETURNING *""",
        to=move.target,
        from_=move.from_states,
        job=job_id,
        arn=arn,
        name=name,
        out=output_uri,
        secs=deadline_hours * 3600,
    )
    return row or get_row(db, job_id)


def add_task_token(db: Runner, job_id: str, token: str) -> BatchRow | None:
    """Remember a waiting execution's token; the returned row carries the latest Bedrock status.

    The UPDATE takes the row lock, and :func:`record_status` takes it too, so of a token
    store and a terminal event racing, whichever commits second sees the other: the wait
    can never miss its wake-up.
    """
    return _one(
        db,
        """UPDATE conversion_batch_jobs SET task_tokens = array_append(task_tokens, :token), updated_at = now()
           WHERE job_id = CAST(:job AS uuid) AND NOT (:token = ANY(task_tokens)) RETURNING *""",
        job=job_id,
        token=token,
    ) or get_row(db, job_id)


def record_status(db: Runner, arn: str, status: str) -> BatchRow | None:
    """Remember the latest Bedrock status; a terminal status is never overwritten by a late non-terminal one."""
    return _one(
        db,
        """UPDATE conversion_batch_jobs SET bedrock_status = CASE
                   WHEN bedrock_status = ANY(CAST(:terminal AS text[])) AND NOT (:status = ANY(CAST(:terminal AS text[]))) THEN bedrock_status
                   ELSE :status END,
               terminal_seen_at = CASE WHEN terminal_seen_at IS NULL AND :status = ANY(CAST(:terminal AS text[])) THEN now() ELSE terminal_seen_at END,
               updated_at = now()
           WHERE bedrock_job_arn = :arn RETURNING *""",
        arn=arn,
        status=status,
        terminal=sorted(TERMINAL_BEDROCK_STATUSES),
    )


def mark_stopping(db: Runner, job_id: str, *, reason: str) -> BatchRow | None:
    """submitted → stopping: the lane leaves now, the bill waits for the terminal status."""
    move = st.stop()
    return _one(
        db,
        """UPDATE conversion_batch_jobs SET state = :to, reason = COALESCE(reason, :reason), accepted_count = 0,
               fallback_count = record_count, updated_at = now()
           WHERE job_id = CAST(:job AS uuid) AND state = ANY(CAST(:from_ AS text[])) RETURNING *""",
        to=move.target,
        from_=move.from_states,
        job=job_id,
        reason=reason,
    )


def rows_stopping(db: Runner, *, limit: int = 200) -> list[BatchRow]:
    """Rows waiting for their Bedrock job's terminal status to be billed."""
    return _all(
        db, "SELECT * FROM conversion_batch_jobs WHERE state = :stopping ORDER BY updated_at LIMIT :limit", stopping=BatchRowState.STOPPING, limit=limit
    )


def set_reason(db: Runner, job_id: str, reason: str) -> BatchRow | None:
    return _one(
        db,
        "UPDATE conversion_batch_jobs SET reason = COALESCE(reason, :reason), updated_at = now() WHERE job_id = CAST(:job AS uuid) RETURNING *",
        job=job_id,
        reason=reason,
    )


def close(
    db: Runner,
    job_id: str,
    move: Transition,
    *,
    end_state: str,
    reason: str | None = None,
    accepted: int = 0,
    fallback: int = 0,
    cost_usd: Decimal | None = None,
) -> BatchRow | None:
    """The guarded close along ``move`` (leave_before_submit, close or settle_stopping): only one caller
    wins it (and with it, the right to write the ledger row)."""
    if move.entity is not st.Entity.BATCH_ROW or move.target != BatchRowState.CLOSED:
        raise ValueError(f"{move.entity}.{move.name} does not close a batch row")
    return _one(
        db,
        """UPDATE conversion_batch_jobs SET state = :to, end_state = :end_state, reason = COALESCE(reason, :reason),
               accepted_count = :accepted, fallback_count = :fallback, cost_usd = :cost, closed_at = now(), updated_at = now()
           WHERE job_id = CAST(:job AS uuid) AND state = ANY(CAST(:from_ AS text[])) RETURNING *""",
        to=move.target,
        job=job_id,
        from_=move.from_states,
        end_state=end_state,
        reason=reason,
        accepted=accepted,
        fallback=fallback,
        cost=cost_usd,
    )


def stamp(db: Runner, job_id: str, column: str) -> None:
    """Record when a step happened (for the report's timings); only the first time counts."""
    if column not in ("prepare_started_at", "collect_started_at", "resumed_at"):
        raise ValueError(column)
    db.run(f"UPDATE conversion_batch_jobs SET {column} = COALESCE({column}, now()) WHERE job_id = CAST(:job AS uuid)", job=job_id)


def rows_waiting(db: Runner, *, limit: int = 200) -> list[BatchRow]:
    """Submitted rows, oldest first: the sweeper asks Bedrock about each."""
    return _all(
        db, "SELECT * FROM conversion_batch_jobs WHERE state = :submitted ORDER BY submitted_at LIMIT :limit", submitted=BatchRowState.SUBMITTED, limit=limit
    )


def rows_preparing_since(db: Runner, *, older_than_hours: float) -> list[BatchRow]:
    return _all(
        db,
        "SELECT * FROM conversion_batch_jobs WHERE state = :preparing AND created_at < now() - make_interval(secs => :secs) ORDER BY created_at",
        preparing=BatchRowState.PREPARING,
        secs=older_than_hours * 3600,
    )
