"""The on-demand limit's arithmetic: its settings, the pace's free starts (GCRA), how far ahead an owner books, and
when an owner leaves the burst to others. The PostgreSQL limiter that applies them: db/limiter.py (docs/ondemand.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

# How far ahead of need an owner books its starts when the pace is shared by owner: the margin its
# next request has to ask in time (a loaded host's wake-ups, the one limiter connection's queue).
PACE_LEAD_S = 0.5
# How long an owner's service is remembered when the pace is shared (0035_ondemand_pace_least_served.sql):
# its starts decay with a time constant of this many of the pool's intervals (10.5 s at 570 requests a
# minute). Long enough that an owner which has been asking for a few seconds counts as busy; short
# enough that a job finished half a minute ago does not count against the owner's next one.
SERVICE_MEMORY_INTERVALS = 100
# The burst kept for owners with little recent service (0036_ondemand_pace_burst_reserve.sql): an owner whose
# remembered service has reached this many bursts (burst + 1 starts each) begins each start a whole burst of
# intervals after its slot, so a newcomer's first requests start at once as they would alone. A 20-page job
# never gets there (40 at the default burst of 9); a flood does, and pays the burst's intervals once.
BUSY_AFTER_BURSTS = 4


def pace_busy_after(burst: int) -> int:
    """Remembered starts after which an owner leaves the pace's burst to the others (0036)."""
    return BUSY_AFTER_BURSTS * (burst + 1)


@dataclass(frozen=True)
class LimitSettings:
    concurrency: int  # 0 = no concurrency limit
    rpm: float  # 0 = no pacing
    burst: int = 0  # requests that may start ahead of the pace after an idle spell
    lease_ttl_s: float = 600.0
    lease_wait_s: float = 300.0

    @classmethod
    def from_settings(cls, settings: Any) -> LimitSettings:
        return cls(
            concurrency=int(settings.batchlane_global_concurrency),
            rpm=float(settings.batchlane_ondemand_rpm),
            burst=int(settings.batchlane_ondemand_burst),
            lease_ttl_s=float(settings.batchlane_lease_ttl_s),
            lease_wait_s=float(settings.batchlane_lease_wait_s),
        )

    @property
    def active(self) -> bool:
        return bool(self.concurrency or self.rpm)


class NoLease:
    def renew(self) -> None:
        return None


class NoLimit:
    """No global limit (both settings 0): the per-chunk pool is the only bound."""

    @contextmanager
    def slot(self, pool: str, *, aborted: Callable[[], bool]) -> Iterator[NoLease]:
        yield NoLease()

    def pace(self, pool: str, *, aborted: Callable[[], bool] = lambda: False) -> float:
        return 0.0

    def free_now(self, pool: str) -> int | None:
        return None


def pace_ahead(interval_s: float) -> int:
    """Starts one owner may book ahead (0031_ondemand_fair_pace.sql): enough for PACE_LEAD_S of lead,
    so an owner alone never leaves the pace idle while its next request asks, and at least 2."""
    return max(2, math.ceil(PACE_LEAD_S / interval_s))


def pace_starts_free(behind_s: float | None, interval_s: float, burst: int) -> int:
    """Starts the pace allows at once, ``behind_s`` seconds after the schedule's next start
    (None: never used). GCRA: one per interval that passed, up to burst + 1 after an idle spell."""
    if behind_s is None or behind_s >= interval_s * burst:
        return burst + 1
    return 0 if behind_s < 0 else min(burst + 1, math.floor(behind_s / interval_s) + 1)
