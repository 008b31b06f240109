"""The service tiers the doctor found per model (migration 0027): what the chunk processor's Flex rule reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from batchlane.db.jobs import Runner
from batchlane.domain import service_tier as tiers


def record_probe(db: Runner, event: Mapping[str, Any]) -> dict[str, Any]:
    """The migrate function's ``record_service_tier`` action: store the doctor's probe (the last one wins)."""
    model_id, tier = str(event.get("modelId") or ""), str(event.get("serviceTier") or "")
    if not model_id or tier not in tiers.TIERS or not isinstance(event.get("accepted"), bool):
        raise ValueError(f"record_service_tier needs modelId, serviceTier in {tiers.TIERS} and accepted (true|false)")
    PgServiceTiers(db).record_probe(model_id, tier, accepted=event["accepted"], detail=str(event.get("detail") or "batchlane doctor --live"))
    return {"modelId": model_id, "serviceTier": tier, "accepted": event["accepted"], "recorded": True}


class PgServiceTiers:
    """batchlane.ports.ServiceTierRepository on PostgreSQL, bound to one Database or Transaction."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner

    def probed(self, model_id: str, tier: str = tiers.FLEX) -> bool | None:
        """The doctor's answer for ``model_id`` at ``tier``: True accepted, False refused, None never probed."""
        row = self.runner.one("SELECT accepted FROM service_tiers WHERE model_id = :model AND tier = :tier", model=model_id, tier=tier)
        return None if row is None else bool(row["accepted"])

    def record_probe(self, model_id: str, tier: str, *, accepted: bool, detail: str) -> None:
        """The doctor's probe of ``model_id`` at ``tier``: the last one wins."""
        self.runner.run(
            """INSERT INTO service_tiers (model_id, tier, accepted, source, detail) VALUES (:model, :tier, :accepted, 'doctor', :detail)
               ON CONFLICT (model_id, tier) DO UPDATE SET accepted = EXCLUDED.accepted, detail = EXCLUDED.detail, recorded_at = now()""",
            model=model_id,
            tier=tier,
            accepted=accepted,
            detail=detail[:500],
        )

    def job_lane_reason(self, job_id: str) -> str | None:
        """Why the job left the pool or its lane (deadline, pool_too_small, ...), None when it never did."""
        row = self.runner.one("SELECT lane_reason FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=job_id)
        return None if row is None else row["lane_reason"]
