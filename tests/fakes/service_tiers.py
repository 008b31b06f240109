"""batchlane.ports.ServiceTierRepository in memory: the contract of db/service_tiers.py's Pg adapter (tests/contract)."""

from __future__ import annotations

from typing import Any

from batchlane.domain import service_tier as tiers
from fakes.pool import lane_rows


class FakeServiceTiers:
    def __init__(self, state: Any) -> None:  # a fakes.FakeState
        self.state = state

    @property
    def _probes(self) -> dict[tuple[str, str], bool]:
        probes: dict[tuple[str, str], bool] = self.state.part("service_tiers", dict)
        return probes

    def probed(self, model_id: str, tier: str = tiers.FLEX) -> bool | None:
        return self._probes.get((model_id, tier))

    def record_probe(self, model_id: str, tier: str, *, accepted: bool, detail: str) -> None:
        if tier not in tiers.TIERS:
            raise ValueError(f"service_tiers refuses tier {tier!r}")  # the table's CHECK
        self._probes[(model_id, tier)] = accepted

    def job_lane_reason(self, job_id: str) -> str | None:
        return lane_rows(self.state).lane_reason.get(job_id)  # large_conversion_jobs.lane_reason, kept with the pool's columns
