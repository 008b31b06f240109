"""The offline API serves requests queued for its one execution environment in arrival order (issue 21)."""

from __future__ import annotations

import threading

from batchlane_dev.local.api_server import ArrivalOrderLock
from batchlane_dev.local.jobs import wait_until


def test_callers_queued_behind_the_holder_get_the_lock_in_the_order_they_asked() -> None:
    lock = ArrivalOrderLock()
    served: list[int] = []
    release = threading.Event()

    def hold() -> None:
        with lock:
            release.wait(timeout=30)

    def ask(n: int) -> None:
        with lock:
            served.append(n)

    def queued(n: int) -> bool:
        return lock.waiting == n

    holder = threading.Thread(target=hold)
    holder.start()
    wait_until(lambda: queued(1), timeout_s=10, what="the holder")
    callers = []
    for n in range(8):  # each one queued before the next asks: the order they asked in is known
        caller = threading.Thread(target=ask, args=(n,))
        caller.start()
        callers.append(caller)
        wait_until(lambda: queued(n + 2), timeout_s=10, what=f"caller {n} queued")
    release.set()
    for thread in [holder, *callers]:
        thread.join(timeout=10)
    assert served == list(range(8))
    assert lock.waiting == 0
