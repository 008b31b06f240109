"""Folder jobs and their files: every status change guarded on the current status (0014_folder_jobs.sql)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any

from batchlane.db.connection import Row
from batchlane.db.jobs import Runner
from batchlane.domain import status as st
from batchlane.domain.status import Entity, FolderFileStatus, FolderJobStatus, JobStatus, Transition
from batchlane.rows import EndedConversion, FileRow, FolderCounts, FolderFile, FolderJob, NewFolderFile

FOLDER_JOB_STATUSES = tuple(s.value for s in FolderJobStatus)
LIVE_FOLDER_JOB_STATUSES = st.LIVE_FOLDER_JOB_STATUSES
FILE_STATUSES = tuple(s.value for s in FolderFileStatus)
TERMINAL_FILE_STATUSES = (FolderFileStatus.COMPLETED.value, FolderFileStatus.FAILED.value, FolderFileStatus.SKIPPED.value)
# finish_file's end status -> its named move
_FINISH = {FolderFileStatus.COMPLETED: "complete", FolderFileStatus.FAILED: "fail", FolderFileStatus.SKIPPED: "skip"}


def folder_job(row: Row) -> FolderJob:
    """A folder_jobs row as the repository's typed row."""
    return FolderJob(
        id=str(row["id"]),
        owner_id=row["owner_id"],
        name=row["name"],
        spec=dict(row["spec"] or {}),
        status=row["status"],
        error_id=row["error_id"],
        error_message=row["error_message"],
        input_bucket=row["input_bucket"],
        input_prefix=row["input_prefix"],
        output_bucket=row["output_bucket"],
        output_prefix=row["output_prefix"],
        continuation_token=row["continuation_token"],
        enumeration_done=bool(row["enumeration_done"]),
        objects_listed=int(row["objects_listed"]),
        excluded_count=int(row["excluded_count"]),
        run=int(row["run"]),
        turns=int(row["turns"]),
        report_parts=int(row["report_parts"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        enumerated_at=row["enumerated_at"],
        finished_at=row["finished_at"],
        priority_allowed=bool(row["priority_allowed"]),
    )


def folder_file(row: Row) -> FolderFile:
    """A folder_job_files row as the repository's typed row."""
    return FolderFile(
        folder_job_id=str(row["folder_job_id"]),
        source_key=row["source_key"],
        status=row["status"],
        output_key=row["output_key"],
        size_bytes=int(row["size_bytes"]),
        file_id=str(row["file_id"]) if row["file_id"] else None,
        conversion_job_id=str(row["conversion_job_id"]) if row["conversion_job_id"] else None,
        pages=int(row["pages"]),
        pages_failed=int(row["pages_failed"]),
        attempts=int(row["attempts"]),
        error_id=row["error_id"],
        error_message=row["error_message"],
        lane=row["lane"],
        lane_reason=row.get("lane_reason"),
        cost_usd=Decimal(row["cost_usd"] or 0),
        reported=bool(row["reported"]),
        waits_for_pages=row.get("waits_for_pages"),
        started_at=row["started_at"],
        finished_at=row["finished_at"],
    )


def ended_conversion(row: Row) -> EndedConversion:
    """A row of ``PgFolderJobs.ended_conversions`` as the repository's typed row."""
    return EndedConversion(
        source_key=row["source_key"],
        output_key=row["output_key"],
        attempts=int(row["attempts"]),
        lane_reason=row["lane_reason"],
        conversion_job_id=str(row["conversion_job_id"]),
        job_status=row["job_status"],
        total_pages=int(row["total_pages"] or 0),
        pages_failed=int(row["pages_failed"] or 0),
        pages_batch=int(row["pages_batch"] or 0),
        total_cost_usd=Decimal(row["total_cost_usd"] or 0),
        job_error_id=row["job_error_id"],
        job_error_message=row["job_error_message"],
        markdown_key=row["markdown_key"],
        pool_reason=row["pool_reason"],
        source_type=row["source_type"],
    )


def _job(row: Row | None) -> FolderJob | None:
    return folder_job(row) if row is not None else None


def _file(row: Row | None) -> FolderFile | None:
    return folder_file(row) if row is not None else None


class PgFolderJobs:
    """batchlane.ports.FolderJobRepository on PostgreSQL, bound to one Database or Transaction, returning typed rows."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner

    def add(
        self,
        *,
        job_id: str,
        owner_id: str,
        name: str | None,
        spec: dict[str, Any],
        source: tuple[str, str],
        target: tuple[str, str],
        priority_allowed: bool = False,
    ) -> FolderJob | None:
        """The job row with its lane rights; None when it exists already (same spec posted again)."""
        return _job(
            self.runner.one(
                """INSERT INTO folder_jobs (id, owner_id, name, spec, input_bucket, input_prefix, output_bucket, output_prefix, priority_allowed)
               VALUES (:id, :owner, :name, CAST(:spec AS jsonb), :ib, :ip, :ob, :op, :allowed)
               ON CONFLICT (id) DO NOTHING RETURNING *""",
                allowed=priority_allowed,
                id=job_id,
                owner=owner_id,
                name=name,
                spec=spec,
                ib=source[0],
                ip=source[1],
                ob=target[0],
                op=target[1],
            )
        )

    def get(self, job_id: str) -> FolderJob | None:
        return _job(self.runner.one("SELECT * FROM folder_jobs WHERE id = :id", id=job_id))

    def move(
        self, job_id: str, move: Transition, *, ended: bool | None = None, error_id: str | None = None, error_message: str | None = None
    ) -> FolderJob | None:
        """Move a folder job by a named transition (``st.folder_job(name)``), only from its from-states; None when it was not in one.

        ``finished_at`` is set for a terminal status unless ``ended`` is False (a cancelled job
        whose documents in flight still finish: its loop sets it when it ends)."""
        fields = {"error_id": error_id, "error_message": error_message} if error_id is not None or error_message is not None else {}
        sets = "".join(f", {name} = :f_{name}" for name in fields)
        params = {f"f_{name}": value for name, value in fields.items()}
        assert move.entity is Entity.FOLDER_JOB, move
        to_status = move.target
        terminal = to_status not in LIVE_FOLDER_JOB_STATUSES if ended is None else ended
        return _job(
            self.runner.one(
                f"""UPDATE folder_jobs SET status = :to, updated_at = now(){sets},
                       finished_at = CASE WHEN :terminal THEN now() ELSE NULL END
                WHERE id = :id AND status = ANY(:from_) RETURNING *""",
                to=to_status,
                terminal=terminal,
                id=job_id,
                from_=move.from_states,
                **params,
            )
        )

    def reopen(self, job_id: str, *, priority_allowed: bool) -> FolderJob | None:
        """A terminal folder job runs again (retry, resume): processing, next run number, listing state kept, the lane
        rights decided again."""
        return _job(
            self.runner.one(
                """UPDATE folder_jobs SET status = CASE WHEN enumeration_done THEN :listed ELSE :listing END,
                      run = run + 1, turns = 0, error_id = NULL, error_message = NULL, finished_at = NULL, updated_at = now(),
                      priority_allowed = :allowed
               WHERE id = :id AND status = ANY(:from_) AND finished_at IS NOT NULL RETURNING *""",
                allowed=priority_allowed,
                listed=st.folder_job("reopen").target,
                listing=st.folder_job("reopen_enumeration").target,
                from_=st.folder_job("reopen").from_states,
                id=job_id,
            )
        )

    def relist(self, job_id: str, *, priority_allowed: bool) -> FolderJob | None:
        """A job that could not run (error: an empty folder, a listing refused) lists its folder again from the start,
        the lane rights decided again."""
        move = st.folder_job("relist")
        return _job(
            self.runner.one(
                """UPDATE folder_jobs SET status = :to, run = run + 1, turns = 0, error_id = NULL, error_message = NULL, finished_at = NULL,
                      continuation_token = NULL, objects_listed = 0, excluded_count = 0, enumeration_done = false, enumerated_at = NULL,
                      updated_at = now(), priority_allowed = :allowed
               WHERE id = :id AND status = ANY(:from_) RETURNING *""",
                allowed=priority_allowed,
                to=move.target,
                from_=move.from_states,
                id=job_id,
            )
        )

    def save_checkpoint(self, job_id: str, *, token: str | None, listed: int, excluded: int, done: bool) -> None:
        """After a page: the next continuation token and the totals (one statement, so a retry re-lists at most one page)."""
        self.runner.run(
            """UPDATE folder_jobs SET continuation_token = :token, objects_listed = objects_listed + :listed,
                      excluded_count = excluded_count + :excluded, enumeration_done = :done, updated_at = now(),
                      enumerated_at = CASE WHEN :done THEN now() ELSE enumerated_at END
               WHERE id = :id""",
            token=token,
            listed=listed,
            excluded=excluded,
            done=done,
            id=job_id,
        )

    def count_turn(self, job_id: str) -> int:
        """One more loop turn in the current run; the count after it."""
        row = self.runner.one("UPDATE folder_jobs SET turns = turns + 1 WHERE id = :id RETURNING turns", id=job_id)
        return int(row["turns"]) if row else 0

    def next_run(self, job_id: str, *, run: int) -> FolderJob | None:
        """Hand the loop to a fresh execution: run ``run`` → ``run + 1`` (None if another turn already did)."""
        return _job(
            self.runner.one("UPDATE folder_jobs SET run = run + 1, turns = 0, updated_at = now() WHERE id = :id AND run = :run RETURNING *", id=job_id, run=run)
        )

    def next_report_part(self, job_id: str) -> int:
        row = self.runner.one("UPDATE folder_jobs SET report_parts = report_parts + 1 WHERE id = :id RETURNING report_parts", id=job_id)
        assert row is not None
        return int(row["report_parts"])

    def owner_job_ids(self, owner_id: str, *, limit: int) -> list[str]:
        """The owner's folder job ids, newest first."""
        rows = self.runner.run("SELECT id FROM folder_jobs WHERE owner_id = :owner ORDER BY created_at DESC LIMIT :limit", owner=owner_id, limit=limit)
        return [str(r["id"]) for r in rows]

    def add_files(self, job_id: str, files: Sequence[NewFolderFile]) -> int:
        """Insert what a page found; a key already there is left as it is (a re-listed page). Returns rows added."""
        if not files:
            return 0
        rows = self.runner.run(
            """INSERT INTO folder_job_files (folder_job_id, source_key, size_bytes, output_key, status, error_id, error_message, finished_at)
               SELECT :job, k, s, o, st, e, m, CASE WHEN st = 'queued' THEN NULL ELSE now() END
               FROM unnest(CAST(:keys AS text[]), CAST(:sizes AS bigint[]), CAST(:outs AS text[]), CAST(:statuses AS text[]),
                           CAST(:errors AS text[]), CAST(:messages AS text[])) AS t(k, s, o, st, e, m)
               ON CONFLICT (folder_job_id, source_key) DO NOTHING RETURNING source_key""",
            job=job_id,
            keys=[f.source_key for f in files],
            sizes=[f.size_bytes for f in files],
            outs=[f.output_key for f in files],
            statuses=[f.status for f in files],
            errors=[f.error_id for f in files],
            messages=[f.error_message for f in files],
        )
        return len(rows)

    def taken_outputs(self, job_id: str, output_keys: Sequence[str]) -> dict[str, str]:
        """output key → the source that already claims it (flat-layout collisions)."""
        if not output_keys:
            return {}
        rows = self.runner.run(
            "SELECT output_key, source_key FROM folder_job_files WHERE folder_job_id = :job AND output_key = ANY(CAST(:outs AS text[])) AND error_id IS DISTINCT FROM 'OUTPUT_COLLISION'",
            job=job_id,
            outs=list(output_keys),
        )
        return {r["output_key"]: r["source_key"] for r in rows}

    def claim_queued(self, job_id: str, limit: int, *, free_pages: int | None = None) -> list[FolderFile]:
        """Up to ``limit`` queued files → processing (SKIP LOCKED: two runs never start one file twice); a file
        waiting for live pages (``waits_for_pages``) only once ``free_pages`` hold it (None: no page check)."""
        if limit <= 0:
            return []
        claimed = self.runner.run(
            """UPDATE folder_job_files f SET status = :to, attempts = attempts + 1, started_at = now(), updated_at = now()
               WHERE (folder_job_id, source_key) IN (
                   SELECT folder_job_id, source_key FROM folder_job_files
                   WHERE folder_job_id = :job AND status = ANY(:from_)
                     AND (CAST(:free AS integer) IS NULL OR waits_for_pages IS NULL OR waits_for_pages <= CAST(:free AS integer))
                   ORDER BY source_key LIMIT :limit FOR UPDATE SKIP LOCKED)
               RETURNING f.*""",
            to=st.folder_file("start").target,
            from_=st.folder_file("start").from_states,
            job=job_id,
            limit=limit,
            free=free_pages,
        )
        return [folder_file(r) for r in sorted(claimed, key=lambda r: r["source_key"])]  # RETURNING has no order

    def release(self, job_id: str, source_key: str) -> None:
        """processing → queued for a file whose conversion could not be opened (the next turn tries again)."""
        self.runner.run(
            """UPDATE folder_job_files SET status = :to, updated_at = now()
               WHERE folder_job_id = :job AND source_key = :key AND status = ANY(:from_) AND conversion_job_id IS NULL""",
            to=st.folder_file("requeue").target,
            from_=st.folder_file("requeue").from_states,
            job=job_id,
            key=source_key,
        )

    def requeue_stalled_starts(self, job_id: str, *, older_than_s: float) -> int:
        """Files claimed by a turn that died before opening their conversion: queued again."""
        rows = self.runner.run(
            """UPDATE folder_job_files SET status = :to, updated_at = now()
               WHERE folder_job_id = :job AND status = ANY(:from_) AND conversion_job_id IS NULL
                 AND started_at < now() - make_interval(secs => :secs) RETURNING source_key""",
            to=st.folder_file("requeue").target,
            from_=st.folder_file("requeue").from_states,
            job=job_id,
            secs=older_than_s,
        )
        return len(rows)

    def attach_conversion(self, job_id: str, source_key: str, *, file_id: str, conversion_job_id: str, lane_reason: str | None = None) -> None:
        """The file's conversion, and why it was sent on-demand (``priority_high``, ``deadline``) if the folder job chose."""
        self.runner.run(
            """UPDATE folder_job_files SET file_id = CAST(:file AS uuid), conversion_job_id = CAST(:conv AS uuid), lane_reason = :why, updated_at = now()
               WHERE folder_job_id = :job AND source_key = :key""",
            file=file_id,
            conv=conversion_job_id,
            why=lane_reason,
            job=job_id,
            key=source_key,
        )

    def finish_file(
        self, job_id: str, source_key: str, *, status: str, error_id: str | None = None, error_message: str | None = None, **outcome: Any
    ) -> FolderFile | None:
        """processing/queued → a terminal status (``status``: completed, failed or skipped, each a named move) with what
        is known about it; None when it was already terminal."""
        move = st.folder_file(_FINISH[FolderFileStatus(status)])
        fields = {"error_id": error_id, "error_message": error_message, **outcome}
        sets = "".join(f", {name} = :f_{name}" for name in fields)
        params = {f"f_{name}": value for name, value in fields.items()}
        return _file(
            self.runner.one(
                f"""UPDATE folder_job_files SET status = :status, finished_at = now(), updated_at = now(), reported = false{sets}
                WHERE folder_job_id = :job AND source_key = :key AND status = ANY(:from_) RETURNING *""",
                status=move.target,
                from_=move.from_states,
                job=job_id,
                key=source_key,
                **params,
            )
        )

    def retry_conversion(self, job_id: str, source_key: str, *, waits_for_pages: int | None = None) -> FolderFile | None:
        """processing → queued after a failed conversion that ``policy.max_retries`` allows again (the caller logs
        its error; ``attempts`` keeps the count), or that waits for ``waits_for_pages`` live pages; None when it
        was not processing."""
        move = st.folder_file("retry_conversion")
        return _file(
            self.runner.one(
                """UPDATE folder_job_files SET status = :to, conversion_job_id = NULL, error_id = NULL, error_message = NULL,
                   waits_for_pages = CAST(:wait AS integer), updated_at = now()
               WHERE folder_job_id = :job AND source_key = :key AND status = ANY(:from_) RETURNING *""",
                to=move.target,
                from_=move.from_states,
                job=job_id,
                key=source_key,
                wait=waits_for_pages,
            )
        )

    def skip_queued(self, job_id: str, *, error_id: str, message: str) -> int:
        rows = self.runner.run(
            """UPDATE folder_job_files SET status = :to, error_id = :e, error_message = :m, finished_at = now(), updated_at = now(), reported = false
               WHERE folder_job_id = :job AND status = :queued RETURNING source_key""",
            to=st.folder_file("skip").target,
            queued=FolderFileStatus.QUEUED.value,  # a cancel skips what has not started; started files finish (skip allows both)
            job=job_id,
            e=error_id,
            m=message,
        )
        return len(rows)

    def requeue(self, job_id: str, *, statuses: Sequence[str], error_ids: Sequence[str] | None = None) -> int:
        """Files in ``statuses`` (optionally only these error ids) → queued again (retry, resume)."""
        move = st.folder_file("retry")
        assert set(statuses) <= move.sources, statuses
        rows = self.runner.run(
            """UPDATE folder_job_files SET status = :to, error_id = NULL, error_message = NULL, finished_at = NULL, updated_at = now(),
                      reported = false, conversion_job_id = NULL
               WHERE folder_job_id = :job AND status = ANY(:statuses)
                 AND (CAST(:errors AS text[]) IS NULL OR error_id = ANY(CAST(:errors AS text[])))
                 AND error_id IS DISTINCT FROM 'OUTPUT_COLLISION' AND error_id IS DISTINCT FROM 'NOT_PDF' AND error_id IS DISTINCT FROM 'FILE_TYPE_UNSUPPORTED'
               RETURNING source_key""",
            to=move.target,
            job=job_id,
            statuses=list(statuses),
            errors=list(error_ids) if error_ids else None,
        )
        return len(rows)

    def unreported(self, job_id: str) -> list[FolderFile]:
        return [
            folder_file(r)
            for r in self.runner.run(
                "SELECT * FROM folder_job_files WHERE folder_job_id = :job AND reported = false AND status IN ('completed', 'failed', 'skipped') ORDER BY source_key",
                job=job_id,
            )
        ]

    def mark_reported(self, job_id: str, keys: Sequence[str]) -> None:
        if keys:
            self.runner.run(
                "UPDATE folder_job_files SET reported = true WHERE folder_job_id = :job AND source_key = ANY(CAST(:keys AS text[]))",
                job=job_id,
                keys=list(keys),
            )

    def iter_ended_files(self, job_id: str, *, after: str | None = None, page: int = 1000) -> Iterator[FolderFile]:
        """Every finished file in key order (past ``after``), a page at a time (the final report)."""
        while True:
            rows = self.runner.run(
                """SELECT * FROM folder_job_files WHERE folder_job_id = :job AND status IN ('completed', 'failed', 'skipped')
                     AND (CAST(:after AS text) IS NULL OR source_key > :after) ORDER BY source_key LIMIT :limit""",
                job=job_id,
                after=after,
                limit=page,
            )
            yield from (folder_file(r) for r in rows)
            if len(rows) < page:
                return
            after = rows[-1]["source_key"]

    def counts(self, job_id: str) -> FolderCounts:
        """Files and pages by status, in one query (the status read model)."""
        row = self.runner.one(
            """SELECT count(*) AS discovered,
                      count(*) FILTER (WHERE status = 'queued') AS queued,
                      count(*) FILTER (WHERE status = 'processing') AS processing,
                      count(*) FILTER (WHERE status = 'completed') AS completed,
                      count(*) FILTER (WHERE status = 'failed') AS failed,
                      count(*) FILTER (WHERE status = 'skipped') AS skipped,
                      COALESCE(sum(pages - pages_failed) FILTER (WHERE status = 'completed'), 0) AS pages_completed,
                      COALESCE(sum(pages_failed) FILTER (WHERE status IN ('completed', 'failed')), 0)
                        + COALESCE(sum(pages) FILTER (WHERE status = 'failed' AND pages_failed = 0), 0) AS pages_failed,
                      COALESCE(sum(cost_usd), 0) AS cost_usd
               FROM folder_job_files WHERE folder_job_id = :job""",
            job=job_id,
        )
        assert row is not None
        values: dict[str, Any] = {k: (float(v) if k == "cost_usd" else int(v)) for k, v in row.items()}
        return FolderCounts(**values)

    def live_counts(self, job_id: str, *, cap: int) -> tuple[int, int]:
        """(queued, processing) files, each counted up to ``cap``: a loop turn's check, over at most 2 × ``cap``
        index entries whatever the folder holds (folder_files_queued_by_key, folder_files_by_status)."""
        row = self.runner.one(
            """SELECT (SELECT count(*) FROM (SELECT 1 FROM folder_job_files WHERE folder_job_id = :job AND status = 'queued' LIMIT :cap) q) AS queued,
                      (SELECT count(*) FROM (SELECT 1 FROM folder_job_files WHERE folder_job_id = :job AND status = 'processing' LIMIT :cap) p) AS processing""",
            job=job_id,
            cap=cap,
        )
        assert row is not None
        return int(row["queued"]), int(row["processing"])

    def list_files(self, job_id: str, *, status: str | None = None, limit: int = 1000, after: str | None = None) -> list[FolderFile]:
        return [
            folder_file(r)
            for r in self.runner.run(
                """SELECT * FROM folder_job_files WHERE folder_job_id = :job AND (CAST(:status AS text) IS NULL OR status = :status)
                 AND (CAST(:after AS text) IS NULL OR source_key > :after) ORDER BY source_key LIMIT :limit""",
                job=job_id,
                status=status,
                after=after,
                limit=limit,
            )
        ]

    def ended_conversions(self, job_id: str) -> list[EndedConversion]:
        """Processing files whose conversion job has ended: what the progress step settles."""
        return [
            ended_conversion(r)
            for r in self.runner.run(
                """SELECT f.source_key, f.output_key, f.attempts, f.lane_reason, j.id AS conversion_job_id, j.status AS job_status, j.total_pages, j.pages_failed,
                      j.total_cost_usd, j.error_id AS job_error_id, j.error_message AS job_error_message, j.markdown_key, j.pages_batch, j.lane_reason AS pool_reason,
                      j.source_type
               FROM folder_job_files f JOIN large_conversion_jobs j ON j.id = f.conversion_job_id
               WHERE f.folder_job_id = :job AND f.status = 'processing' AND j.status IN ('completed', 'failed', 'cancelled')
               ORDER BY f.source_key""",
                job=job_id,
            )
        ]

    def parked_conversions(self, job_id: str) -> list[str]:
        """Conversion jobs of the folder job's processing files that wait for the batch lane."""
        rows = self.runner.run(
            """SELECT j.id FROM folder_job_files f JOIN large_conversion_jobs j ON j.id = f.conversion_job_id
               WHERE f.folder_job_id = :job AND f.status = 'processing' AND j.status = 'waiting_batch'""",
            job=job_id,
        )
        return [str(r["id"]) for r in rows]

    def count_processing(self, job_id: str) -> int:
        """Files in flight that hold capacity: a file whose conversion waits in the batch pool does not (the pool
        gathers many of them into one Bedrock job); it still counts as processing in the job's status."""
        row = self.runner.one(
            """SELECT count(*) AS n FROM folder_job_files f LEFT JOIN large_conversion_jobs j ON j.id = f.conversion_job_id
               WHERE f.folder_job_id = :job AND f.status = 'processing' AND j.status IS DISTINCT FROM :parked""",
            job=job_id,
            parked=JobStatus.WAITING_BATCH,
        )
        return int(row["n"]) if row else 0

    def insert_source_file(self, *, owner_id: str, name: str, bucket: str, key: str, size_bytes: int) -> FileRow:
        """A ``files`` row for a folder file: read where it lies (``source_bucket``), never copied."""
        row = self.runner.one(
            "INSERT INTO files (owner_id, name, s3_key, size_bytes, source_bucket) VALUES (:owner, :name, :key, :size, :bucket) RETURNING *",
            owner=owner_id,
            name=name,
            key=key,
            size=size_bytes,
            bucket=bucket,
        )
        assert row is not None
        return FileRow.of(row)

    def live_unchanged(self, *, unchanged_for_s: float, limit: int) -> list[FolderJob]:
        """Live folder jobs unchanged for ``unchanged_for_s`` s, ``limit`` of them in random order (folders/recovery.py)."""
        rows = self.runner.run(
            """SELECT * FROM folder_jobs WHERE status = ANY(CAST(:live AS text[])) AND finished_at IS NULL
                 AND updated_at < now() - make_interval(secs => :secs)
               ORDER BY random() LIMIT :limit""",
            live=list(st.LIVE_FOLDER_JOB_STATUSES),
            secs=unchanged_for_s,
            limit=limit,
        )
        return [folder_job(row) for row in rows]
