"""The starts free right now, read from the limiter's rows (issue 16): what the planner sizes
a chunk's groups from (docs/ondemand.md, "Group size from the starts free right now")."""

from __future__ import annotations

import time

from batchlane.db import connect_params_from_url
from batchlane.ondemand import LimitSettings, PgLimiter
from batchlane.ondemand.limiter import SerialDatabase


def test_free_starts_follow_the_pace_and_the_free_slots(migrated_url):
    store = SerialDatabase(connect_params_from_url(migrated_url))
    pool = f"free-{time.monotonic_ns()}"
    # One start a minute, a burst of 4: an idle pool lets 5 start at once
    limiter = PgLimiter(store, LimitSettings(concurrency=10, rpm=1, burst=4))
    assert limiter.free_now(pool) == 5
    assert [limiter.pace(pool) for _ in range(3)] == [0.0] * 3
    assert limiter.free_now(pool) == 2  # three taken; the next interval is a minute away
    assert [limiter.pace(pool) for _ in range(2)] == [0.0] * 2
    assert limiter.free_now(pool) == 0  # the pace is busy: full groups
    # Slots bound it too: 9 of 10 held leaves one start, however idle the pace
    other = f"{pool}-slots"
    for _ in range(9):
        limiter._acquire(other, lambda: False)
    assert limiter.free_now(other) == 1
    # Without pacing the quota's room is unknown
    assert PgLimiter(store, LimitSettings(concurrency=10, rpm=0)).free_now(pool) is None
