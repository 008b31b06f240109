"""batchlane.ports.LedgerRepository in memory: the contract of db/ledger.py's Pg adapter (tests/contract)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import timedelta
from decimal import Decimal
from typing import Any

from batchlane.domain.status import JobStatus
from batchlane.rows import Hold, LedgerRow
from fakes.jobs import FakeJobs

_CENTS = Decimal("0.000001")  # numeric(14, 6)


def _job_id(job_id: object) -> None:
    """The port takes a job's id (a str): None would read as "no rows" and hide a caller's bug."""
    if not isinstance(job_id, str):
        raise TypeError(f"a job id is a str, not {job_id!r}")


@dataclass
class MoneyRows:
    """The money side: ledger rows in insertion order (ids ascending) and holds by job, shared with the fake budgets."""

    ledger: list[LedgerRow] = field(default_factory=list)
    holds: dict[str, Hold] = field(default_factory=dict)

    def next_id(self) -> int:
        return len(self.ledger) + 1

    def spent(self, job_id: str, *, backend: str | None = None) -> Decimal:
        return sum((r.cost_usd for r in self.ledger if r.job_id == job_id and (backend is None or r.backend == backend)), Decimal(0))


def money(state: Any) -> MoneyRows:
    rows: MoneyRows = state.part("money", MoneyRows)
    return rows


class FakeLedger:
    def __init__(self, state: Any) -> None:  # a fakes.FakeState
        self.state = state

    @property
    def _rows(self) -> MoneyRows:
        return money(self.state)

    def _add(
        self,
        source: str,
        *,
        job_id: str | None,
        backend: str,
        model_id: str,
        usage: tuple[int, int],
        cost_usd: Decimal,
        metadata: dict[str, Any],
        chunk_index: int | None = None,
        lane_row_id: int | None = None,
    ) -> LedgerRow:
        if job_id is None and source != "batch":
            raise ValueError("only a lane's lane has no job")  # cost_ledger_job_unless_batch
        row = LedgerRow(
            id=self._rows.next_id(),
            job_id=str(uuid.UUID(job_id)) if job_id is not None else None,
            chunk_index=chunk_index,
            lane_row_id=lane_row_id,
            source=source,
            backend=backend,
            model_id=model_id,
            input_tokens=usage[0],
            output_tokens=usage[1],
            cost_usd=Decimal(cost_usd).quantize(_CENTS),
            metadata=dict(metadata),
            created_at=self.state.clock.now(),
        )
        self._rows.ledger.append(row)
        return row

    def add_chunk_cost(
        self, *, job_id: str, chunk_index: int, model_id: str, input_tokens: int, output_tokens: int, cost_usd: Decimal, metadata: dict[str, Any]
    ) -> None:
        self._add(
            "chunk", job_id=job_id, chunk_index=chunk_index, backend="on_demand", model_id=model_id, usage=(input_tokens, output_tokens),
            cost_usd=cost_usd, metadata=metadata,
        )  # fmt: skip

    def add_batch_cost(
        self, *, job_id: str | None, lane_row_id: int, model_id: str, input_tokens: int, output_tokens: int, cost_usd: Decimal, metadata: dict[str, Any]
    ) -> bool:
        if any(r.source == "batch" and r.lane_row_id == lane_row_id for r in self._rows.ledger):
            return False  # one_ledger_row_per_lane
        self._add(
            "batch", job_id=job_id, lane_row_id=lane_row_id, backend="batch", model_id=model_id, usage=(input_tokens, output_tokens),
            cost_usd=cost_usd, metadata=metadata,
        )  # fmt: skip
        return True

    def add_batch_share(
        self, *, job_id: str, lane_row_id: int, model_id: str, input_tokens: int, output_tokens: int, cost_usd: Decimal, metadata: dict[str, Any]
    ) -> None:
        key = str(uuid.UUID(job_id))
        if any(r.source == "batch_share" and r.lane_row_id == lane_row_id and r.job_id == key for r in self._rows.ledger):
            return  # one_share_per_member
        self._add(
            "batch_share", job_id=key, lane_row_id=lane_row_id, backend="batch", model_id=model_id, usage=(input_tokens, output_tokens),
            cost_usd=cost_usd, metadata=metadata,
        )  # fmt: skip
        hold = self._rows.holds.get(key)
        if hold is not None:  # spent from the job's hold like an on-demand request
            self._rows.holds[key] = replace(hold, committed_usd=hold.committed_usd + Decimal(cost_usd).quantize(_CENTS))

    def batch_cost_of_job(self, job_id: str) -> Decimal:
        _job_id(job_id)
        return self._rows.spent(job_id, backend="batch")

    def job_total(self, job_id: str) -> Decimal:
        _job_id(job_id)
        return self._rows.spent(job_id)

    def ledger_rows(self, job_id: str) -> list[LedgerRow]:
        return [r for r in self._rows.ledger if r.job_id == job_id]

    def carry_late_batch_cost(self, job_id: str) -> None:
        jobs, now = FakeJobs(self.state), self.state.clock.now()
        job = jobs.get_job(job_id)
        if job is not None and job.status in (JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED):
            job = jobs.put_job(replace(job, total_cost_usd=self._rows.spent(job_id), updated_at=now))
        hold = self._rows.holds.get(job_id)
        if hold is not None and hold.outcome in ("settled", "cancelled"):
            self._rows.holds[job_id] = replace(hold, settled_usd=self._rows.spent(job_id), updated_at=now)
        if job is not None and job.status != JobStatus.WAITING_BATCH:
            jobs.put_job(replace(job, batch_cost_usd=self._rows.spent(job_id, backend="batch")))

    # -- funds holds -------------------------------------------------------------------------
    def place_hold(self, *, job_id: str, owner_id: str, amount_usd: Decimal, hours: float) -> None:
        if job_id in self._rows.holds:
            return  # one hold per job
        now = self.state.clock.now()
        self._rows.holds[job_id] = Hold(
            id=len(self._rows.holds) + 1, job_id=job_id, owner_id=owner_id, amount_usd=Decimal(amount_usd).quantize(_CENTS),
            expires_at=now + timedelta(hours=hours), outcome=None, settled_usd=None, committed_usd=Decimal(0), wanted_usd=Decimal(0),
            created_at=now, updated_at=now,
        )  # fmt: skip

    def extend_hold(self, job_id: str, *, hours: float) -> None:
        hold, now = self._rows.holds.get(job_id), self.state.clock.now()
        if hold is not None and hold.outcome is None:
            self._rows.holds[job_id] = replace(hold, expires_at=now + timedelta(hours=hours), updated_at=now)

    def reopen_hold(self, job_id: str, *, extra_usd: Decimal, hours: float) -> None:
        hold, now = self._rows.holds.get(job_id), self.state.clock.now()
        if hold is not None:
            settled = hold.settled_usd or Decimal(0)
            self._rows.holds[job_id] = replace(
                hold, outcome=None, amount_usd=settled + Decimal(extra_usd).quantize(_CENTS), committed_usd=settled, settled_usd=None,
                expires_at=now + timedelta(hours=hours), updated_at=now,
            )  # fmt: skip

    def close_hold(self, job_id: str, *, outcome: str, settled_usd: Decimal | None = None) -> bool:
        hold = self._rows.holds.get(job_id)
        if hold is None or hold.outcome is not None:
            return False
        if outcome not in ("settled", "released", "cancelled"):
            raise ValueError(f"no hold outcome {outcome!r}")  # the CHECK
        settled = Decimal(settled_usd).quantize(_CENTS) if settled_usd is not None else None
        self._rows.holds[job_id] = replace(hold, outcome=outcome, settled_usd=settled, updated_at=self.state.clock.now())
        return True

    def get_hold(self, job_id: str) -> Hold | None:
        return self._rows.holds.get(job_id)
