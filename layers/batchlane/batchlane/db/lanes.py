"""The table lanes: one row per Bedrock job (a "lane"), preparing → submitted [→ stopping] → closed,
every move guarded; batch_members: which chunks of which jobs ride in it (0017_batch_pool.sql).

``stopping``: the lane gave up on a Bedrock job that was still running (collect failing,
a submit that failed after the job was created, or every member left). Its members went
on-demand; the row waits for the terminal status to bill it.

The pool is not a table: it is every chunk of a parked job (``waiting_batch``) that no lane
carries yet and whose job the pool has not let go (``pool_left_at``).
"""

from __future__ import annotations

from collections.abc import Collection
from decimal import Decimal
from typing import Any

from batchlane.db.jobs import Runner
from batchlane.domain import status as st
from batchlane.domain.limits import RECORD_JSON_OVERHEAD_BYTES, SPLIT_PAGE_OVERHEAD_BYTES
from batchlane.domain.pool import by_base_model
from batchlane.domain.status import BatchMemberState, BedrockJobStatus, LaneState, Transition
from batchlane.rows import Lane, LaneOutcome, Member, PooledChunk, PoolRead, PurgeTarget

# "Lost" is ours: GetModelInvocationJob answered ResourceNotFoundException. Nothing more
# will come from that job, so it ends like a terminal status (collect what exists).
LOST = BedrockJobStatus.LOST.value
TERMINAL_BEDROCK_STATUSES = st.TERMINAL_BEDROCK_STATUSES
IN_FLIGHT_STATES = st.IN_FLIGHT_LANE_STATES
_CLAIM_LOCK = 7_357_202  # the advisory lock that serialises packers


def _one(db: Runner, sql: str, **params: Any) -> Lane | None:
    row = db.one(sql, **params)
    return Lane.of(row) if row is not None else None


def _all(db: Runner, sql: str, **params: Any) -> list[Lane]:
    return [Lane.of(row) for row in db.run(sql, **params)]


_LANE = "lane_id = CAST(:lane AS uuid)"
_PARKED = [str(x) for x in st.leave_batch_lane().from_states]


# -- the pool ------------------------------------------------------------------------------
FOLDER_STALL_S = 120.0  # a folder that started no file for this long (at least) lets its files' windows start


_UNBOUNDED = 2**62


def _move_members(db: Runner, move: Transition, *, row_id: int | None = None, job_id: str | None = None, keep: Collection[int] = ()) -> list[int]:
    """Move a lane's members, or a job's (not those of the lanes in ``keep``), along ``move``; the lanes touched (a lane id per member moved)."""
    rows = db.run(
        """UPDATE batch_members SET state = :to, accepted = CASE WHEN :to = 'collected' THEN 0 ELSE accepted END
           WHERE (CAST(:row AS bigint) IS NULL OR lane_row_id = :row) AND (CAST(:job AS text) IS NULL OR job_id = CAST(:job AS uuid))
             AND NOT (lane_row_id = ANY(CAST(:keep AS bigint[])))
             AND state = ANY(CAST(:from_ AS text[])) RETURNING lane_row_id""",
        to=move.target,
        from_=move.from_states,
        row=row_id,
        job=job_id,
        keep=list(keep),
    )
    return [int(r["lane_row_id"]) for r in rows]


class PgLanes:
    """batchlane.ports.LaneRepository on PostgreSQL, over one Runner (a unit of work's)."""

    def __init__(self, runner: Runner) -> None:
        self._runner = runner

    def get_row(self, lane_id: str) -> Lane | None:
        return _one(self._runner, f"SELECT * FROM lanes WHERE {_LANE}", lane=lane_id)

    def get_row_by_id(self, row_id: int) -> Lane | None:
        return _one(self._runner, "SELECT * FROM lanes WHERE id = :id", id=row_id)

    def lock_row(self, lane_id: str) -> Lane | None:
        """SELECT ... FOR UPDATE: a member leaving and the lane's steps go one at a time."""
        return _one(self._runner, f"SELECT * FROM lanes WHERE {_LANE} FOR UPDATE", lane=lane_id)

    def in_flight_by_model(self) -> dict[str, int]:
        """Lanes holding a Bedrock job slot, per model id (inference profile) as the lanes name it."""
        rows = self._runner.run(
            "SELECT model_id, count(*) AS n FROM lanes WHERE state = ANY(CAST(:states AS text[])) GROUP BY model_id",
            states=list(IN_FLIGHT_STATES),
        )
        return {r["model_id"]: int(r["n"]) for r in rows}

    def in_flight_by_base_model(self) -> dict[str, int]:
        """Lanes holding a Bedrock job slot, per base model: the us./global. profiles of one model share its quota."""
        return by_base_model(self.in_flight_by_model())

    def count_past_deadline(self) -> int:
        """Rows not closed whose deadline has passed (a gauge: should stay 0)."""
        row = self._runner.one("SELECT count(*) AS n FROM lanes WHERE state <> :closed AND deadline < now()", closed=LaneState.CLOSED)
        return int(row["n"]) if row else 0

    def lock_claims(self) -> None:
        """Transaction-level advisory lock: two packers never overshoot the concurrent-job quota or pack a chunk twice."""
        self._runner.run("SELECT pg_advisory_xact_lock(:key)", key=_CLAIM_LOCK)

    def note_pooled(self, *, window_s: float) -> None:
        """Start the pool window of every parked job seen for the first time, except a folder's file while its
        folder may still bring more: its files start their windows together once the listing is complete,
        no file is queued and none is still opening or splitting (the last one has reached the pool or gone
        on-demand), or once the folder has started nothing for a window
        (at least FOLDER_STALL_S: waiting for its owner's places, which its own parked files may hold), or
        when the folder has ended. A file read from a folder but not yet attached to it (create_job returned,
        attach not yet) waits too, as long at most. Why: docs/architecture.md "The batch pool", folders (issue 22, point 9)."""
        self._runner.run(
            """UPDATE large_conversion_jobs j SET pooled_at = now()
               WHERE j.status = ANY(CAST(:parked AS text[])) AND j.pooled_at IS NULL
                 AND NOT EXISTS (
                     SELECT 1 FROM folder_job_files f JOIN folder_jobs fj ON fj.id = f.folder_job_id
                     WHERE f.conversion_job_id = j.id
                       AND fj.status IN ('enumerating', 'processing')
                       AND (NOT fj.enumeration_done
                            OR EXISTS (SELECT 1 FROM folder_job_files q WHERE q.folder_job_id = fj.id AND q.status = 'queued')
                            OR EXISTS (SELECT 1 FROM folder_job_files q LEFT JOIN large_conversion_jobs qj ON qj.id = q.conversion_job_id
                                       WHERE q.folder_job_id = fj.id AND q.status = 'processing'
                                         AND (q.conversion_job_id IS NULL OR qj.status = 'splitting')))
                       AND (SELECT max(s.started_at) FROM folder_job_files s WHERE s.folder_job_id = fj.id)
                           > now() - make_interval(secs => :window))
                 AND NOT EXISTS (
                     SELECT 1 FROM files fl
                     WHERE fl.id = j.file_id AND fl.source_bucket IS NOT NULL
                       AND NOT EXISTS (SELECT 1 FROM folder_job_files a WHERE a.conversion_job_id = j.id)
                       AND j.created_at > now() - make_interval(secs => :window))""",
            parked=_PARKED,
            # A stall is measured in real seconds, never less than FOLDER_STALL_S: offline the window is scaled
            # to milliseconds, and a folder that starts a file every second is not stalled.
            window=max(float(window_s), FOLDER_STALL_S),
        )

    def pool_chunks(self) -> list[PooledChunk]:
        """Every chunk waiting in the pool, locked by job, in fair order (:func:`read_pool` without a budget)."""
        return self.read_pool().chunks

    def read_pool(self, *, budgets: dict[str, int] | None = None, default_budget: int | None = None) -> PoolRead:
        """The chunks waiting in the pool, by model, in fair order: round robin across owners, weighted by what
        each already has in flight. An owner's k-th waiting job has turn k + (their lanes in flight); lowest turns
        first, ties oldest first, and a job's chunks in order (docs/operations.md "Budgets, caps and fair sharing").

        Per model only the prefix whose pages before each chunk stay under its budget (``budgets[model]``, else
        ``default_budget``, else everything) is returned, and only its jobs are locked (SKIP LOCKED: a cancel or
        process-now in flight keeps its job): a turn's rows, locks and packing are bounded by what one turn can
        pack (domain/pool.read_budget), not by the backlog. The fair order itself is still computed over every
        waiting job and its chunks (an index scan), which stays in PostgreSQL."""
        models = sorted(budgets or {})
        rows = self._runner.run(
            """WITH waiting AS (
                    SELECT j.id, j.owner_id, j.created_at,
                           row_number() OVER (PARTITION BY j.owner_id ORDER BY j.created_at, j.id) AS turn
                    FROM large_conversion_jobs j
                    WHERE j.status = ANY(CAST(:parked AS text[])) AND j.pool_left_at IS NULL),
                  busy AS (
                    SELECT j.owner_id, count(DISTINCT b.id) AS n
                    FROM lanes b JOIN batch_members m ON m.lane_row_id = b.id JOIN large_conversion_jobs j ON j.id = m.job_id
                    WHERE b.state = ANY(CAST(:in_flight AS text[])) GROUP BY j.owner_id),
                  budget AS (
                    SELECT x.model_id, x.pages FROM unnest(CAST(:models AS text[]), CAST(:budgets AS bigint[])) AS x(model_id, pages)),
                  pooled AS (
                    SELECT j.id, j.model_id, w.turn + COALESCE(busy.n, 0) AS rank, w.created_at,
                           EXTRACT(EPOCH FROM now() - COALESCE(j.pooled_at, now())) AS waited_s,
                           c.chunk_index, COALESCE(c.records, c.last_page - c.first_page + 1) AS pages, c.source_bytes,  -- a chunk's records (0044)
                           COALESCE(budget.pages, :default_budget) AS budget
                    FROM large_conversion_jobs j JOIN waiting w ON w.id = j.id LEFT JOIN busy ON busy.owner_id = w.owner_id
                         JOIN chunk_jobs c ON c.job_id = j.id LEFT JOIN budget ON budget.model_id = j.model_id
                    WHERE NOT EXISTS (SELECT 1 FROM batch_members m WHERE m.job_id = c.job_id AND m.chunk_index = c.chunk_index)),
                  ordered AS (
                    SELECT p.*,
                           sum(p.pages) OVER (PARTITION BY p.model_id ORDER BY p.rank, p.created_at, p.id, p.chunk_index ROWS UNBOUNDED PRECEDING)
                               - p.pages AS pages_before,
                           min(p.pages) OVER (PARTITION BY p.model_id) AS smallest,
                           -- domain/limits.estimated_record_bytes, in SQL (tests/integration/test_pool_read.py holds them equal)
                           min(CASE WHEN p.source_bytes IS NULL THEN 0
                                    ELSE 4 * ((p.source_bytes + p.pages * CAST(:page_overhead AS bigint) + 2) / 3) + p.pages * CAST(:record_overhead AS bigint)
                               END) OVER (PARTITION BY p.model_id) AS lightest
                    FROM pooled p),
                  marked AS (
                    SELECT o.*, bool_or(o.pages_before >= o.budget) OVER (PARTITION BY o.model_id) AS truncated FROM ordered o),
                  prefix AS (SELECT * FROM marked WHERE pages_before < budget),
                  locked AS (
                    SELECT j.id FROM large_conversion_jobs j
                    WHERE j.id IN (SELECT id FROM prefix) AND j.status = ANY(CAST(:parked AS text[])) AND j.pool_left_at IS NULL
                    FOR UPDATE OF j SKIP LOCKED)
               SELECT p.id, p.model_id, p.chunk_index, p.pages, p.waited_s, p.source_bytes, p.truncated, p.smallest, p.lightest
               FROM prefix p JOIN locked l ON l.id = p.id
               ORDER BY p.model_id, p.rank, p.created_at, p.id, p.chunk_index""",
            parked=_PARKED,
            in_flight=list(IN_FLIGHT_STATES),
            models=models,
            budgets=[int((budgets or {})[m]) for m in models],
            default_budget=_UNBOUNDED if default_budget is None else int(default_budget),
            page_overhead=SPLIT_PAGE_OVERHEAD_BYTES,
            record_overhead=RECORD_JSON_OVERHEAD_BYTES,
        )
        chunks, truncated, smallest, lightest = [], {}, {}, {}
        for r in rows:
            model = r["model_id"]
            chunks.append(
                PooledChunk(
                    str(r["id"]),
                    model,
                    int(r["chunk_index"]),
                    int(r["pages"]),
                    float(r["waited_s"]),
                    None if r["source_bytes"] is None else int(r["source_bytes"]),
                )
            )
            truncated[model], smallest[model], lightest[model] = bool(r["truncated"]), int(r["smallest"]), int(r["lightest"])
        return PoolRead(chunks, truncated, smallest, lightest)

    def leave_pool(self, job_ids: list[str], *, reason: str) -> list[str]:
        """The pool lets these jobs go: chunks no lane carries yet convert on-demand (the job's lane decision)."""
        rows = self._runner.run(
            """UPDATE large_conversion_jobs SET pool_left_at = now(), lane_reason = COALESCE(lane_reason, :reason), updated_at = now()
               WHERE id = ANY(CAST(:ids AS uuid[])) AND pool_left_at IS NULL RETURNING id""",
            ids=job_ids,
            reason=reason,
        )
        return [str(r["id"]) for r in rows]

    def insert_lane(self, *, lane_id: str, model_id: str, deadline_hours: float, chunks: list[tuple[str, int, int]]) -> Lane:
        """A new lane (preparing) carrying ``chunks`` — (job id, chunk index, pages) — each job tagged m<k>
        in order of first appearance."""
        tags: dict[str, str] = {}
        for job_id, _, _ in chunks:
            tags.setdefault(job_id, f"m{len(tags)}")
        row = _one(
            self._runner,
            """INSERT INTO lanes (lane_id, state, model_id, member_count, deadline)
               VALUES (CAST(:lane AS uuid), :preparing, :model, :members, now() + make_interval(secs => :secs)) RETURNING *""",
            lane=lane_id,
            preparing=LaneState.PREPARING,
            model=model_id,
            members=len(tags),
            secs=deadline_hours * 3600,
        )
        assert row is not None
        self._runner.run(
            """INSERT INTO batch_members (lane_row_id, job_id, chunk_index, member_tag, pages)
               SELECT :row, CAST(j AS uuid), c, t, p FROM unnest(CAST(:jobs AS text[]), CAST(:chunks AS int[]), CAST(:tags AS text[]), CAST(:pages AS int[]))
                   AS x(j, c, t, p)""",
            row=row.id,
            jobs=[c[0] for c in chunks],
            chunks=[c[1] for c in chunks],
            tags=[tags[c[0]] for c in chunks],
            pages=[c[2] for c in chunks],
        )
        return row

    def insert_retry_lane(
        self,
        *,
        lane_id: str,
        retry_of: int,
        model_id: str,
        deadline_hours: float,
        manifest_key: str,
        input_bytes: int,
        members: list[tuple[str, int, str, int]],
    ) -> Lane | None:
        """A retry batch (preparing, already prepared: its records and manifest were written by the collect of
        lane ``retry_of``) carrying ``members`` — (job id, chunk index, tag, records). None if it exists already."""
        row = _one(
            self._runner,
            """INSERT INTO lanes (lane_id, state, model_id, member_count, retry_of, deadline, record_count, input_bytes,
                                                 manifest_key, prepared_at)
               VALUES (CAST(:lane AS uuid), :preparing, :model, :members, :retry_of, now() + make_interval(secs => :secs), :records, :bytes, :key, now())
               ON CONFLICT (lane_id) DO NOTHING RETURNING *""",
            lane=lane_id,
            preparing=LaneState.PREPARING,
            model=model_id,
            members=len({m[0] for m in members}),
            retry_of=retry_of,
            secs=deadline_hours * 3600,
            records=sum(m[3] for m in members),
            bytes=input_bytes,
            key=manifest_key,
        )
        if row is None:
            return None
        self._runner.run(
            """INSERT INTO batch_members (lane_row_id, job_id, chunk_index, member_tag, pages, records)
               SELECT :row, CAST(j AS uuid), c, t, n, n FROM unnest(CAST(:jobs AS text[]), CAST(:chunks AS int[]), CAST(:tags AS text[]), CAST(:ns AS int[]))
                   AS x(j, c, t, n)""",
            row=row.id,
            jobs=[m[0] for m in members],
            chunks=[m[1] for m in members],
            tags=[m[2] for m in members],
            ns=[m[3] for m in members],
        )
        return row

    def job_deadlines(self, job_ids: list[str]) -> dict[str, str | None]:
        """Each job's ``deadline`` option (ISO 8601), None where it has none."""
        rows = self._runner.run("SELECT id, options ->> 'deadline' AS deadline FROM large_conversion_jobs WHERE id = ANY(CAST(:ids AS uuid[]))", ids=job_ids)
        return {str(r["id"]): r["deadline"] for r in rows}

    def members(self, row_id: int, *, state: str | None = None) -> list[Member]:
        rows = self._runner.run(
            """SELECT lane_row_id, job_id, chunk_index, member_tag, pages, records, accepted, state FROM batch_members
               WHERE lane_row_id = :row AND (CAST(:state AS text) IS NULL OR state = :state) ORDER BY member_tag, chunk_index""",
            row=row_id,
            state=state,
        )
        return [
            Member(int(r["lane_row_id"]), str(r["job_id"]), int(r["chunk_index"]), r["member_tag"], int(r["pages"]), r["records"], r["accepted"], r["state"])
            for r in rows
        ]

    def member_job_ids(self, row_id: int) -> list[str]:
        """The jobs a lane carries, in tag order."""
        rows = self._runner.run(
            "SELECT job_id, min(member_tag) AS tag FROM batch_members WHERE lane_row_id = :row GROUP BY job_id ORDER BY length(min(member_tag)), min(member_tag)",
            row=row_id,
        )
        return [str(r["job_id"]) for r in rows]

    def record_member_records(self, row_id: int, counts: dict[tuple[str, int], int]) -> None:
        """What prepare wrote per member chunk."""
        if not counts:
            return
        self._runner.run(
            """UPDATE batch_members m SET records = x.n FROM unnest(CAST(:jobs AS text[]), CAST(:chunks AS int[]), CAST(:ns AS int[])) AS x(j, c, n)
               WHERE m.lane_row_id = :row AND m.job_id = CAST(x.j AS uuid) AND m.chunk_index = x.c""",
            row=row_id,
            jobs=[k[0] for k in counts],
            chunks=[k[1] for k in counts],
            ns=list(counts.values()),
        )

    def record_accepted(self, row_id: int, accepted: dict[tuple[str, int], int]) -> None:
        """What came back usable per collected member chunk (the close set them collected with 0)."""
        if not accepted:
            return
        self._runner.run(
            """UPDATE batch_members m SET accepted = x.n FROM unnest(CAST(:jobs AS text[]), CAST(:chunks AS int[]), CAST(:ns AS int[])) AS x(j, c, n)
               WHERE m.lane_row_id = :row AND m.job_id = CAST(x.j AS uuid) AND m.chunk_index = x.c AND m.state = :collected""",
            row=row_id,
            collected=BatchMemberState.COLLECTED,
            jobs=[k[0] for k in accepted],
            chunks=[k[1] for k in accepted],
            ns=list(accepted.values()),
        )

    def leave_lanes(self, job_id: str, *, keep: Collection[int] = ()) -> list[Lane]:
        """The job leaves every lane it rides in but those in ``keep`` (cancel, process now): its members there are ``left``.
        Returns those lanes (locked), so the caller can stop any that nobody waits on any more."""
        ids = sorted(set(_move_members(self._runner, st.leave_lane(), job_id=job_id, keep=keep)))
        return _all(self._runner, "SELECT * FROM lanes WHERE id = ANY(CAST(:ids AS bigint[])) ORDER BY id FOR UPDATE", ids=ids) if ids else []

    def has_packed_members(self, row_id: int) -> bool:
        return self._runner.one("SELECT 1 AS x FROM batch_members WHERE lane_row_id = :row AND state = 'packed' LIMIT 1", row=row_id) is not None

    def lanes_of_job(self, job_id: str) -> list[Lane]:
        """Every lane that carried (or carries) a chunk of the job, oldest first."""
        return _all(
            self._runner,
            """SELECT * FROM lanes WHERE id IN (SELECT lane_row_id FROM batch_members WHERE job_id = CAST(:job AS uuid))
               OR job_id = CAST(:job AS uuid) ORDER BY id""",
            job=job_id,
        )

    def job_lane_outcome(self, job_id: str) -> LaneOutcome:
        row = self._runner.one(
            """SELECT
                 EXISTS (SELECT 1 FROM batch_members m WHERE m.job_id = j.id AND m.state = 'packed') AS riding,
                 EXISTS (SELECT 1 FROM chunk_jobs c WHERE c.job_id = j.id
                         AND NOT EXISTS (SELECT 1 FROM batch_members m WHERE m.job_id = c.job_id AND m.chunk_index = c.chunk_index)) AS unpacked,
                 j.pool_left_at IS NOT NULL AS let_go,
                 (SELECT COALESCE(sum(m.accepted), 0) FROM batch_members m WHERE m.job_id = j.id AND m.state = 'collected') AS accepted,
                 (SELECT count(DISTINCT m.lane_row_id) FROM batch_members m WHERE m.job_id = j.id) AS lanes
               FROM large_conversion_jobs j WHERE j.id = CAST(:job AS uuid)""",
            job=job_id,
        )
        if row is None:
            return LaneOutcome(False, 0, 0)
        settled = not row["riding"] and (row["let_go"] or not row["unpacked"])
        return LaneOutcome(bool(settled), int(row["accepted"]), int(row["lanes"]))

    def preparing_lanes(self) -> list[tuple[str, int]]:
        """Lanes preparing, as (lane id, row id): each should have a batch-lane execution."""
        rows = self._runner.run("SELECT lane_id, id FROM lanes WHERE state = :preparing ORDER BY id", preparing=LaneState.PREPARING)
        return [(str(r["lane_id"]), int(r["id"])) for r in rows]

    def stranded_job_ids(self, *, older_than_s: float) -> list[str]:
        """Jobs still parked that no lane carries any more and the pool has nothing more for, for ``older_than_s``:
        the resume never came (the lane's execution died, or the pool let the job go)."""
        rows = self._runner.run(
            """SELECT j.id FROM large_conversion_jobs j
               WHERE j.status = ANY(CAST(:parked AS text[]))
                 AND NOT EXISTS (SELECT 1 FROM batch_members m WHERE m.job_id = j.id AND m.state = 'packed')
                 AND (j.pool_left_at IS NOT NULL OR NOT EXISTS (
                       SELECT 1 FROM chunk_jobs c WHERE c.job_id = j.id
                       AND NOT EXISTS (SELECT 1 FROM batch_members m WHERE m.job_id = c.job_id AND m.chunk_index = c.chunk_index)))
                 AND EXISTS (SELECT 1 FROM chunk_jobs c WHERE c.job_id = j.id)
                 AND GREATEST(j.pool_left_at, (SELECT max(COALESCE(b.closed_at, b.updated_at)) FROM batch_members m
                                               JOIN lanes b ON b.id = m.lane_row_id WHERE m.job_id = j.id))
                     < now() - make_interval(secs => :secs)""",
            parked=_PARKED,
            secs=older_than_s,
        )
        return [str(r["id"]) for r in rows]

    def record_prepared(self, lane_id: str, *, record_count: int, input_bytes: int, manifest_key: str) -> Lane | None:
        return _one(
            self._runner,
            f"""UPDATE lanes SET record_count = :n, input_bytes = :bytes, manifest_key = :key, prepared_at = now(), updated_at = now()
               WHERE {_LANE} AND state = :preparing RETURNING *""",
            preparing=LaneState.PREPARING,
            lane=lane_id,
            n=record_count,
            bytes=input_bytes,
            key=manifest_key,
        )

    def mark_submitted(self, lane_id: str, *, arn: str, name: str, output_uri: str, deadline_hours: float) -> Lane | None:
        """preparing → submitted; returns the row either way once it holds this ARN (a retried submit adopts)."""
        move = st.submit()
        row = _one(
            self._runner,
            f"""UPDATE lanes SET state = :to, bedrock_job_arn = :arn, bedrock_job_name = :name, output_uri = :out,
                   submitted_at = now(), deadline = now() + make_interval(secs => :secs), attempts = attempts + 1, updated_at = now()
               WHERE {_LANE} AND state = ANY(CAST(:from_ AS text[])) RETURNING *""",
            to=move.target,
            from_=move.from_states,
            lane=lane_id,
            arn=arn,
            name=name,
            out=output_uri,
            secs=deadline_hours * 3600,
        )
        return row or self.get_row(lane_id)

    def add_task_token(self, lane_id: str, token: str) -> Lane | None:
        """Remember a waiting execution's token; the returned row carries the latest Bedrock status.

        The UPDATE takes the row lock, and :func:`record_status` takes it too, so of a token
        store and a terminal event racing, whichever commits second sees the other: the wait
        can never miss its wake-up.
        """
        return _one(
            self._runner,
            f"""UPDATE lanes SET task_tokens = array_append(task_tokens, :token), updated_at = now()
               WHERE {_LANE} AND NOT (:token = ANY(task_tokens)) RETURNING *""",
            lane=lane_id,
            token=token,
        ) or self.get_row(lane_id)

    def record_status(self, arn: str, status: str) -> Lane | None:
        """Remember the latest Bedrock status; a terminal status is never overwritten by a late non-terminal one."""
        return _one(
            self._runner,
            """UPDATE lanes SET bedrock_status = CASE
                       WHEN bedrock_status = ANY(CAST(:terminal AS text[])) AND NOT (:status = ANY(CAST(:terminal AS text[]))) THEN bedrock_status
                       ELSE :status END,
                   terminal_seen_at = CASE WHEN terminal_seen_at IS NULL AND :status = ANY(CAST(:terminal AS text[])) THEN now() ELSE terminal_seen_at END,
                   updated_at = now()
               WHERE bedrock_job_arn = :arn RETURNING *""",
            arn=arn,
            status=status,
            terminal=sorted(TERMINAL_BEDROCK_STATUSES),
        )

    def mark_stopping(self, lane_id: str, *, reason: str) -> Lane | None:
        """submitted → stopping: the lane leaves now (its members go on-demand), the bill waits for the terminal status."""
        move = st.stop()
        row = _one(
            self._runner,
            f"""UPDATE lanes SET state = :to, reason = COALESCE(reason, :reason), accepted_count = 0,
                   fallback_count = record_count, updated_at = now()
               WHERE {_LANE} AND state = ANY(CAST(:from_ AS text[])) RETURNING *""",
            to=move.target,
            from_=move.from_states,
            lane=lane_id,
            reason=reason,
        )
        if row is not None:
            _move_members(self._runner, st.leave_lane(), row_id=row.id)
        return row

    def rows_stopping(self, *, limit: int = 200) -> list[Lane]:
        """Rows waiting for their Bedrock job's terminal status to be billed."""
        return _all(
            self._runner,
            "SELECT * FROM lanes WHERE state = :stopping ORDER BY updated_at LIMIT :limit",
            stopping=LaneState.STOPPING,
            limit=limit,
        )

    def set_reason(self, lane_id: str, reason: str) -> Lane | None:
        return _one(
            self._runner,
            f"UPDATE lanes SET reason = COALESCE(reason, :reason), updated_at = now() WHERE {_LANE} RETURNING *",
            lane=lane_id,
            reason=reason,
        )

    def close(
        self,
        lane_id: str,
        move: Transition,
        *,
        end_state: str,
        reason: str | None = None,
        accepted: int = 0,
        fallback: int = 0,
        cost_usd: Decimal | None = None,
    ) -> Lane | None:
        """The guarded close along ``move`` (leave_before_submit, close or settle_stopping): only one caller
        wins it (and with it, the right to write the ledger rows). Members still packed are collected, with
        nothing accepted until the caller records what was (:func:`record_accepted`, same transaction)."""
        if move.entity is not st.Entity.LANE or move.target != LaneState.CLOSED:
            raise ValueError(f"{move.entity}.{move.name} does not close a lane")
        row = _one(
            self._runner,
            f"""UPDATE lanes SET state = :to, end_state = :end_state, reason = COALESCE(reason, :reason),
                   accepted_count = :accepted, fallback_count = :fallback, cost_usd = :cost, closed_at = now(), updated_at = now()
               WHERE {_LANE} AND state = ANY(CAST(:from_ AS text[])) RETURNING *""",
            to=move.target,
            lane=lane_id,
            from_=move.from_states,
            end_state=end_state,
            reason=reason,
            accepted=accepted,
            fallback=fallback,
            cost=cost_usd,
        )
        if row is not None:
            _move_members(self._runner, st.collect_member(), row_id=row.id)
        return row

    def stamp(self, lane_id: str, column: str) -> None:
        """Record when a step happened (for the report's timings); only the first time counts."""
        if column not in ("prepare_started_at", "collect_started_at", "resumed_at"):
            raise ValueError(column)
        self._runner.run(f"UPDATE lanes SET {column} = COALESCE({column}, now()) WHERE {_LANE}", lane=lane_id)

    def rows_waiting(self, *, limit: int = 200) -> list[Lane]:
        """Submitted rows, oldest first: the sweeper asks Bedrock about each."""
        return _all(
            self._runner,
            "SELECT * FROM lanes WHERE state = :submitted ORDER BY submitted_at LIMIT :limit",
            submitted=LaneState.SUBMITTED,
            limit=limit,
        )

    def rows_preparing_since(self, *, older_than_hours: float) -> list[Lane]:
        return _all(
            self._runner,
            "SELECT * FROM lanes WHERE state = :preparing AND created_at < now() - make_interval(secs => :secs) ORDER BY created_at",
            preparing=LaneState.PREPARING,
            secs=older_than_hours * 3600,
        )

    def members_to_purge(self, *, job_ids: list[str] | None = None, limit: int = 200) -> list[PurgeTarget]:
        """Members of closed lanes not yet purged: those of ``job_ids``, or (None) of every deleted file."""
        rows = self._runner.run(
            """SELECT DISTINCT m.lane_row_id, b.lane_id, m.job_id, m.member_tag
               FROM batch_members m JOIN lanes b ON b.id = m.lane_row_id
               JOIN large_conversion_jobs j ON j.id = m.job_id JOIN files f ON f.id = j.file_id
               WHERE b.state = 'closed' AND m.purged_at IS NULL
                 AND (CASE WHEN CAST(:ids AS uuid[]) IS NULL THEN f.deleted_at IS NOT NULL ELSE m.job_id = ANY(CAST(:ids AS uuid[])) END)
               ORDER BY m.lane_row_id, m.member_tag LIMIT :limit""",
            ids=job_ids,
            limit=limit,
        )
        return [PurgeTarget(int(r["lane_row_id"]), str(r["lane_id"]), str(r["job_id"]), r["member_tag"]) for r in rows]

    def mark_purged(self, target: PurgeTarget) -> None:
        self._runner.run(
            "UPDATE batch_members SET purged_at = now() WHERE lane_row_id = :row AND job_id = CAST(:job AS uuid) AND purged_at IS NULL",
            row=target.lane_row_id,
            job=target.job_id,
        )
