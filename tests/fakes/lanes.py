"""batchlane.ports.LaneRepository in memory: the contract of db/lanes.py's Pg adapter (tests/contract).

The rows live in one ``_LaneRows`` part of the FakeState (fakes/pool.py, with the pool's reads): the lanes (table lanes) by row id, their
members (batch_members), and the two pool columns of large_conversion_jobs that JobRow does not carry.
The pool's reads (the fair order, the folder window, what is stranded) are in fakes.pool;
this module keeps a lane's own life (packed → prepared → submitted → stopping → closed).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from batchlane.domain import status as st
from batchlane.domain.status import BatchMemberState, LaneState, Transition
from batchlane.rows import Lane, Member, PurgeTarget
from fakes.pool import FakePool, _MemberRow, _uuid

_MICRO = Decimal("0.000001")  # cost_usd numeric(14, 6)
_STAMPS = ("prepare_started_at", "collect_started_at", "resumed_at")


class FakeLanes(FakePool):
    def __init__(self, state: Any) -> None:  # a fakes.FakeState
        self.state = state

    # -- reading a lane --------------------------------------------------------------------------
    def get_row(self, lane_id: str) -> Lane | None:
        lane_id = _uuid(lane_id)
        return next((row for row in self._rows.rows.values() if row.lane_id == lane_id), None)

    def get_row_by_id(self, row_id: int) -> Lane | None:
        return self._rows.rows.get(row_id)

    def lock_row(self, lane_id: str) -> Lane | None:
        return self.get_row(lane_id)  # FOR UPDATE: one process, nothing to wait for

    def lanes_of_job(self, job_id: str) -> list[Lane]:
        """Every lane that carried (or carries) a chunk of the job, or that belongs to it (before the pool), by id."""
        job_id = _uuid(job_id)
        ids = {m.lane_row_id for m in self._rows.members if m.job_id == job_id}
        return [row for row_id, row in sorted(self._rows.rows.items()) if row_id in ids or row.job_id == job_id]

    def rows_waiting(self, *, limit: int = 200) -> list[Lane]:
        """Submitted lanes, oldest submit first."""
        return self._where(LaneState.SUBMITTED, order=lambda row: row.submitted_at)[: max(limit, 0)]

    def rows_stopping(self, *, limit: int = 200) -> list[Lane]:
        """Stopping lanes, least recently moved first."""
        return self._where(LaneState.STOPPING, order=lambda row: row.updated_at)[: max(limit, 0)]

    def rows_preparing_since(self, *, older_than_hours: float) -> list[Lane]:
        cutoff = self._now() - timedelta(seconds=older_than_hours * 3600)
        return [row for row in self._where(LaneState.PREPARING, order=lambda row: row.created_at) if row.created_at < cutoff]

    def count_past_deadline(self) -> int:
        now = self._now()
        return sum(1 for row in self._rows.rows.values() if row.state != LaneState.CLOSED and row.deadline is not None and row.deadline < now)

    def _where(self, state: str, *, order: Any) -> list[Lane]:
        """Lanes in ``state`` by ``order`` (a NULL last, as ORDER BY puts it), ties by id."""
        found = [row for row in self._rows.rows.values() if row.state == state]
        return sorted(found, key=lambda row: (order(row) is None, order(row) or datetime.min, row.id))

    # -- its members -------------------------------------------------------------------------------
    def members(self, row_id: int, *, state: str | None = None) -> list[Member]:
        found = [m for m in self._rows.members if m.lane_row_id == row_id and (state is None or m.state == state)]
        return [
            Member(m.lane_row_id, m.job_id, m.chunk_index, m.member_tag, m.pages, m.records, m.accepted, m.state)
            for m in sorted(found, key=lambda m: (m.member_tag, m.chunk_index))
        ]

    def member_job_ids(self, row_id: int) -> list[str]:
        """The jobs a lane carries, in tag order (m2 before m10)."""
        tags: dict[str, str] = {}
        for m in self._rows.members:
            if m.lane_row_id == row_id:
                tags[m.job_id] = min(tags.get(m.job_id, m.member_tag), m.member_tag)
        return sorted(tags, key=lambda job_id: (len(tags[job_id]), tags[job_id]))

    def has_packed_members(self, row_id: int) -> bool:
        if not isinstance(row_id, int):
            raise TypeError(f"a lane's row id is an int, not {row_id!r}")  # the column is bigint: nothing else matches
        return any(m.lane_row_id == row_id and m.state == BatchMemberState.PACKED for m in self._rows.members)

    def record_member_records(self, row_id: int, counts: dict[tuple[str, int], int]) -> None:
        """What prepare wrote per member chunk (whatever the member's state)."""
        self._set_per_chunk(row_id, counts, "records", state=None)

    def record_accepted(self, row_id: int, accepted: dict[tuple[str, int], int]) -> None:
        """What came back usable per member chunk: only a collected member's count is written."""
        self._set_per_chunk(row_id, accepted, "accepted", state=BatchMemberState.COLLECTED)

    def _set_per_chunk(self, row_id: int, values: dict[tuple[str, int], int], column: str, *, state: str | None) -> None:
        wanted = {(_uuid(job_id), chunk): n for (job_id, chunk), n in values.items()}
        for m in self._rows.members:
            key = (m.job_id, m.chunk_index)
            if m.lane_row_id == row_id and key in wanted and (state is None or m.state == state):
                setattr(m, column, wanted[key])

    def mark_purged(self, target: PurgeTarget) -> None:
        """Every chunk of the member's job in that lane, once (the first purge's time stays)."""
        job_id, now = _uuid(target.job_id), self._now()
        for m in self._rows.members:
            if m.lane_row_id == target.lane_row_id and m.job_id == job_id and m.purged_at is None:
                m.purged_at = now

    def leave_lanes(self, job_id: str, *, keep: Collection[int] = ()) -> list[Lane]:
        """The job's packed members leave their lanes (not those of the lanes in ``keep``); those lanes, by id."""
        ids = set(self._move_members(st.leave_lane(), job_id=_uuid(job_id), keep=keep))
        return [self._rows.rows[row_id] for row_id in sorted(ids) if row_id in self._rows.rows]

    def _move_members(self, move: Transition, *, row_id: int | None = None, job_id: str | None = None, keep: Collection[int] = ()) -> list[int]:
        """A lane's members, or a job's, along ``move`` (collected ones start at 0 accepted); the lane of each one moved."""
        touched = []
        for m in self._rows.members:
            if m.lane_row_id in keep:
                continue
            if (row_id is None or m.lane_row_id == row_id) and (job_id is None or m.job_id == job_id) and move.allows(m.state):
                m.state = move.target
                m.accepted = 0 if move.target == BatchMemberState.COLLECTED else m.accepted
                touched.append(m.lane_row_id)
        return touched

    # -- a lane's life -----------------------------------------------------------------------------
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
        """A retry batch, already prepared, carrying ``members`` — (job, chunk, tag, records) —; None if the lane exists
        (ON CONFLICT DO NOTHING). Refused, nothing written, where PostgreSQL's constraints refuse the INSERTs."""
        if self.get_row(lane_id) is not None:
            return None
        if retry_of not in self._rows.rows:
            raise ValueError(f"no lane {retry_of} to retry")  # retry_of's foreign key
        keys = [(_uuid(job_id), chunk) for job_id, chunk, _, _ in members]
        missing = sorted({job_id for job_id, _ in keys} - set(self._jobs.jobs))
        if missing:
            raise ValueError(f"no job {missing[0]}")  # batch_members' foreign key
        if len(set(keys)) < len(keys):
            raise ValueError("a chunk twice in one lane")  # batch_members' primary key
        if {(m.job_id, m.chunk_index) for m in self._rows.members if m.state == BatchMemberState.PACKED} & set(keys):
            raise ValueError("a chunk already rides in an open lane")  # one_open_lane_per_chunk
        now = self._now()
        row = self._new_row(
            lane_id=_uuid(lane_id), model_id=model_id, member_count=len({job_id for job_id, _ in keys}), retry_of=retry_of,
            deadline=now + timedelta(seconds=deadline_hours * 3600), record_count=sum(m[3] for m in members), input_bytes=input_bytes,
            manifest_key=manifest_key, prepared_at=now,
        )  # fmt: skip
        for (job_id, chunk), (_, _, tag, n) in zip(keys, members, strict=True):
            self._rows.members.append(_MemberRow(row.id, job_id, chunk, tag, n, records=n))
        return row

    def _new_row(self, **columns: Any) -> Lane:
        """A preparing lane as INSERT writes it: the defaults, then ``columns``."""
        now = self._now()
        defaults: dict[str, Any] = {
            "id": self._rows.next_id, "job_id": None, "member_count": 1, "retry_of": None, "state": LaneState.PREPARING.value,
            "end_state": None, "reason": None, "bedrock_job_arn": None, "bedrock_job_name": None, "bedrock_status": None, "task_tokens": [],
            "record_count": None, "input_bytes": None, "accepted_count": None, "fallback_count": None, "manifest_key": None, "output_uri": None,
            "deadline": None, "attempts": 0, "collect_attempts": 0, "cost_usd": None, "created_at": now, "prepare_started_at": None,
            "prepared_at": None, "submitted_at": None, "terminal_seen_at": None, "collect_started_at": None, "closed_at": None,
            "resumed_at": None, "updated_at": now,
        }  # fmt: skip
        row = Lane(**{**defaults, **columns})
        self._rows.next_id += 1
        self._rows.rows[row.id] = row
        return row

    def _update(self, row: Lane, *, touch: bool = True, **columns: Any) -> Lane:
        if touch:
            columns["updated_at"] = self._now()
        moved = replace(row, **columns)
        self._rows.rows[row.id] = moved
        return moved

    def _move(self, lane_id: str, move: Transition, **columns: Any) -> Lane | None:
        """The guarded UPDATE … WHERE state = ANY(move's sources): None when the lane is elsewhere (or absent)."""
        if move.entity is not st.Entity.LANE:
            raise ValueError(f"{move.entity}.{move.name} is not a transition of a lane")
        row = self.get_row(lane_id)
        if row is None or not move.allows(row.state):
            return None
        return self._update(row, state=move.target, **columns)

    def record_prepared(self, lane_id: str, *, record_count: int, input_bytes: int, manifest_key: str) -> Lane | None:
        """Only while preparing."""
        row = self.get_row(lane_id)
        if row is None or row.state != LaneState.PREPARING:
            return None
        return self._update(row, record_count=record_count, input_bytes=input_bytes, manifest_key=manifest_key, prepared_at=self._now())

    def mark_submitted(self, lane_id: str, *, arn: str, name: str, output_uri: str, deadline_hours: float) -> Lane | None:
        """preparing → submitted; the row as it is when it has moved on already (a retried submit adopts)."""
        now, row = self._now(), self.get_row(lane_id)
        moved = self._move(
            lane_id, st.submit(), bedrock_job_arn=arn, bedrock_job_name=name, output_uri=output_uri, submitted_at=now,
            deadline=now + timedelta(seconds=deadline_hours * 3600), attempts=(row.attempts + 1) if row else 0,
        )  # fmt: skip
        return moved or self.get_row(lane_id)

    def add_task_token(self, lane_id: str, token: str) -> Lane | None:
        """A token once (a repeat changes nothing, not even updated_at), whatever the lane's state."""
        row = self.get_row(lane_id)
        if row is None or token in row.task_tokens:
            return row
        return self._update(row, task_tokens=[*row.task_tokens, token])

    def record_status(self, arn: str, status: str) -> Lane | None:
        """The latest Bedrock status of the lane with this ARN; a terminal one is never replaced by a non-terminal
        one, and terminal_seen_at is the first terminal status's time."""
        row = next((r for _, r in sorted(self._rows.rows.items()) if r.bedrock_job_arn == arn), None)
        if row is None:
            return None
        terminal = st.TERMINAL_BEDROCK_STATUSES
        kept = row.bedrock_status in terminal and status not in terminal
        seen = self._now() if row.terminal_seen_at is None and status in terminal else row.terminal_seen_at
        return self._update(row, bedrock_status=row.bedrock_status if kept else status, terminal_seen_at=seen)

    def mark_stopping(self, lane_id: str, *, reason: str) -> Lane | None:
        """submitted → stopping: nothing accepted, every record a fallback, its packed members leave."""
        row = self.get_row(lane_id)
        moved = self._move(
            lane_id, st.stop(), reason=(row.reason if row and row.reason is not None else reason), accepted_count=0,
            fallback_count=row.record_count if row else None,
        )  # fmt: skip
        if moved is not None:
            self._move_members(st.leave_lane(), row_id=moved.id)
        return moved

    def set_reason(self, lane_id: str, reason: str) -> Lane | None:
        """The first reason stays (COALESCE), in any state."""
        if not isinstance(reason, str):
            raise TypeError(f"a lane's reason is a str, not {reason!r}")  # the port's type: a caller with no reason has a bug
        row = self.get_row(lane_id)
        if row is None:
            return None
        return self._update(row, reason=row.reason if row.reason is not None else reason)

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
        """The guarded close along ``move``: one caller wins it; the lane's packed members are collected with 0 accepted."""
        if move.entity is not st.Entity.LANE or move.target != LaneState.CLOSED:
            raise ValueError(f"{move.entity}.{move.name} does not close a lane")
        row = self.get_row(lane_id)
        cost = None if cost_usd is None else Decimal(cost_usd).quantize(_MICRO, rounding=ROUND_HALF_UP)
        closed = self._move(
            lane_id, move, end_state=end_state, reason=row.reason if row and row.reason is not None else reason, accepted_count=accepted,
            fallback_count=fallback, cost_usd=cost, closed_at=self._now(),
        )  # fmt: skip
        if closed is not None:
            self._move_members(st.collect_member(), row_id=closed.id)
        return closed

    def stamp(self, lane_id: str, column: str) -> None:
        """When a step first happened (updated_at is not touched)."""
        if column not in _STAMPS:
            raise ValueError(column)
        row = self.get_row(lane_id)
        if row is not None and getattr(row, column) is None:
            self._update(row, touch=False, **{column: self._now()})
