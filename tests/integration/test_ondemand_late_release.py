"""A late lease release never frees a slot another worker took after the lease expired (issue 23.10 b), real PostgreSQL.

Expiry is set in the table, never waited for.
"""

from __future__ import annotations

import time

from batchlane.db import connect_params_from_url
from batchlane.db.limiter import PgLimiter, SerialDatabase
from batchlane.domain.pace import LimitSettings

LIMITS = LimitSettings(concurrency=1, rpm=0, lease_ttl_s=60, lease_wait_s=60)


def test_a_late_release_keeps_the_slot_of_the_worker_that_took_it_over(migrated_url):
    store = SerialDatabase(connect_params_from_url(migrated_url))
    limiter = PgLimiter(store, LIMITS)
    pool = f"late-{time.monotonic_ns()}"
    # Given worker A's lease on the only slot expired, and worker B took the slot over
    late = limiter._try(pool, "worker-a")
    assert late is not None
    store.scalar("UPDATE ondemand_leases SET expires_at = clock_timestamp() - interval '1 second' WHERE pool = :p RETURNING slot", p=pool)
    assert limiter._try(pool, "worker-b") is not None
    # When A releases its lease late
    late.release()
    # Then B still holds the slot: a third worker is refused
    assert limiter._try(pool, "worker-c") is None
