"""What the API shows of files, jobs, lanes and holds (ports.reads.ReadModel)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal


@dataclass(frozen=True)
class JobLanes:
    """A job's lanes summed: the busiest state (preparing, submitted, stopping, else closed; closed with end state
    ``skipped`` when the pool let the job go without a lane), the newest lane's end, its members' records."""

    state: str
    end_state: str | None
    bedrock_status: str | None
    reason: str | None  # the newest lane's, else why the job left the pool
    record_count: int | None
    accepted_count: int | None
    fallback_count: int | None
    cost_usd: Decimal | None  # the job's batch-backend ledger rows
    submitted_at: datetime | None
    closed_at: datetime | None
    lanes: int


@dataclass(frozen=True)
class HoldView:
    """A job's funds hold as the API shows it."""

    amount_usd: Decimal
    outcome: str | None
    settled_usd: Decimal | None
    expires_at: datetime


@dataclass(frozen=True)
class JobProgress:
    """A job with its progress (its chunks summed), its lanes and its funds hold: what the API shows of a conversion."""

    job_id: str
    file_id: str
    owner_id: str
    status: str
    model_id: str
    total_pages: int
    chunk_count: int
    pages_failed: int
    pages_batch: int
    total_cost_usd: Decimal
    error_id: str | None
    error_message: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    retry_attempt: int | None
    retry_pages: tuple[int, ...] | None
    chunks_done: int
    chunks_cancelled: int
    pages_done: int  # pages of completed chunks, and the pages done so far of the others
    lanes: JobLanes | None  # None: never in a lane, nor let go by the pool
    hold: HoldView | None


@dataclass(frozen=True)
class OwnerFile:
    """One of an owner's files (not deleted) with its current job: the live one, else the newest."""

    file_id: str
    name: str
    size_bytes: int
    status: str
    created_at: datetime
    updated_at: datetime
    folder_job_id: str | None  # the folder job that opened it, if one did
    job: JobProgress | None


@dataclass(frozen=True)
class FileJob:
    """One job of a file and the state of a lane still open that carries it (None: none is)."""

    job_id: str
    open_lane_state: str | None


@dataclass(frozen=True)
class ModelSpend:
    """A job's booked cost and tokens for one model (every ledger row of the job)."""

    model_id: str
    cost_usd: Decimal
    input_tokens: int
    output_tokens: int
