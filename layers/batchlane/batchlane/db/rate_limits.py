"""The API's per-user token buckets (migration 0020): one atomic take per request."""

from __future__ import annotations

from batchlane.db.jobs import Runner


class PgRateLimits:
    """batchlane.ports.RateLimits on PostgreSQL: one call of api_take_tokens (refill and take under the row's lock)."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner

    def take(self, owner_id: str, *, cost: float, rate_per_s: float, burst: float) -> float:
        """Take ``cost`` tokens from the owner's bucket: 0 when admitted, else the seconds to wait."""
        row = self.runner.one(
            "SELECT api_take_tokens(:owner, :cost, :rate, :burst) AS wait_s", owner=owner_id, cost=float(cost), rate=float(rate_per_s), burst=float(burst)
        )
        return float(row["wait_s"]) if row else 0.0
