"""batchlane.ports.EstimateRepository in memory: the contract of db/estimates.py's Pg adapter (tests/contract)."""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from batchlane.domain.status import Entity, EstimateStatus, Transition
from batchlane.ports import UniqueViolation
from batchlane.rows import Estimate


@dataclass
class _EstimateRows:
    rows: dict[str, Estimate] = field(default_factory=dict)


class FakeEstimates:
    def __init__(self, state: Any) -> None:  # a batchlane_dev.fakes.FakeState
        self.state = state

    @property
    def _rows(self) -> dict[str, Estimate]:
        rows: _EstimateRows = self.state.part("estimates", _EstimateRows)
        return rows.rows

    def add(self, *, estimate_id: str, owner_id: str, kind: str, request: dict[str, Any]) -> Estimate:
        key = str(uuid.UUID(estimate_id))  # the uuid column's canonical form (a bad id raises, as the cast does)
        if key in self._rows:
            raise UniqueViolation("estimates_pkey")
        if kind not in ("file", "folder"):
            raise ValueError(f"kind {kind!r} breaks estimates_kind_check")
        row = Estimate(key, owner_id, kind, EstimateStatus.RUNNING, copy.deepcopy(request), {}, None, None, None, self.state.clock.now(), None, 0.0)
        self._rows[key] = row
        return row

    def get(self, estimate_id: str) -> Estimate | None:
        row = self._rows.get(str(uuid.UUID(estimate_id)))
        return replace(row, age_s=(self.state.clock.now() - row.created_at).total_seconds()) if row is not None else None

    def running(self, owner_id: str, *, younger_than_s: float) -> int:
        since = self.state.clock.now() - timedelta(seconds=younger_than_s)
        return sum(1 for r in self._rows.values() if r.owner_id == owner_id and r.status == EstimateStatus.RUNNING and r.created_at > since)

    def report(self, estimate_id: str, progress: dict[str, Any]) -> bool:
        row = self.get(estimate_id)
        if row is None or row.status != EstimateStatus.RUNNING:
            return False
        self._rows[row.id] = replace(row, progress=copy.deepcopy(progress))
        return True

    def finish(
        self, estimate_id: str, move: Transition, *, result: dict[str, Any] | None = None, error_id: str | None = None, error_message: str | None = None
    ) -> bool:
        if move.entity is not Entity.ESTIMATE:
            raise ValueError(f"{move.entity}.{move.name} is not a transition of an estimate")
        row = self.get(estimate_id)
        if row is None or not move.allows(row.status):
            return False
        self._rows[row.id] = replace(
            row, status=move.target, result=copy.deepcopy(result), error_id=error_id, error_message=error_message, finished_at=self.state.clock.now()
        )
        return True

    def purge(self, owner_id: str, *, older_than_s: float) -> int:
        before = self.state.clock.now() - timedelta(seconds=older_than_s)
        gone = [k for k, r in self._rows.items() if r.owner_id == owner_id and r.created_at < before]
        for key in gone:
            del self._rows[key]
        return len(gone)
