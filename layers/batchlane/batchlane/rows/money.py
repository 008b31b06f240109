"""What was spent (the ledger), what is held (funds holds) and the owners' budgets, as stored (ports.money)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from decimal import Decimal
from typing import Any


@dataclass(frozen=True)
class LedgerRow:
    """One cost_ledger row (0001_init.sql; a lane's row with no job and the members' shares: 0017_batch_pool.sql)."""

    id: int
    job_id: str | None  # None: a lane's one row per Bedrock job (its members carry batch_share rows)
    chunk_index: int | None
    lane_row_id: int | None
    source: str  # chunk (on-demand requests), batch (a Bedrock job's bill), batch_share (a member's part of it)
    backend: str  # on_demand, batch
    model_id: str
    input_tokens: int
    output_tokens: int
    cost_usd: Decimal
    metadata: dict[str, Any]
    created_at: datetime

    @classmethod
    def of(cls, row: dict[str, Any]) -> LedgerRow:
        values: dict[str, Any] = {f.name: row[f.name] for f in fields(cls)}
        job = row["job_id"]
        return cls(**{**values, "job_id": str(job) if job is not None else None, "metadata": dict(row["metadata"] or {})})


@dataclass(frozen=True)
class Hold:
    """One funds_holds row (0001_init.sql; committed_usd, wanted_usd: 0029_hold_committed.sql): what a job may spend."""

    id: int
    job_id: str
    owner_id: str
    amount_usd: Decimal
    expires_at: datetime
    outcome: str | None  # None: open; settled, released, cancelled
    settled_usd: Decimal | None
    committed_usd: Decimal  # what the hold has given out (reservations and booked batch shares)
    wanted_usd: Decimal  # the worst case of the last request that did not fit (0 once one as large fits)
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: dict[str, Any]) -> Hold:
        values: dict[str, Any] = {f.name: row[f.name] for f in fields(cls)}
        return cls(**{**values, "job_id": str(row["job_id"])})


@dataclass(frozen=True)
class BudgetOverride:
    """One user_budgets row (0012_budgets.sql): an owner's limits where an admin set them (None: the deployment's)."""

    owner_id: str
    usd_per_month: Decimal | None
    max_live_jobs: int | None
    max_live_pages: int | None
    updated_by: str
    updated_at: datetime

    @classmethod
    def of(cls, row: dict[str, Any]) -> BudgetOverride:
        return cls(**{f.name: row[f.name] for f in fields(cls)})


@dataclass(frozen=True)
class JobMoney:
    """A job's money at a glance: its spend so far, its open hold (None: closed or none) and its pages done."""

    job_id: str
    owner_id: str
    status: str
    total_pages: int
    spent_usd: Decimal
    hold_usd: Decimal | None
    pages_done: int  # pages of completed chunks, converted or failed

    @classmethod
    def of(cls, row: dict[str, Any]) -> JobMoney:
        return cls(
            job_id=str(row["job_id"]),
            owner_id=row["owner_id"],
            status=row["status"],
            total_pages=int(row["total_pages"]),
            spent_usd=Decimal(row["spent_usd"]),
            hold_usd=Decimal(row["hold_usd"]) if row["hold_usd"] is not None else None,
            pages_done=int(row["pages_done"]),
        )
