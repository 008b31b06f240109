"""The batch lanes (the table lanes: one row per Bedrock job), their members and the pool they are packed from, as stored (ports.lanes.LaneRepository)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from decimal import Decimal
from typing import Any


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
