"""batchlane.ports.FolderJobRepository in memory: the contract of db/folder_jobs.py's Pg adapter (tests/contract)."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

from batchlane.domain import status as st
from batchlane.domain.status import Entity, FolderFileStatus, JobStatus, Transition
from batchlane.rows import EndedConversion, FileRow, FolderCounts, FolderFile, FolderJob, NewFolderFile
from fakes.jobs import FakeJobs

_ENDED_FILE = (FolderFileStatus.COMPLETED.value, FolderFileStatus.FAILED.value, FolderFileStatus.SKIPPED.value)
_FINISH = {"completed": "complete", "failed": "fail", "skipped": "skip"}
_NEVER_REQUEUED = ("OUTPUT_COLLISION", "NOT_PDF", "FILE_TYPE_UNSUPPORTED")
_ENDED_JOB = (JobStatus.COMPLETED.value, JobStatus.FAILED.value, JobStatus.CANCELLED.value)


@dataclass
class _FolderRows:
    jobs: dict[str, FolderJob] = field(default_factory=dict)
    files: dict[tuple[str, str], FolderFile] = field(default_factory=dict)


class FakeFolderJobs:
    def __init__(self, state: Any) -> None:  # a fakes.FakeState
        self.state = state

    @property
    def _rows(self) -> _FolderRows:
        return self.state.part("folder_jobs", _FolderRows)  # type: ignore[no-any-return]

    def _now(self) -> Any:
        return self.state.clock.now()

    # -- jobs --------------------------------------------------------------------------------
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
        if job_id in self._rows.jobs:
            return None
        now = self._now()
        job = FolderJob(
            id=job_id, owner_id=owner_id, name=name, spec=dict(spec), status="enumerating", error_id=None, error_message=None,
            input_bucket=source[0], input_prefix=source[1], output_bucket=target[0], output_prefix=target[1], continuation_token=None,
            enumeration_done=False, objects_listed=0, excluded_count=0, run=1, turns=0, report_parts=0, created_at=now, updated_at=now,
            enumerated_at=None, finished_at=None, priority_allowed=priority_allowed,
        )  # fmt: skip
        self._rows.jobs[job_id] = job
        return job

    def get(self, job_id: str) -> FolderJob | None:
        return self._rows.jobs.get(job_id)

    def _put(self, job: FolderJob, **changes: Any) -> FolderJob:
        moved = dataclasses.replace(job, **changes)
        self._rows.jobs[job.id] = moved
        return moved

    def move(
        self, job_id: str, move: Transition, *, ended: bool | None = None, error_id: str | None = None, error_message: str | None = None
    ) -> FolderJob | None:
        assert move.entity is Entity.FOLDER_JOB, move
        job = self.get(job_id)
        if job is None or not move.allows(job.status):
            return None
        terminal = move.target not in st.LIVE_FOLDER_JOB_STATUSES if ended is None else ended
        errors = {"error_id": error_id, "error_message": error_message} if error_id is not None or error_message is not None else {}
        return self._put(job, status=move.target, updated_at=self._now(), finished_at=self._now() if terminal else None, **errors)

    def reopen(self, job_id: str, *, priority_allowed: bool) -> FolderJob | None:
        job = self.get(job_id)
        move = st.folder_job("reopen" if job is not None and job.enumeration_done else "reopen_enumeration")
        if job is None or not move.allows(job.status) or job.finished_at is None:
            return None
        return self._put(
            job, status=move.target, run=job.run + 1, turns=0, error_id=None, error_message=None, finished_at=None, updated_at=self._now(),
            priority_allowed=priority_allowed,
        )  # fmt: skip

    def relist(self, job_id: str, *, priority_allowed: bool) -> FolderJob | None:
        job = self.get(job_id)
        if job is None or not st.folder_job("relist").allows(job.status):
            return None
        return self._put(
            job, status=st.folder_job("relist").target, run=job.run + 1, turns=0, error_id=None, error_message=None, finished_at=None,
            continuation_token=None, objects_listed=0, excluded_count=0, enumeration_done=False, enumerated_at=None, updated_at=self._now(),
            priority_allowed=priority_allowed,
        )

    def save_checkpoint(self, job_id: str, *, token: str | None, listed: int, excluded: int, done: bool) -> None:
        job = self.get(job_id)
        if job is not None:
            self._put(
                job, continuation_token=token, objects_listed=job.objects_listed + listed, excluded_count=job.excluded_count + excluded,
                enumeration_done=done, updated_at=self._now(), enumerated_at=self._now() if done else job.enumerated_at,
            )  # fmt: skip

    def count_turn(self, job_id: str) -> int:
        job = self.get(job_id)
        return self._put(job, turns=job.turns + 1).turns if job else 0

    def next_run(self, job_id: str, *, run: int) -> FolderJob | None:
        job = self.get(job_id)
        if job is None or job.run != run:
            return None
        return self._put(job, run=run + 1, turns=0, updated_at=self._now())

    def next_report_part(self, job_id: str) -> int:
        job = self.get(job_id)
        assert job is not None
        return self._put(job, report_parts=job.report_parts + 1).report_parts

    def owner_job_ids(self, owner_id: str, *, limit: int) -> list[str]:
        mine = [j for j in self._rows.jobs.values() if j.owner_id == owner_id]
        return [j.id for j in sorted(mine, key=lambda j: j.created_at, reverse=True)][:limit]

    # -- files -------------------------------------------------------------------------------
    def _files(self, job_id: str) -> list[FolderFile]:
        return sorted((f for (j, _), f in self._rows.files.items() if j == job_id), key=lambda f: f.source_key)

    def _put_file(self, f: FolderFile, **changes: Any) -> FolderFile:
        moved = dataclasses.replace(f, **changes)
        self._rows.files[(f.folder_job_id, f.source_key)] = moved
        return moved

    def _moved(self, job_id: str, key: str, move: Transition, **changes: Any) -> FolderFile | None:
        f = self._rows.files.get((job_id, key))
        if f is None or not move.allows(f.status):
            return None
        return self._put_file(f, status=move.target, **changes)

    def add_files(self, job_id: str, files: Sequence[NewFolderFile]) -> int:
        added = 0
        for n in files:
            if (job_id, n.source_key) in self._rows.files:
                continue
            assert n.status in st.INITIAL[Entity.FOLDER_FILE], n.status
            self._rows.files[(job_id, n.source_key)] = FolderFile(
                folder_job_id=job_id, source_key=n.source_key, status=n.status, output_key=n.output_key, size_bytes=n.size_bytes,
                file_id=None, conversion_job_id=None, pages=0, pages_failed=0, attempts=0, error_id=n.error_id, error_message=n.error_message,
                lane=None, lane_reason=None, cost_usd=Decimal(0), reported=False, waits_for_pages=None, started_at=None,
                finished_at=None if n.status == "queued" else self._now(),
            )  # fmt: skip
            added += 1
        return added

    def taken_outputs(self, job_id: str, output_keys: Sequence[str]) -> dict[str, str]:
        wanted = set(output_keys)
        return {f.output_key: f.source_key for f in self._files(job_id) if f.output_key in wanted and f.error_id != "OUTPUT_COLLISION" and f.output_key}

    def claim_queued(self, job_id: str, limit: int, *, free_pages: int | None = None) -> list[FolderFile]:
        move = st.folder_file("start")
        ready = [
            f for f in self._files(job_id)
            if move.allows(f.status) and (free_pages is None or f.waits_for_pages is None or f.waits_for_pages <= free_pages)
        ][: max(limit, 0)]  # fmt: skip
        return [self._put_file(f, status=move.target, attempts=f.attempts + 1, started_at=self._now()) for f in ready]

    def release(self, job_id: str, source_key: str) -> None:
        f = self._rows.files.get((job_id, source_key))
        if f is not None and f.conversion_job_id is None:
            self._moved(job_id, source_key, st.folder_file("requeue"))

    def requeue_stalled_starts(self, job_id: str, *, older_than_s: float) -> int:
        now = self._now()
        stalled = [
            f
            for f in self._files(job_id)
            if f.status == "processing" and f.conversion_job_id is None and f.started_at is not None and (now - f.started_at).total_seconds() > older_than_s
        ]
        for f in stalled:
            self._moved(job_id, f.source_key, st.folder_file("requeue"))
        return len(stalled)

    def attach_conversion(self, job_id: str, source_key: str, *, file_id: str, conversion_job_id: str, lane_reason: str | None = None) -> None:
        f = self._rows.files.get((job_id, source_key))
        if f is not None:
            self._put_file(f, file_id=file_id, conversion_job_id=conversion_job_id, lane_reason=lane_reason)

    def finish_file(
        self, job_id: str, source_key: str, *, status: str, error_id: str | None = None, error_message: str | None = None, **outcome: Any
    ) -> FolderFile | None:
        if "cost_usd" in outcome:
            outcome["cost_usd"] = Decimal(outcome["cost_usd"]).quantize(Decimal("0.000001"))  # numeric(14, 6)
        return self._moved(
            job_id,
            source_key,
            st.folder_file(_FINISH[status]),
            error_id=error_id,
            error_message=error_message,
            finished_at=self._now(),
            reported=False,
            **outcome,
        )

    def retry_conversion(self, job_id: str, source_key: str, *, waits_for_pages: int | None = None) -> FolderFile | None:
        return self._moved(
            job_id, source_key, st.folder_file("retry_conversion"), conversion_job_id=None, error_id=None, error_message=None, waits_for_pages=waits_for_pages
        )

    def skip_queued(self, job_id: str, *, error_id: str, message: str) -> int:
        queued = [f for f in self._files(job_id) if f.status == FolderFileStatus.QUEUED.value]
        for f in queued:
            self._moved(job_id, f.source_key, st.folder_file("skip"), error_id=error_id, error_message=message, finished_at=self._now(), reported=False)
        return len(queued)

    def requeue(self, job_id: str, *, statuses: Sequence[str], error_ids: Sequence[str] | None = None) -> int:
        move = st.folder_file("retry")
        assert set(statuses) <= move.sources, statuses
        chosen = [
            f for f in self._files(job_id)
            if f.status in statuses and (not error_ids or f.error_id in error_ids) and f.error_id not in _NEVER_REQUEUED
        ]  # fmt: skip
        for f in chosen:
            self._moved(job_id, f.source_key, move, error_id=None, error_message=None, finished_at=None, reported=False, conversion_job_id=None)
        return len(chosen)

    def unreported(self, job_id: str) -> list[FolderFile]:
        return [f for f in self._files(job_id) if not f.reported and f.status in _ENDED_FILE]

    def mark_reported(self, job_id: str, keys: Sequence[str]) -> None:
        for key in keys:
            f = self._rows.files.get((job_id, key))
            if f is not None:
                self._put_file(f, reported=True)

    def iter_ended_files(self, job_id: str, *, after: str | None = None, page: int = 1000) -> Iterator[FolderFile]:
        while True:
            rows = [f for f in self._files(job_id) if f.status in _ENDED_FILE and (after is None or f.source_key > after)][:page]
            yield from rows
            if len(rows) < page:
                return
            after = rows[-1].source_key

    def live_counts(self, job_id: str, *, cap: int) -> tuple[int, int]:
        files = self._files(job_id)
        return min(sum(1 for f in files if f.status == "queued"), cap), min(sum(1 for f in files if f.status == "processing"), cap)

    def counts(self, job_id: str) -> FolderCounts:
        files = self._files(job_id)
        by = {s: sum(1 for f in files if f.status == s) for s in ("queued", "processing", "completed", "failed", "skipped")}
        pages_completed = sum(f.pages - f.pages_failed for f in files if f.status == "completed")
        pages_failed = sum(f.pages_failed for f in files if f.status in ("completed", "failed")) + sum(
            f.pages for f in files if f.status == "failed" and f.pages_failed == 0
        )
        return FolderCounts(
            discovered=len(files),
            pages_completed=pages_completed,
            pages_failed=pages_failed,
            cost_usd=float(sum((f.cost_usd for f in files), Decimal(0))),
            **by,
        )

    def list_files(self, job_id: str, *, status: str | None = None, limit: int = 1000, after: str | None = None) -> list[FolderFile]:
        return [f for f in self._files(job_id) if (status is None or f.status == status) and (after is None or f.source_key > after)][:limit]

    # -- what joins the conversion jobs and the files ----------------------------------------
    def _conversions(self, job_id: str) -> list[tuple[FolderFile, Any]]:
        """Processing files joined with their conversion job (a file whose job is not there drops out, as in the JOIN)."""
        jobs = FakeJobs(self.state)
        pairs = [(f, jobs.get_job(f.conversion_job_id)) for f in self._files(job_id) if f.status == "processing" and f.conversion_job_id]
        return [(f, job) for f, job in pairs if job is not None]

    def _pool_reason(self, conversion_job_id: str) -> str | None:
        lanes = self.state.parts.get("lanes")  # large_conversion_jobs.lane_reason lives with the fake lanes (leave_pool sets it)
        return getattr(lanes, "lane_reason", {}).get(conversion_job_id)

    def ended_conversions(self, job_id: str) -> list[EndedConversion]:
        return [self._ended(f, job) for f, job in self._conversions(job_id) if job.status in _ENDED_JOB]

    def _ended(self, f: FolderFile, job: Any) -> EndedConversion:
        return EndedConversion(
            source_key=f.source_key, output_key=f.output_key, attempts=f.attempts, lane_reason=f.lane_reason, conversion_job_id=job.id,
            job_status=job.status, total_pages=job.total_pages, pages_failed=job.pages_failed, pages_batch=job.pages_batch,
            total_cost_usd=job.total_cost_usd, job_error_id=job.error_id, job_error_message=job.error_message, markdown_key=job.markdown_key,
            pool_reason=self._pool_reason(job.id), source_type=job.source_type,
        )  # fmt: skip

    def parked_conversions(self, job_id: str) -> list[str]:
        return [job.id for _, job in self._conversions(job_id) if job.status == JobStatus.WAITING_BATCH]

    def count_processing(self, job_id: str) -> int:
        jobs = FakeJobs(self.state)
        processing = [f for f in self._files(job_id) if f.status == "processing"]
        # LEFT JOIN: a file with no conversion (or a vanished one) holds capacity; one parked in the pool does not
        parked = [f for f in processing if f.conversion_job_id and (job := jobs.get_job(f.conversion_job_id)) and job.status == JobStatus.WAITING_BATCH]
        return len(processing) - len(parked)

    def insert_source_file(self, *, owner_id: str, name: str, bucket: str, key: str, size_bytes: int) -> FileRow:
        jobs = FakeJobs(self.state)
        return jobs.put_file(dataclasses.replace(jobs.insert_file(owner_id=owner_id, name=name, s3_key=key, size_bytes=size_bytes), source_bucket=bucket))

    def live_unchanged(self, *, unchanged_for_s: float, limit: int) -> list[FolderJob]:
        cutoff = self._now() - timedelta(seconds=unchanged_for_s)  # <=: PostgreSQL's now() is a later statement's
        due = [j for j in self._rows.jobs.values() if j.status in st.LIVE_FOLDER_JOB_STATUSES and j.finished_at is None and j.updated_at <= cutoff]
        return random.sample(due, min(len(due), max(limit, 0)))  # ORDER BY random() LIMIT
