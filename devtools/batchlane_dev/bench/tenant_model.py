"""`tenant_isolation`'s settings and its model of B's share of the on-demand pace, apart from the
figure itself (:mod:`batchlane_dev.bench.tenants`) so that the model's fast test imports no offline stack."""

from __future__ import annotations

from batchlane.ondemand.limiter import pace_ahead

ENV = {"BATCHLANE_ONDEMAND_RPM": "570", "BATCHLANE_ONDEMAND_BURST": "9", "BATCHLANE_GLOBAL_CONCURRENCY": "48"}


def pace_share_ratio(pages: int, alone_s: float, alone_stages: dict[str, float]) -> float | None:
    """The ratio B would show if its only loss under the flood were its share of the on-demand pace
    (docs/operations.md "Fair share of the on-demand pace"): as the least-served owner B books
    ``pace_ahead`` starts to A's one, so its processing is paced at ahead / (ahead + 1) of the model's
    rate with no burst left (A holds it), every other stage as fast as alone. A model, not a bound: what
    the figure shows above it is the rest (on this host, mostly B's split sharing two cores with A's twenty)."""
    if "processing_s" not in alone_stages or alone_s <= 0:
        return None
    rate_per_s = float(ENV["BATCHLANE_ONDEMAND_RPM"]) / 60
    ahead = pace_ahead(1 / rate_per_s)
    shared = max(alone_stages["processing_s"], pages / (rate_per_s * ahead / (ahead + 1)))
    return round((alone_s - alone_stages["processing_s"] + shared) / alone_s, 2)
