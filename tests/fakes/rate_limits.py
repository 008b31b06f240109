"""batchlane.ports.RateLimits in memory: the contract of db/rate_limits.py's Pg adapter (api_take_tokens, migration 0020)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

NO_RATE_WAIT_S = 3600.0  # api_take_tokens' answer when the bucket never refills


@dataclass(frozen=True)
class _Bucket:
    tokens: float
    refilled_at: datetime


class FakeRateLimits:
    def __init__(self, state: Any) -> None:  # a fakes.FakeState
        self.state = state

    def take(self, owner_id: str, *, cost: float, rate_per_s: float, burst: float) -> float:
        buckets: dict[str, _Bucket] = self.state.part("rate_limits", dict)
        now = self.state.clock.now()
        bucket = buckets.setdefault(owner_id, _Bucket(burst, now))  # a new bucket starts full
        have = min(burst, bucket.tokens + max(0.0, (now - bucket.refilled_at).total_seconds()) * rate_per_s)
        if have >= cost:
            buckets[owner_id] = _Bucket(have - cost, now)
            return 0.0
        buckets[owner_id] = _Bucket(have, now)  # refilled, nothing taken
        return (cost - have) / rate_per_s if rate_per_s > 0 else NO_RATE_WAIT_S
