"""The pool's half of the in-memory LaneRepository (fakes.lanes.FakeLanes): what db/lanes.py reads
across jobs, chunks, lanes and folder files (the fair order, the folder window, stranded jobs, what to purge).

Each method follows its SQL statement clause by clause; the contract tests (tests/contract/test_pool_contract.py) hold
the two equal. The fakes are one process: the advisory lock and SKIP LOCKED have nothing to wait for.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from batchlane.domain import status as st
from batchlane.domain.limits import estimated_record_bytes
from batchlane.domain.pool import by_base_model
from batchlane.domain.status import BatchMemberState, LaneState
from batchlane.rows import ChunkRow, JobRow, Lane, LaneOutcome, PooledChunk, PoolRead, PurgeTarget
from fakes.folder_jobs import _FolderRows
from fakes.jobs import _JobRows

FOLDER_STALL_S = 120.0  # db/lanes.FOLDER_STALL_S: a folder that started no file for this long lets its files' windows start
_UNBOUNDED = 2**62  # db/lanes._UNBOUNDED: no budget
_LIVE_FOLDER = ("enumerating", "processing")


def _parked() -> frozenset[str]:
    return frozenset(str(s) for s in st.leave_batch_lane().from_states)


def _uuid(value: str) -> str:
    """CAST(:x AS uuid): a malformed id is an error, a well-formed one reads back in its canonical form."""
    return str(uuid.UUID(str(value)))


@dataclass
class _MemberRow:
    """One batch_members row (0017_batch_pool.sql), mutable as the SQL row is."""

    lane_row_id: int
    job_id: str
    chunk_index: int
    member_tag: str
    pages: int
    records: int | None = None
    accepted: int | None = None
    state: str = "packed"
    purged_at: datetime | None = None


@dataclass
class _LaneRows:
    """The lanes' part of the FakeState, which FakeLanes and the pool's reads share."""

    rows: dict[int, Lane] = field(default_factory=dict)  # lanes by id (Lane is frozen: replace() to move)
    members: list[_MemberRow] = field(default_factory=list)
    pooled_at: dict[str, datetime] = field(default_factory=dict)  # large_conversion_jobs.pooled_at by job id
    pool_left_at: dict[str, datetime] = field(default_factory=dict)  # large_conversion_jobs.pool_left_at by job id
    lane_reason: dict[str, str] = field(default_factory=dict)  # large_conversion_jobs.lane_reason (leave_pool sets it)
    next_id: int = 1


def lane_rows(state: Any) -> _LaneRows:
    rows: _LaneRows = state.part("lanes", _LaneRows)
    return rows


class FakePool:
    state: Any  # a fakes.FakeState (set by FakeLanes)

    @property
    def _rows(self) -> _LaneRows:  # the lanes' part of the state (lanes, members, the jobs' pool columns)
        return lane_rows(self.state)

    @property
    def _jobs(self) -> _JobRows:
        rows: _JobRows = self.state.part("jobs", _JobRows)
        return rows

    @property
    def _folders(self) -> _FolderRows:
        rows: _FolderRows = self.state.part("folder_jobs", _FolderRows)
        return rows

    def _now(self) -> datetime:
        now: datetime = self.state.clock.now()
        return now

    def _chunks_of(self, job_id: str) -> list[ChunkRow]:
        return sorted((c for (j, _), c in self._jobs.chunks.items() if j == job_id), key=lambda c: c.chunk_index)

    def _carried(self) -> set[tuple[str, int]]:
        """(job, chunk) of every member, whatever its state: a chunk rides in a lane once, then never returns to the pool."""
        return {(m.job_id, m.chunk_index) for m in self._rows.members}

    # -- lanes the packer writes and reads -----------------------------------------------------
    def insert_lane(self, *, lane_id: str, model_id: str, deadline_hours: float, chunks: list[tuple[str, int, int]]) -> Lane:
        """A preparing lane carrying ``chunks`` (job id, chunk index, pages), each job tagged m<k> in order of first
        appearance. Refused, nothing written, where PostgreSQL's constraints refuse the INSERTs."""
        lane_id = _uuid(lane_id)
        tags: dict[str, str] = {}
        for job_id, _, _ in chunks:
            tags.setdefault(_uuid(job_id), f"m{len(tags)}")
        if any(row.lane_id == lane_id for row in self._rows.rows.values()):
            raise ValueError(f"lane {lane_id} exists")  # lanes_lane_id_key
        missing = sorted(set(tags) - set(self._jobs.jobs))
        if missing:
            raise ValueError(f"no job {missing[0]}")  # batch_members' foreign key
        keys = [(_uuid(j), c) for j, c, _ in chunks]
        if len(set(keys)) < len(keys):
            raise ValueError("a chunk twice in one lane")  # batch_members' primary key
        packed = {(m.job_id, m.chunk_index) for m in self._rows.members if m.state == BatchMemberState.PACKED}
        if packed & set(keys):
            raise ValueError("a chunk already rides in an open lane")  # one_open_lane_per_chunk
        now = self._now()
        row = Lane(
            id=self._rows.next_id, lane_id=lane_id, job_id=None, member_count=len(tags), retry_of=None, state=LaneState.PREPARING.value,
            end_state=None, reason=None, model_id=model_id, bedrock_job_arn=None, bedrock_job_name=None, bedrock_status=None, task_tokens=[],
            record_count=None, input_bytes=None, accepted_count=None, fallback_count=None, manifest_key=None, output_uri=None,
            deadline=now + timedelta(seconds=deadline_hours * 3600), attempts=0, collect_attempts=0, cost_usd=None, created_at=now,
            prepare_started_at=None, prepared_at=None, submitted_at=None, terminal_seen_at=None, collect_started_at=None, closed_at=None,
            resumed_at=None, updated_at=now,
        )  # fmt: skip
        self._rows.next_id += 1
        self._rows.rows[row.id] = row
        for (job_id, chunk_index), (_, _, pages) in zip(keys, chunks, strict=True):
            self._rows.members.append(_MemberRow(row.id, job_id, chunk_index, tags[job_id], pages))
        return row

    def lock_claims(self) -> None:
        """pg_advisory_xact_lock: one process, nothing to serialise against."""

    def in_flight_by_model(self) -> dict[str, int]:
        return dict(Counter(row.model_id for row in self._rows.rows.values() if row.state in st.IN_FLIGHT_LANE_STATES))

    def in_flight_by_base_model(self) -> dict[str, int]:
        return by_base_model(self.in_flight_by_model())

    def preparing_lanes(self) -> list[tuple[str, int]]:
        return [(row.lane_id, row.id) for row in sorted(self._rows.rows.values(), key=lambda r: r.id) if row.state == LaneState.PREPARING]

    # -- the pool ------------------------------------------------------------------------------
    def note_pooled(self, *, window_s: float) -> None:
        """Start the window of every parked job seen for the first time, unless its folder may still bring more files
        (db/lanes.PgLanes.note_pooled: the two NOT EXISTS, in order)."""
        now, parked = self._now(), _parked()
        since = now - timedelta(seconds=max(float(window_s), FOLDER_STALL_S))
        folder_files = list(self._folders.files.values())
        attached = {f.conversion_job_id for f in folder_files if f.conversion_job_id is not None}
        for job in list(self._jobs.jobs.values()):
            if job.status not in parked or job.id in self._rows.pooled_at:
                continue
            held_by_folder = any(self._folder_may_bring_more(f.folder_job_id, since) for f in folder_files if f.conversion_job_id == job.id)
            file_row = self._jobs.files.get(job.file_id)
            unattached = file_row is not None and file_row.source_bucket is not None and job.id not in attached and job.created_at > since
            if not held_by_folder and not unattached:
                self._rows.pooled_at[job.id] = now

    def _folder_may_bring_more(self, folder_job_id: str, since: datetime) -> bool:
        folder = self._folders.jobs.get(folder_job_id)
        if folder is None or folder.status not in _LIVE_FOLDER:
            return False
        files = [f for (j, _), f in self._folders.files.items() if j == folder_job_id]

        def opening(conversion_job_id: str | None) -> bool:
            if conversion_job_id is None:
                return True
            job = self._jobs.jobs.get(conversion_job_id)
            return job is not None and job.status == st.JobStatus.SPLITTING

        more = (
            not folder.enumeration_done
            or any(f.status == "queued" for f in files)
            or any(f.status == "processing" and opening(f.conversion_job_id) for f in files)
        )
        started = [f.started_at for f in files if f.started_at is not None]
        return more and bool(started) and max(started) > since

    def _waiting(self) -> list[JobRow]:
        parked = _parked()
        return [j for j in self._jobs.jobs.values() if j.status in parked and j.id not in self._rows.pool_left_at]

    def read_pool(self, *, budgets: dict[str, int] | None = None, default_budget: int | None = None) -> PoolRead:
        """The fair order of db/lanes.PgLanes.read_pool: an owner's k-th waiting job has turn k + its lanes in flight;
        lowest turns first, ties oldest first (then by id), a job's chunks in order; per model the prefix whose pages
        before each chunk stay under its budget, with truncated / smallest / lightest over every waiting chunk."""
        now, waiting = self._now(), self._waiting()
        turn: dict[str, int] = {}
        seen: Counter[str] = Counter()
        for job in sorted(waiting, key=lambda j: (j.owner_id, j.created_at, j.id)):
            seen[job.owner_id] += 1
            turn[job.id] = seen[job.owner_id]
        busy = self._lanes_in_flight_by_owner()
        carried = self._carried()
        fallback = _UNBOUNDED if default_budget is None else int(default_budget)
        by_model: dict[str, list[tuple[tuple[Any, ...], PooledChunk]]] = {}
        for job in waiting:
            pooled = self._rows.pooled_at.get(job.id)
            waited = (now - pooled).total_seconds() if pooled is not None else 0.0
            for c in self._chunks_of(job.id):
                if (job.id, c.chunk_index) in carried:
                    continue
                key = (turn[job.id] + busy.get(job.owner_id, 0), job.created_at, job.id, c.chunk_index)
                records = c.records if c.records is not None else c.last_page - c.first_page + 1  # a born-digital chunk's pictures (0044)
                chunk = PooledChunk(job.id, job.model_id, c.chunk_index, records, waited, c.source_bytes)
                by_model.setdefault(job.model_id, []).append((key, chunk))
        chunks: list[PooledChunk] = []
        truncated, smallest, lightest = {}, {}, {}
        for model in sorted(by_model):
            ordered = [chunk for _, chunk in sorted(by_model[model], key=lambda kc: kc[0])]
            budget = int((budgets or {})[model]) if model in (budgets or {}) else fallback
            before, prefix, cut = 0, [], False
            for chunk in ordered:
                if before < budget:
                    prefix.append(chunk)
                else:
                    cut = True
                before += chunk.pages
            if not prefix:
                continue  # no row of the model read: the model is absent from every map
            chunks.extend(prefix)
            truncated[model] = cut
            smallest[model] = min(c.pages for c in ordered)
            lightest[model] = min(estimated_record_bytes(c.source_bytes, c.pages) for c in ordered)
        return PoolRead(chunks, truncated, smallest, lightest)

    def _lanes_in_flight_by_owner(self) -> dict[str, int]:
        """busy: per owner, the lanes in flight carrying a member (in any state) of one of their jobs."""
        in_flight = {row.id for row in self._rows.rows.values() if row.state in st.IN_FLIGHT_LANE_STATES}
        lanes: dict[str, set[int]] = {}
        for m in self._rows.members:
            job = self._jobs.jobs.get(m.job_id)
            if m.lane_row_id in in_flight and job is not None:
                lanes.setdefault(job.owner_id, set()).add(m.lane_row_id)
        return {owner: len(ids) for owner, ids in lanes.items()}

    def pool_chunks(self) -> list[PooledChunk]:
        return self.read_pool().chunks

    def leave_pool(self, job_ids: list[str], *, reason: str) -> list[str]:
        now, left = self._now(), []
        for job_id in dict.fromkeys(_uuid(j) for j in job_ids):
            job = self._jobs.jobs.get(job_id)
            if job is None or job_id in self._rows.pool_left_at:
                continue
            self._rows.pool_left_at[job_id] = now
            self._rows.lane_reason.setdefault(job_id, reason)
            self._jobs.jobs[job_id] = replace(job, updated_at=now)
            left.append(job_id)
        return left

    # -- where a job stands with the pool and the lanes ------------------------------------------
    def job_lane_outcome(self, job_id: str) -> LaneOutcome:
        job = self._jobs.jobs.get(_uuid(job_id))
        if job is None:
            return LaneOutcome(False, 0, 0)
        mine = [m for m in self._rows.members if m.job_id == job.id]
        riding = any(m.state == BatchMemberState.PACKED for m in mine)
        carried = {m.chunk_index for m in mine}
        unpacked = any(c.chunk_index not in carried for c in self._chunks_of(job.id))
        let_go = job.id in self._rows.pool_left_at
        accepted = sum(m.accepted or 0 for m in mine if m.state == BatchMemberState.COLLECTED)
        settled = not riding and (let_go or not unpacked)
        return LaneOutcome(settled, accepted, len({m.lane_row_id for m in mine}))

    def stranded_job_ids(self, *, older_than_s: float) -> list[str]:
        """Parked jobs no lane carries and the pool has nothing more for, whose last lane closed (or last moved) or
        whose pool let go, whichever is later, ``older_than_s`` ago."""
        cutoff, parked, stranded = self._now() - timedelta(seconds=older_than_s), _parked(), []
        for job in self._jobs.jobs.values():
            mine = [m for m in self._rows.members if m.job_id == job.id]
            chunks = self._chunks_of(job.id)
            carried = {m.chunk_index for m in mine}
            if job.status not in parked or not chunks or any(m.state == BatchMemberState.PACKED for m in mine):
                continue
            left_at = self._rows.pool_left_at.get(job.id)
            if left_at is None and any(c.chunk_index not in carried for c in chunks):
                continue
            lanes = [self._rows.rows[m.lane_row_id] for m in mine if m.lane_row_id in self._rows.rows]
            last_lane = max((lane.closed_at or lane.updated_at for lane in lanes), default=None)
            latest = max(_present(left_at, last_lane), default=None)  # GREATEST skips NULLs
            if latest is not None and latest < cutoff:
                stranded.append(job.id)
        return stranded

    def job_deadlines(self, job_ids: list[str]) -> dict[str, str | None]:
        """Each job's ``deadline`` option as ``options ->> 'deadline'`` reads it (text; a JSON null is None)."""
        found: dict[str, str | None] = {}
        for job_id in dict.fromkeys(_uuid(j) for j in job_ids):
            job = self._jobs.jobs.get(job_id)
            if job is not None:
                value = job.options.get("deadline")
                found[job_id] = value if value is None or isinstance(value, str) else json.dumps(value)
        return found

    def members_to_purge(self, *, job_ids: list[str] | None = None, limit: int = 200) -> list[PurgeTarget]:
        """Members of closed lanes not yet purged: those of ``job_ids``, or (None) those whose job's file was deleted."""
        wanted = None if job_ids is None else {_uuid(j) for j in job_ids}
        found: set[PurgeTarget] = set()
        for m in self._rows.members:
            lane, job = self._rows.rows.get(m.lane_row_id), self._jobs.jobs.get(m.job_id)
            file_row = self._jobs.files.get(job.file_id) if job is not None else None
            if lane is None or file_row is None or lane.state != LaneState.CLOSED or m.purged_at is not None:
                continue
            if (file_row.deleted_at is not None) if wanted is None else (m.job_id in wanted):
                found.add(PurgeTarget(m.lane_row_id, lane.lane_id, m.job_id, m.member_tag))
        return sorted(found, key=lambda t: (t.lane_row_id, t.member_tag, t.job_id))[: max(limit, 0)]


def _present(*values: datetime | None) -> Iterable[datetime]:
    return (v for v in values if v is not None)
