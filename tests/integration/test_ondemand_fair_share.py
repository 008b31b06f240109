"""The on-demand slots shared fairly by owner (issue 15, "One user can starve the others"), real PostgreSQL.

Order of service is asserted, never time: who gets the next free slot.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from batchlane.db import connect_params_from_url
from batchlane.db.limiter import PgLimiter, SerialDatabase
from batchlane.domain.pace import LimitSettings
from batchlane_dev.local.jobs import wait_until

LIMITS = LimitSettings(concurrency=2, rpm=0, lease_ttl_s=60, lease_wait_s=60)


def limiters(url: str) -> tuple[SerialDatabase, PgLimiter, PgLimiter]:
    store = SerialDatabase(connect_params_from_url(url))
    return store, PgLimiter(store, LIMITS, owner="user-a"), PgLimiter(store, LIMITS, owner="user-b")


def test_a_freed_slot_goes_to_the_waiting_owner_below_their_share(migrated_url):
    _, a, b = limiters(migrated_url)
    pool = f"fair-{time.monotonic_ns()}"
    # Given user A holds both slots, and user B's request waits
    held = [a._try(pool, f"a{i}") for i in range(2)]
    assert all(held)
    assert b._try(pool, "b0") is None
    # When A gives one back, A's next request is refused: B is below its share and waiting
    held[0].release()
    assert a._try(pool, "a2") is None
    # Then B gets the slot
    assert b._try(pool, "b0") is not None
    # And with nobody else waiting A may use every free slot again
    held[1].release()
    assert a._try(pool, "a3") is not None


def test_one_owners_many_waiting_requests_do_not_delay_anothers_one(migrated_url):
    store, a, b = limiters(migrated_url)
    pool = f"fair-{time.monotonic_ns()}"
    # Given A holds both slots and four more of A's requests wait, then one of B's
    held = [a._try(pool, f"a-held-{i}") for i in range(2)]
    order: list[str] = []
    leases: list[Any] = []

    def request(limiter: PgLimiter, name: str) -> None:
        with limiter.slot(pool, aborted=lambda: False) as lease:
            order.append(name)
            leases.append(lease)
            done.wait(60)

    done = threading.Event()
    waiters = [threading.Thread(target=request, args=(a, f"a{i}")) for i in range(4)]
    for thread in waiters:
        thread.start()
    wait_until(lambda: store.scalar("SELECT count(*) FROM ondemand_waiters WHERE pool = :p AND owner_id = 'user-a'", p=pool) >= 1, what="A waiting")
    b_thread = threading.Thread(target=request, args=(b, "b"))
    b_thread.start()
    wait_until(lambda: store.scalar("SELECT count(*) FROM ondemand_waiters WHERE pool = :p AND owner_id = 'user-b'", p=pool) == 1, what="B waiting")
    # When one of A's slots frees
    held[0].release()
    # Then B's request is served first, ahead of A's four
    wait_until(lambda: order, what="the next request served")
    assert order == ["b"], order
    done.set()
    held[1].release()
    for thread in [*waiters, b_thread]:
        thread.join(60)
    assert sorted(order) == ["a0", "a1", "a2", "a3", "b"]
