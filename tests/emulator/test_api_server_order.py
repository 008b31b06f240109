"""The offline API serves requests queued for its one execution environment in arrival order, and at once
when the API runs in worker processes, one environment each (issue 21)."""

from __future__ import annotations

import contextlib
import json
import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

from batchlane_dev.local.api_server import ArrivalOrderLock, LocalApiServer
from batchlane_dev.local.jobs import wait_until
from batchlane_dev.local.lambda_runtime import Invocation


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


class _Unlimited:
    """The registry's admission with no concurrency limit set (lambda_runtime.ConcurrencyLimit's default)."""

    def admitted(self, function: str) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()


class _TwoAtOnce(_Unlimited):
    """A registry whose ``api`` handler answers once two requests are inside it at the same time
    (``together`` false if the second never came in 20 s)."""

    def __init__(self) -> None:
        self.workers: Any = None
        self.both = threading.Event()
        self._count = 0
        self._lock = threading.Lock()

    def invoke(self, function: str, event: Any) -> Invocation:
        with self._lock:
            self._count += 1
            if self._count == 2:
                self.both.set()
        together = self.both.wait(timeout=20)
        return Invocation(result={"statusCode": 200, "body": json.dumps({"together": together})})


class _Answers(_Unlimited):
    workers: Any = None

    def invoke(self, function: str, event: Any) -> Invocation:
        return Invocation(result={"statusCode": 200, "body": "{}"})


def _get(url: str, user: str) -> dict[str, Any]:
    request = urllib.request.Request(f"{url}/api/v1/budget", headers={"Authorization": f"Bearer local:{user}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return dict(json.loads(response.read()))


def test_with_the_api_in_worker_processes_requests_run_at_once_though_the_pool_came_after_the_server() -> None:
    """The stack builds the API server, then hands the registry its worker pool (stack.py): the server
    must see the pool when requests arrive. Before, it decided at construction, saw no pool, and served
    every request in turn: under A's flood B's poll waited behind A's dry runs (docs/benchmarks.md)."""
    registry = _TwoAtOnce()
    server = LocalApiServer(registry)  # type: ignore[arg-type]  # the registry surface the server uses
    registry.workers = SimpleNamespace(functions=frozenset({"api"}))  # as OfflineStack.start does, after the server
    url = server.start()
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            answers = list(pool.map(lambda user: _get(url, user), ["tenant-a", "tenant-b"]))
    finally:
        server.stop()
    assert answers == [{"together": True}, {"together": True}]


def test_with_the_api_in_this_process_requests_wait_their_turn() -> None:
    registry = _Answers()
    server = LocalApiServer(registry)  # type: ignore[arg-type]
    registry.workers = SimpleNamespace(functions=frozenset({"chunk_processor"}))  # the API is not among them
    environment = server._environment()
    environment.__enter__()  # the one environment is taken: a request must wait for it
    url = server.start()
    try:
        answered = threading.Event()

        def ask() -> None:
            _get(url, "tenant-b")
            answered.set()

        caller = threading.Thread(target=ask)
        caller.start()
        wait_until(lambda: server._one_at_a_time.waiting == 2, timeout_s=10, what="the request queued behind the holder")
        assert not answered.is_set()
        environment.__exit__(None, None, None)
        caller.join(timeout=30)
        assert answered.is_set()
    finally:
        server.stop()
