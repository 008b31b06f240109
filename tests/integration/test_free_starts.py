"""The limiter's rows under real concurrency (issue 16): the starts free right now, what the
planner sizes a chunk's groups from (docs/ondemand.md, "Group size from the starts free right
now"), and slots taken by many Lambdas at once, each with its own connection."""

from __future__ import annotations

import threading
import time

from batchlane.db import Database, connect_params_from_url
from batchlane.db.limiter import PgLimiter, SerialDatabase
from batchlane.domain.pace import LimitSettings


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


def test_lambdas_taking_and_giving_back_slots_at_once_never_deadlock(migrated_url):
    # Given 12 Lambdas, each with its own connection (as on AWS), sharing 8 slots
    pool = f"busy-{time.monotonic_ns()}"
    errors: list[str] = []

    def lambda_(index: int) -> None:
        db = Database(connect_params_from_url(migrated_url))
        try:
            for n in range(150):
                holder = f"lambda{index}/{n}"
                try:
                    slot = db.one("SELECT ondemand_acquire(:p, :h, 8, 60) AS slot", p=pool, h=holder)["slot"]
                    if slot is not None:
                        db.run("DELETE FROM ondemand_leases WHERE pool = :p AND slot = :s AND holder = :h", p=pool, s=slot, h=holder)
                except Exception as exc:  # the first ondemand_acquire: "deadlock detected" (40P01)
                    errors.append(str(exc))
        finally:
            db.close()

    # When they all take and give back slots at once
    threads = [threading.Thread(target=lambda_, args=(i,)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then no statement failed
    assert errors == []
