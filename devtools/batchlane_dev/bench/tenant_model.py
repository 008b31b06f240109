"""`tenant_isolation`'s settings and its model of B's share of the on-demand pace, apart from the
figure itself (:mod:`batchlane_dev.bench.tenants`) so that the model's fast test imports no offline stack."""

from __future__ import annotations

from batchlane.domain.pace import pace_ahead

ENV = {"BATCHLANE_ONDEMAND_RPM": "570", "BATCHLANE_ONDEMAND_BURST": "9", "BATCHLANE_GLOBAL_CONCURRENCY": "48"}


def pace_share_ratio(pages: int, alone_s: float, alone_stages: dict[str, float]) -> float | None:
    """The ratio B would show if its only loss under the flood were its share of the on-demand pace
    (docs/operations.md "Fair share of the on-demand pace"): A, busy, has left the burst (decision 0026), so
    B's first ``burst`` requests start at once as they do alone; as the least-served owner B then books
    ``pace_ahead`` starts to A's one, so the rest are paced at ahead / (ahead + 1) of the model's rate; every
    other stage as fast as alone. A model, not a bound: what the figure shows above it is the rest."""
    if "processing_s" not in alone_stages or alone_s <= 0:
        return None
    rate_per_s = float(ENV["BATCHLANE_ONDEMAND_RPM"]) / 60
    ahead = pace_ahead(1 / rate_per_s)
    paced = max(0, pages - int(ENV["BATCHLANE_ONDEMAND_BURST"]))
    shared = max(alone_stages["processing_s"], paced / (rate_per_s * ahead / (ahead + 1)))
    return round((alone_s - alone_stages["processing_s"] + shared) / alone_s, 2)
