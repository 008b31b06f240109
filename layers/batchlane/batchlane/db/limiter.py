"""The global on-demand limit: leases on numbered slots in PostgreSQL, plus request pacing.

Every chunk Lambda of every job takes a slot before a Converse request (once its start
time on the pace has come: ondemand/governed.py) and gives it back after, so however many
documents run at once, at most ``global_concurrency``
requests per model are in flight. A slot is a lease: it expires ``lease_ttl_s`` after
it was taken (renewed before each retry), so a worker killed mid-request frees its
slot on its own. With ``ondemand_rpm`` set, every attempt also takes a start time from
a shared schedule spaced 60/rpm seconds apart (up to ``ondemand_burst`` may start early
after an idle spell), so the account's requests-per-minute quota is met by pacing
instead of by throttling. Slots are shared fairly by owner (the user whose job the request
serves): an owner at its share of the slots lets a waiting owner below theirs go first
(0013_ondemand_fair_share.sql). So is the pace: the least recently served owner may book a few
start times ahead (``pace_ahead``), any other owner one, so another owner's request starts behind
those, not behind every slot holder's, and a small job beside a flood gets most of the starts
(0031_ondemand_fair_pace.sql, 0035_ondemand_pace_least_served.sql). Why PostgreSQL and not the platform's limits: docs/ondemand.md.

All limiter statements of a process go through ONE connection on one thread: a Lambda
has few page threads, and the offline stack runs every Lambda in one process, where a
connection per page thread would exhaust the server's connections.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

from batchlane.db.budgets import PgBudgets
from batchlane.db.connection import ConnectParams, Database
from batchlane.db.jobs import PgJobs
from batchlane.db.uow import PgUnitOfWork
from batchlane.domain.pace import SERVICE_MEMORY_INTERVALS, LimitSettings, NoLease, NoLimit, pace_ahead, pace_busy_after, pace_starts_free
from batchlane.observability import logger
from batchlane.ports import Aborted, Lease, LeaseWaitTimeout, Limiter, UnitOfWork

T = TypeVar("T")

# A waiting request's place among the waiters lasts this long unless refreshed (it polls every
# 0.5 s at most): a worker that dies while waiting stops holding back the others within seconds.
WAITER_TTL_S = 5.0
PACE_MIN_RETRY_S = 0.005


class SerialDatabase:
    """One connection on one thread for the whole process (see the module docstring)."""

    def __init__(self, params: ConnectParams) -> None:
        self._db = Database(params)
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ondemand-limiter")
        self._gates: dict[str, threading.Lock] = {}
        self._gates_lock = threading.Lock()

    def gate(self, pool: str) -> threading.Lock:
        """One waiter per process and pool polls the database for a slot; the others queue here."""
        with self._gates_lock:
            return self._gates.setdefault(pool, threading.Lock())

    def scalar(self, sql: str, **params: Any) -> Any:
        row = self.one(sql, **params)
        return next(iter(row.values())) if row else None

    def one(self, sql: str, **params: Any) -> dict[str, Any] | None:
        return self._call(lambda: self._db.one(sql, **params))

    def run(self, sql: str, **params: Any) -> list[dict[str, Any]]:
        return self._call(lambda: self._db.run(sql, **params))

    def with_database(self, work: Callable[[Database], Any]) -> Any:
        """``work`` on this connection's thread, with its Database (a transaction of several statements)."""
        return self._call(lambda: work(self._db))

    def _call(self, statement: Callable[[], Any]) -> Any:
        try:
            return self._thread.submit(statement).result()
        except Exception:
            # Database.run drops a dead connection; a terminated backend answers DatabaseError
            # first, so check the connection and try the statement once more.
            self._thread.submit(self._db.check).result()
            return self._thread.submit(statement).result()


class _PgLease:
    def __init__(self, store: SerialDatabase, pool: str, slot: int, holder: str, ttl_s: float) -> None:
        self._store, self._pool, self.slot, self._holder, self._ttl_s = store, pool, slot, holder, ttl_s

    def renew(self) -> None:
        self._store.scalar(
            """UPDATE ondemand_leases SET expires_at = clock_timestamp() + make_interval(secs => :ttl)
               WHERE pool = :pool AND slot = :slot AND holder = :holder RETURNING slot""",
            ttl=self._ttl_s,
            pool=self._pool,
            slot=self.slot,
            holder=self._holder,
        )

    def release(self) -> None:
        self._store.scalar(
            "DELETE FROM ondemand_leases WHERE pool = :pool AND slot = :slot AND holder = :holder RETURNING slot",
            pool=self._pool,
            slot=self.slot,
            holder=self._holder,
        )


class PgLimiter:
    """Leases and pacing in PostgreSQL (migration 0003_ondemand.sql)."""

    def __init__(self, store: SerialDatabase, limits: LimitSettings, *, sleep: Callable[[float], None] = time.sleep, owner: str | None = None) -> None:
        """``owner``: the user whose job the requests serve; with it, slots and start times are shared
        fairly by owner (0013_ondemand_fair_share.sql, 0031_ondemand_fair_pace.sql), without it first
        come, first served."""
        self._store = store
        self.limits = limits
        self._sleep = sleep
        self._owner = owner

    @contextmanager
    def slot(self, pool: str, *, aborted: Callable[[], bool]) -> Iterator[Lease]:
        if not self.limits.concurrency:
            yield NoLease()
            return
        lease = self._acquire(pool, aborted)
        try:
            yield lease
        finally:
            try:
                lease.release()
            except Exception as exc:  # the lease expires by itself; never fail a page for this
                logger.warning("lease not released; it will expire", pool=pool, slot=lease.slot, error=str(exc))

    def _acquire(self, pool: str, aborted: Callable[[], bool]) -> _PgLease:
        holder = f"{threading.current_thread().name}/{uuid.uuid4().hex}"
        deadline = time.monotonic() + self.limits.lease_wait_s
        lease = self._try(pool, holder)
        if lease is not None:
            return lease
        # All slots held: wait in this process's queue (one per owner, so an owner's waiter is never
        # queued behind another owner's), so one thread polls instead of all of them.
        gate = self._store.gate(pool if self._owner is None else f"{pool}\x00{self._owner}")
        while not gate.acquire(timeout=0.5):
            self._refresh_wait(pool, holder)
            self._check_wait(aborted, deadline, pool, holder)
        try:
            wait = 0.05
            while True:
                self._check_wait(aborted, deadline, pool, holder)
                lease = self._try(pool, holder)
                if lease is not None:
                    return lease
                # Polling with jitter: a freed slot goes to whoever asks next, without a thundering herd.
                self._sleep(random.uniform(wait / 2, wait))
                wait = min(wait * 2, 0.5)
        finally:
            gate.release()

    def _try(self, pool: str, holder: str) -> _PgLease | None:
        if self._owner is None:
            slot = self._store.scalar(
                "SELECT ondemand_acquire(:pool, :holder, :limit, :ttl) AS slot",
                pool=pool,
                holder=holder,
                limit=self.limits.concurrency,
                ttl=self.limits.lease_ttl_s,
            )
        else:
            slot = self._store.scalar(
                "SELECT ondemand_acquire_fair(:pool, :holder, :owner, :limit, :ttl, :wait_ttl) AS slot",
                pool=pool,
                holder=holder,
                owner=self._owner,
                limit=self.limits.concurrency,
                ttl=self.limits.lease_ttl_s,
                wait_ttl=WAITER_TTL_S,
            )
        return None if slot is None else _PgLease(self._store, pool, int(slot), holder, self.limits.lease_ttl_s)

    def _refresh_wait(self, pool: str, holder: str) -> None:
        """Keep this request's place among the waiters while it queues in the process (it expires otherwise)."""
        if self._owner is not None:
            self._store.scalar(
                """UPDATE ondemand_waiters SET expires_at = clock_timestamp() + make_interval(secs => :ttl)
                   WHERE pool = :pool AND holder = :holder RETURNING holder""",
                pool=pool,
                holder=holder,
                ttl=WAITER_TTL_S,
            )

    def _check_wait(self, aborted: Callable[[], bool], deadline: float, pool: str, holder: str | None = None) -> None:
        if aborted():
            self._leave_waiters(pool, holder)
            raise Aborted("chunk no longer processing")
        if time.monotonic() >= deadline:
            self._leave_waiters(pool, holder)
            raise LeaseWaitTimeout(f"no on-demand slot for {pool} within {self.limits.lease_wait_s:.0f} s")

    def _leave_waiters(self, pool: str, holder: str | None) -> None:
        if self._owner is not None and holder is not None:
            self._store.scalar("DELETE FROM ondemand_waiters WHERE pool = :pool AND holder = :holder RETURNING holder", pool=pool, holder=holder)

    def free_now(self, pool: str) -> int | None:
        """Requests of ``pool`` that could start now without waiting: the pace's free starts,
        within the free slots. None without pacing: free slots alone say nothing of the quota."""
        if not self.limits.rpm:
            return None
        held = self._store.scalar("SELECT count(*) AS held FROM ondemand_leases WHERE pool = :pool AND expires_at > clock_timestamp()", pool=pool)
        behind = self._store.scalar(
            "SELECT extract(epoch FROM clock_timestamp() - next_at)::double precision AS behind FROM ondemand_pace WHERE pool = :pool", pool=pool
        )
        free = pace_starts_free(None if behind is None else float(behind), 60.0 / self.limits.rpm, self.limits.burst)
        return min(free, max(0, self.limits.concurrency - int(held or 0))) if self.limits.concurrency else free

    def pace(self, pool: str, *, aborted: Callable[[], bool] = lambda: False) -> float:
        """Seconds until this request's start time. ``aborted`` (a cheap flag) is polled while the request
        queues behind its owner's other requests or waits for room to book: a cancelled chunk stops waiting."""
        if not self.limits.rpm:
            return 0.0
        interval = 60.0 / self.limits.rpm
        if self._owner is None:
            return float(
                self._store.scalar("SELECT ondemand_pace_ticket(:pool, :interval, :burst) AS wait", pool=pool, interval=interval, burst=self.limits.burst)
                or 0.0
            )
        # Shared by owner, the least served first (0031_ondemand_fair_pace.sql, 0035), the burst kept for the
        # little served (0036): at its cap of starts
        # booked ahead, an owner waits until its earliest begins. One thread per owner and pool asks; the others queue here.
        gate = self._store.gate(f"pace\x00{pool}\x00{self._owner}")
        while not gate.acquire(timeout=0.5):
            if aborted():
                raise Aborted("chunk no longer processing")
        try:
            while True:
                row = self._store.one(
                    "SELECT wait_s, retry_s FROM ondemand_pace_fair(:pool, :owner, :interval, :burst, :ahead, NULL, :tau, :reserve, :busy)",
                    pool=pool,
                    owner=self._owner,
                    interval=interval,
                    burst=self.limits.burst,
                    ahead=pace_ahead(interval),
                    tau=SERVICE_MEMORY_INTERVALS * interval,
                    reserve=self.limits.burst,
                    busy=pace_busy_after(self.limits.burst),
                )
                if row is None:
                    raise RuntimeError("ondemand_pace_fair returned no row")
                if row["wait_s"] is not None:
                    return float(row["wait_s"])
                if aborted():
                    raise Aborted("chunk no longer processing")
                self._sleep(max(PACE_MIN_RETRY_S, float(row["retry_s"] or 0.0)))
        finally:
            gate.release()


_stores: dict[ConnectParams, SerialDatabase] = {}
_stores_lock = threading.Lock()


def serial_database(params: ConnectParams) -> SerialDatabase:
    """The process-wide serial connection to this database (limiter and per-request abort checks)."""
    with _stores_lock:
        store = _stores.get(params)
        if store is None:
            store = _stores[params] = SerialDatabase(params)
        return store


def limiter_for(params: ConnectParams, settings: Any, *, owner: str | None = None) -> Limiter:
    """The limiter for this database and these settings, sharing slots fairly by ``owner`` when given."""
    limits = LimitSettings.from_settings(settings)
    if not limits.active:
        return NoLimit()
    return PgLimiter(serial_database(params), limits, owner=owner)


class SerialPageThreadDatabase:
    """batchlane.ports.PageThreadDatabase over the process's serial connection (SerialDatabase above)."""

    def __init__(self, params: ConnectParams, settings: Any) -> None:
        self._params, self._settings = params, settings
        self._serial = serial_database(params)  # one per process and database, made on first use

    def limiter(self, *, owner: str | None) -> Limiter:
        return limiter_for(self._params, self._settings, owner=owner)

    @property
    def budgets(self) -> PgBudgets:
        return PgBudgets(self._serial)

    @property
    def jobs(self) -> PgJobs:
        return PgJobs(self._serial)

    def in_one_transaction(self, work: Callable[[UnitOfWork], T]) -> T:
        def run(db: Database) -> T:
            uow = PgUnitOfWork(db)
            with uow:
                return work(uow)

        result: T = self._serial.with_database(run)
        return result
