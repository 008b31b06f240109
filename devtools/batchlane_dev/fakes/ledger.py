"""batchlane.ports.LedgerRepository in memory: the contract of db/ledger.py's Pg adapter (tests/contract)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from batchlane.ports import LedgerRow

_CENTS = Decimal("0.000001")  # numeric(14, 6)


@dataclass
class MoneyRows:
    """The money side: ledger rows in insertion order (ids ascending), shared with the fake budgets."""

    ledger: list[LedgerRow] = field(default_factory=list)

    def next_id(self) -> int:
        return len(self.ledger) + 1


def money(state: Any) -> MoneyRows:
    rows: MoneyRows = state.part("money", MoneyRows)
    return rows


class FakeLedger:
    def __init__(self, state: Any) -> None:  # a batchlane_dev.fakes.FakeState
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
        batch_row_id: int | None = None,
    ) -> LedgerRow:
        if job_id is None and source != "batch":
            raise ValueError("only a lane's batch row has no job")  # cost_ledger_job_unless_batch
        row = LedgerRow(
            id=self._rows.next_id(),
            job_id=str(uuid.UUID(job_id)) if job_id is not None else None,
            chunk_index=chunk_index,
            batch_row_id=batch_row_id,
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
        self, *, job_id: str | None, batch_row_id: int, model_id: str, input_tokens: int, output_tokens: int, cost_usd: Decimal, metadata: dict[str, Any]
    ) -> bool:
        if any(r.source == "batch" and r.batch_row_id == batch_row_id for r in self._rows.ledger):
            return False  # one_ledger_row_per_batch_job
        self._add(
            "batch", job_id=job_id, batch_row_id=batch_row_id, backend="batch", model_id=model_id, usage=(input_tokens, output_tokens),
            cost_usd=cost_usd, metadata=metadata,
        )  # fmt: skip
        return True

    def add_batch_share(
        self, *, job_id: str, batch_row_id: int, model_id: str, input_tokens: int, output_tokens: int, cost_usd: Decimal, metadata: dict[str, Any]
    ) -> None:
        key = str(uuid.UUID(job_id))
        if any(r.source == "batch_share" and r.batch_row_id == batch_row_id and r.job_id == key for r in self._rows.ledger):
            return  # one_share_per_member
        self._add(
            "batch_share", job_id=job_id, batch_row_id=batch_row_id, backend="batch", model_id=model_id, usage=(input_tokens, output_tokens),
            cost_usd=cost_usd, metadata=metadata,
        )  # fmt: skip
