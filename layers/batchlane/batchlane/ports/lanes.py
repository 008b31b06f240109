"""The batch lanes (the table lanes: one row per Bedrock job), their members and the pool they are packed from (db/lanes.py)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, fields
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol

from batchlane.domain.status import Transition


@dataclass(frozen=True)
class Lane:
    """One row of the table `lanes` (0001_init.sql; its name since 0045_lanes_table.sql)."""

    id: int
    lane_id: str
    job_id: str | None  # only on lanes written before the pool (one job per Bedrock job)
    member_count: int
    retry_of: int | None  # a retry batch: the lane whose failed records it sends again
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
            raise ValueError(f"lane {self.lane_id} ({self.state}) has no Bedrock job")
        return self.bedrock_job_arn

    @classmethod
    def of(cls, row: dict[str, Any]) -> Lane:
        values = {f.name: row[f.name] for f in fields(cls)}  # columns added later are not read here
        job_id = str(row["job_id"]) if row["job_id"] is not None else None
        return cls(**{**values, "lane_id": str(row["lane_id"]), "job_id": job_id, "task_tokens": list(row["task_tokens"] or [])})


@dataclass(frozen=True)
class PooledChunk:
    """A chunk waiting in the pool, in the packer's fair order."""

    job_id: str
    model_id: str
    chunk_index: int
    pages: int
    waited_s: float
    source_bytes: int | None = None  # the chunk's source PDF (NULL: split before it was recorded)


@dataclass(frozen=True)
class Member:
    """One batch_members row: a chunk of a job riding in a lane."""

    lane_row_id: int
    job_id: str
    chunk_index: int
    member_tag: str
    pages: int
    records: int | None
    accepted: int | None
    state: str


@dataclass(frozen=True)
class PoolRead:
    """What a packer turn read of the pool: per model, the fair-order prefix of its waiting chunks that fits
    the model's page budget, whether chunks were left behind it, and the fewest pages and estimated bytes
    of ANY waiting chunk of the model (read or not: the packing rule's "nothing would fit any more")."""

    chunks: list[PooledChunk]
    truncated: dict[str, bool]
    smallest: dict[str, int]
    lightest: dict[str, int]


@dataclass(frozen=True)
class LaneOutcome:
    """Where a parked job stands with the lanes: ``settled`` when none still carries it and the pool has
    nothing more for it (every chunk rode, or the pool let it go)."""

    settled: bool
    accepted: int
    lanes: int


@dataclass(frozen=True)
class PurgeTarget:
    """A member of a closed lane whose page content is to be removed (its files are shared with nobody)."""

    lane_row_id: int
    lane_id: str
    job_id: str
    member_tag: str


class LaneRepository(Protocol):
    """The tables lanes (one row per Bedrock job) and batch_members, and the pool they are packed from
    (db/lanes.py; the fake: tests/fakes/lanes.py). Every lane and member move is one of domain.status's."""

    def add_task_token(self, lane_id: str, token: str) -> Lane | None: ...
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
    ) -> Lane | None: ...
    def count_past_deadline(self) -> int: ...
    def get_row(self, lane_id: str) -> Lane | None: ...
    def get_row_by_id(self, row_id: int) -> Lane | None: ...
    def has_packed_members(self, row_id: int) -> bool: ...
    def in_flight_by_base_model(self) -> dict[str, int]: ...
    def in_flight_by_model(self) -> dict[str, int]: ...
    def insert_lane(self, *, lane_id: str, model_id: str, deadline_hours: float, chunks: list[tuple[str, int, int]]) -> Lane: ...
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
    ) -> Lane | None: ...
    def job_deadlines(self, job_ids: list[str]) -> dict[str, str | None]: ...
    def job_lane_outcome(self, job_id: str) -> LaneOutcome: ...
    def lanes_of_job(self, job_id: str) -> list[Lane]: ...
    def leave_lanes(self, job_id: str, *, keep: Collection[int] = ()) -> list[Lane]:
        """The job's packed members leave their lanes (but those of the lanes in ``keep``, by row id); those lanes, locked."""
        ...

    def leave_pool(self, job_ids: list[str], *, reason: str) -> list[str]: ...
    def lock_claims(self) -> None: ...
    def lock_row(self, lane_id: str) -> Lane | None: ...
    def mark_purged(self, target: PurgeTarget) -> None: ...
    def mark_stopping(self, lane_id: str, *, reason: str) -> Lane | None: ...
    def mark_submitted(self, lane_id: str, *, arn: str, name: str, output_uri: str, deadline_hours: float) -> Lane | None: ...
    def member_job_ids(self, row_id: int) -> list[str]: ...
    def members(self, row_id: int, *, state: str | None = None) -> list[Member]: ...
    def members_to_purge(self, *, job_ids: list[str] | None = None, limit: int = 200) -> list[PurgeTarget]: ...
    def note_pooled(self, *, window_s: float) -> None: ...
    def pool_chunks(self) -> list[PooledChunk]: ...
    def preparing_lanes(self) -> list[tuple[str, int]]: ...
    def read_pool(self, *, budgets: dict[str, int] | None = None, default_budget: int | None = None) -> PoolRead: ...
    def record_accepted(self, row_id: int, accepted: dict[tuple[str, int], int]) -> None: ...
    def record_member_records(self, row_id: int, counts: dict[tuple[str, int], int]) -> None: ...
    def record_prepared(self, lane_id: str, *, record_count: int, input_bytes: int, manifest_key: str) -> Lane | None: ...
    def record_status(self, arn: str, status: str) -> Lane | None: ...
    def rows_preparing_since(self, *, older_than_hours: float) -> list[Lane]: ...
    def rows_stopping(self, *, limit: int = 200) -> list[Lane]: ...
    def rows_waiting(self, *, limit: int = 200) -> list[Lane]: ...
    def set_reason(self, lane_id: str, reason: str) -> Lane | None: ...
    def stamp(self, lane_id: str, column: str) -> None: ...
    def stranded_job_ids(self, *, older_than_s: float) -> list[str]: ...
