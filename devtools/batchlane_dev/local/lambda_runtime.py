"""Runs the real handlers in ``functions/<name>/handler.py``: in this process, or in worker processes.

moto's Lambda (without Docker) only echoes payloads; the offline stack routes each
invocation here instead, so the state machines call exactly the code Lambda would run.
In-process (the default) is fast to start and lets tests patch handler code. For the
functions named in :class:`WorkerPool`, each invocation runs in a worker process of its
own instead, as a Lambda execution environment does: one invocation at a time per worker,
warm workers reused, a new one started when none is idle. Their CPU work then no longer
shares this process's GIL with every other Lambda, moto and the Bedrock emulator, so
concurrency figures are honest (docs/benchmarks.md, "Offline Lambdas in worker processes").
"""

from __future__ import annotations

import importlib.util
import json
import logging
import multiprocessing
import os
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from batchlane.runtime import services
from batchlane_dev.local import cpu_shares
from batchlane_dev.local.cpu_shares import OwnerCpuShares
from batchlane_dev.local.iam import acting_as
from deployment import topology
from deployment.topology import handler_path

FUNCTION_PREFIX = "batchlane-"
log = logging.getLogger("batchlane_dev.local.lambda")


@dataclass
class LambdaContext:
    """The attributes Powertools reads from a real Lambda context."""

    function_name: str
    memory_limit_in_mb: int = 512
    aws_request_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    invoked_function_arn: str = ""
    log_group_name: str = "/aws/lambda/offline"
    log_stream_name: str = "offline"
    function_version: str = "$LATEST"
    timeout_s: float = 900.0  # the function's timeout in the topology
    started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        """As Lambda reports it. Offline nothing kills a handler at the timeout; this only
        tells handlers how long they would have."""
        return max(0, int((self.timeout_s - (time.monotonic() - self.started)) * 1000))


@dataclass(frozen=True)
class Invocation:
    result: Any = None
    error_type: str | None = None
    error_message: str | None = None
    pid: int = field(default_factory=os.getpid)  # the process the handler ran in

    @property
    def failed(self) -> bool:
        return self.error_type is not None


class Throttled(Exception):
    """Past the modelled concurrency: Lambda's Invoke answers 429 TooManyRequestsException with this reason."""

    def __init__(self, function: str, reason: str) -> None:
        super().__init__(f"Rate Exceeded. ({reason}: {function})")
        self.reason = reason


@dataclass
class ConcurrencyLimit:
    """Lambda's concurrency model (AWS Lambda guide, "Lambda function scaling"): a function with reserved
    concurrency runs at most that many at once; the others share what the account has left
    (``account`` minus every reservation). None: unlimited, as offline was before (issue 21)."""

    account: int | None = None
    reserved: dict[str, int] = field(default_factory=dict)

    def refusal(self, name: str, running: Mapping[str, int]) -> str | None:
        """Why one more ``name`` may not start now, or None when it may."""
        if name in self.reserved:
            return "ReservedFunctionConcurrentInvocationLimitExceeded" if running.get(name, 0) >= self.reserved[name] else None
        if self.account is None:
            return None
        shared = sum(n for fn, n in running.items() if fn not in self.reserved)
        return "ConcurrentInvocationLimitExceeded" if shared >= self.account - sum(self.reserved.values()) else None


class HandlerRegistry:
    def __init__(self, account_id: str = "123456789012", region: str = "us-east-1", workers: WorkerPool | None = None) -> None:
        self._modules: dict[str, ModuleType] = {}
        self.workers = workers  # functions run in worker processes (None: all in this process)
        self._lock = threading.Lock()
        self.account_id = account_id
        self.region = region
        self.calls: dict[str, int] = {}
        self.concurrency = ConcurrencyLimit()
        self.running: dict[str, int] = {}  # invocations admitted and not yet ended, per function
        self.throttles: dict[str, int] = {}  # invokes answered TooManyRequestsException, per function
        self._interceptors: dict[str, Callable[[Any, Callable[[Any], Invocation]], Invocation]] = {}
        self.cpu_shares: OwnerCpuShares | None = None  # worker invocations in their owner's CPU group (local/cpu_shares.py)
        self._owners: dict[str, str | None] = {}  # job id -> owner, for the CPU groups

    def function_name(self, name: str) -> str:
        return f"{FUNCTION_PREFIX}{name}"

    def arn(self, name: str) -> str:
        return f"arn:aws:lambda:{self.region}:{self.account_id}:function:{self.function_name(name)}"

    def logical_name(self, function_name_or_arn: str) -> str:
        name = function_name_or_arn.split(":function:")[-1].split(":")[0]
        return name.removeprefix(FUNCTION_PREFIX)

    def _module(self, name: str) -> ModuleType:
        with self._lock:
            if name not in self._modules:
                spec = importlib.util.spec_from_file_location(f"batchlane_fn_{name}", handler_path(name))
                assert spec and spec.loader
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                self._modules[name] = module
            return self._modules[name]

    @contextmanager
    def admitted(self, function: str) -> Iterator[None]:
        """One execution slot of ``function`` for the ``with`` body, or :class:`Throttled` at once (the
        Invoke API's answer). Only what goes through Lambda's Invoke is admitted (patches._invoke)."""
        name = self.logical_name(function)
        with self._lock:
            reason = self.concurrency.refusal(name, self.running)
            if reason is not None:
                self.throttles[name] = self.throttles.get(name, 0) + 1
                raise Throttled(name, reason)
            self.running[name] = self.running.get(name, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                self.running[name] -= 1

    def intercept(self, name: str, interceptor: Callable[[Any, Callable[[Any], Invocation]], Invocation] | None) -> None:
        """Test seam: ``interceptor(event, call_real)`` runs instead of the handler (None removes it).

        Fault-injection tests use it to simulate what the emulator cannot: a Lambda that
        crashes after its side effect, a token stored only after the event arrived, ...
        """
        if interceptor is None:
            self._interceptors.pop(name, None)
        else:
            self._interceptors[name] = interceptor

    def has_handler(self, name: str) -> bool:
        return handler_path(name).exists()

    def invoke(self, function: str, event: Any) -> Invocation:
        name = self.logical_name(function)
        self.calls[name] = self.calls.get(name, 0) + 1
        interceptor = self._interceptors.get(name)
        if interceptor is not None:
            return interceptor(event, lambda e: self._dispatch(name, e))
        return self._dispatch(name, event)

    def _dispatch(self, name: str, event: Any) -> Invocation:
        if self.workers is not None and name in self.workers.functions:
            shares = self.cpu_shares
            group = shares.group_for(cpu_shares.owner_of(name, event, self._job_owner)) if shares else None
            return self.workers.run(self.account_id, self.region, name, event, cpu_group=group, cpu_home=shares.home_procs() if shares else None)
        return self._run(name, event)

    def _job_owner(self, job_id: str) -> str | None:
        if job_id not in self._owners:
            job = services().uow().jobs.get_job(job_id)
            self._owners[job_id] = job.owner_id if job is not None else None
        return self._owners[job_id]

    def _run(self, name: str, event: Any) -> Invocation:
        """Runs the handler in the calling process (a worker calls this too: the per-invocation hook point)."""
        try:  # topology.function raises KeyError for a name the topology does not have
            context = LambdaContext(function_name=self.function_name(name), invoked_function_arn=self.arn(name), timeout_s=topology.function(name).timeout_s)
            with acting_as(name):  # its AWS calls are checked against its grants (batchlane_dev.local.iam)
                result = self._module(name).handler(event, context)
            json.dumps(result)  # Lambda would fail to serialise it too
            return Invocation(result=result)
        except Exception as exc:  # a Lambda reports any exception as a function error
            log.debug("handler %s raised %s:\n%s", name, type(exc).__name__, traceback.format_exc())
            return Invocation(error_type=type(exc).__name__, error_message=str(exc))


# -- worker processes --------------------------------------------------------------------
_worker_registries: dict[tuple[str, str], HandlerRegistry] = {}


def _worker_start(env: Mapping[str, str], setup: Collection[Callable[[], None]]) -> None:
    """A fresh worker: the stack's environment (endpoints of moto and the emulator, the
    database URL, the settings), services built from it on first use, then ``setup`` hooks."""
    from batchlane.runtime import reset_services
    from batchlane_dev.local.logs import route_from_environment

    os.environ.clear()  # the fork server's environment is the one of the stack that started it
    os.environ.update(env)
    logging.getLogger("batchlane").setLevel(logging.getLogger().getEffectiveLevel())
    route_from_environment()  # the handlers' log lines to the stack's log file, not the worker's stdout
    reset_services()
    for hook in setup:
        hook()


def _worker_registry(account_id: str, region: str) -> HandlerRegistry:
    return _worker_registries.setdefault((account_id, region), HandlerRegistry(account_id, region))


_worker_group: list[str | None] = [None]  # the CPU group this worker is in now (its ``cgroup.procs``; None: where it started)


def _worker_invoke(account_id: str, region: str, name: str, event: Any, cpu_group: str | None = None, cpu_home: str | None = None) -> Invocation:
    """The invocation in this worker, the worker and its children in the owner's CPU group (home for no owner). A worker
    stays in its last group between invocations (idle, it takes no CPU): moved only when the owner changes, since each
    move waits on the kernel (a cgroup v1 attach: ~15 ms a call, which B's every request paid twice)."""
    target = cpu_group or cpu_home
    if target is not None and target != _worker_group[0]:
        cpu_shares.enter(target)
        _worker_group[0] = target
    return _worker_registry(account_id, region)._run(name, event)


def _worker_warm(account_id: str, region: str, names: Collection[str], ready: Any) -> int:
    """A Lambda's init phase: the handler modules imported and the services built (clients, connection).
    Waits until ``ready`` (a barrier) sees every warming worker, so each runs in a worker of its own."""
    from batchlane.runtime import services

    registry = _worker_registry(account_id, region)
    for name in names:
        registry._module(name)
    services().db.check()
    ready.wait(timeout=60)
    return os.getpid()


class _NoBarrier:
    def wait(self, timeout: float | None = None) -> None:
        return None


class WorkerPool:
    """Worker processes for the invocations of ``functions``, started on demand up to ``max_workers``.

    Workers come from a fork server (a clean interpreter that imported the handlers'
    dependencies once), never from a fork of this multi-threaded process. Each worker
    reaches the stack as a real Lambda would: over loopback HTTP (moto, the emulator) and
    the database URL; ``setup`` (picklable callables) runs once in each new worker.
    """

    PRELOAD = (
        "boto3",
        "pg8000",
        "pypdf",
        "pydantic",
        "aws_lambda_powertools",
        "batchlane.handlers",
        "batchlane.api.app",
        "batchlane.filejob.create",
        "batchlane.filejob.split",
        "batchlane.filejob.chunk",
        "batchlane.filejob.assemble",
        "batchlane.batch.prepare",
        "batchlane.pdf.survey",  # what batchlane.pdf.bounded's children run: the fork server is one per process
        "batchlane.pdf.fit",
        "batchlane_dev.local.lambda_runtime",
    )

    def __init__(self, functions: Collection[str], env: Mapping[str, str], *, max_workers: int = 96, setup: Collection[Callable[[], None]] = ()) -> None:
        self.functions = frozenset(functions)
        self._env = dict(env)
        self._setup = tuple(setup)
        self._max_workers = max_workers
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._context = multiprocessing.get_context("forkserver")

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._context.set_forkserver_preload([m for m in self.PRELOAD if importlib.util.find_spec(m) is not None])
                self._pool = ProcessPoolExecutor(self._max_workers, mp_context=self._context, initializer=_worker_start, initargs=(self._env, self._setup))
            return self._pool

    def warm(self, account_id: str, region: str, count: int) -> list[int]:
        """Start ``count`` workers through their init phase, as provisioned concurrency keeps
        Lambda environments warm: the first invocations then pay no cold start. Their pids."""
        if count < 1:
            return []
        pool = self._executor()
        ready = self._context.Manager().Barrier(count) if count > 1 else _NoBarrier()
        futures = [pool.submit(_worker_warm, account_id, region, sorted(self.functions), ready) for _ in range(count)]
        return [future.result() for future in futures]

    def run(self, account_id: str, region: str, name: str, event: Any, *, cpu_group: str | None = None, cpu_home: str | None = None) -> Invocation:
        pool = self._executor()
        try:
            return pool.submit(_worker_invoke, account_id, region, name, event, cpu_group, cpu_home).result()
        except BrokenProcessPool as exc:  # a worker died mid-invocation: Lambda reports Lambda.Unknown
            with self._lock:
                if self._pool is pool:
                    self._pool = None
            pool.shutdown(wait=False, cancel_futures=True)
            return Invocation(error_type="Unknown", error_message=f"worker process died: {exc}")

    def shutdown(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
