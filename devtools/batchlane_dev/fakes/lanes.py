"""batchlane.ports.LaneRepository in memory: the contract of db/batch_rows.py's Pg adapter (tests/contract).

The rows live in one ``_LaneRows`` part of the FakeState: the lanes (conversion_batch_jobs) by row id, their
members (batch_members), and the two pool columns of large_conversion_jobs that JobRow does not carry.
The pool's reads (the fair order, the folder window, what is stranded) are in batchlane_dev.fakes.pool;
this module keeps a lane's own life (packed → prepared → submitted → stopping → closed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from batchlane.ports import BatchRow
from batchlane_dev.fakes.pool import FakePool


@dataclass
class _MemberRow:
    """One batch_members row (0017_batch_pool.sql), mutable as the SQL row is."""

    batch_row_id: int
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
    rows: dict[int, BatchRow] = field(default_factory=dict)  # conversion_batch_jobs by id (BatchRow is frozen: replace() to move)
    members: list[_MemberRow] = field(default_factory=list)
    pooled_at: dict[str, datetime] = field(default_factory=dict)  # large_conversion_jobs.pooled_at by job id
    pool_left_at: dict[str, datetime] = field(default_factory=dict)  # large_conversion_jobs.pool_left_at by job id
    lane_reason: dict[str, str] = field(default_factory=dict)  # large_conversion_jobs.lane_reason (leave_pool sets it)
    next_id: int = 1


def lane_rows(state: Any) -> _LaneRows:
    rows: _LaneRows = state.part("lanes", _LaneRows)
    return rows


class FakeLanes(FakePool):
    def __init__(self, state: Any) -> None:  # a batchlane_dev.fakes.FakeState
        self.state = state

    @property
    def _rows(self) -> _LaneRows:
        return lane_rows(self.state)
