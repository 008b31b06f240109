"""The on-demand pace shared fairly by owner (issue 21, 0031_ondemand_fair_pace.sql), real PostgreSQL.

The schedule's start times are asserted, never durations: the function takes the clock as a
parameter, and the simulations below advance that clock themselves (no sleeping, no timing).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from batchlane.db import Database, connect_params_from_url
from batchlane.db.limiter import PgLimiter, SerialDatabase
from batchlane.domain.pace import SERVICE_MEMORY_INTERVALS, LimitSettings, pace_ahead, pace_busy_after
from batchlane.ondemand import Aborted, BackoffPolicy, GovernedTransport
from batchlane_dev.local.jobs import wait_until

T0 = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
INTERVAL = 1.0  # seconds between starts (rpm 60)
AHEAD = 2
TAU = SERVICE_MEMORY_INTERVALS * INTERVAL  # how long an owner's service is remembered, as the limiter passes it


def ask(db: Database, pool: str, owner: str, at: float, *, burst: int, ahead: int = AHEAD, reserve: bool = False) -> dict:
    """One call of the pace function, as ``owner``'s request asking ``at`` seconds after T0; ``reserve``: with
    the burst kept for the little served, as the limiter asks (0036), else without (0031/0035's behaviour)."""
    row = db.one(
        "SELECT wait_s, retry_s FROM ondemand_pace_fair(:pool, :owner, :interval, :burst, :ahead, CAST(:now AS timestamptz), :tau, :reserve, :busy)",
        pool=pool,
        owner=owner,
        interval=INTERVAL,
        burst=burst,
        ahead=ahead,
        now=T0 + timedelta(seconds=at),
        tau=TAU,
        reserve=burst if reserve else 0,
        busy=pace_busy_after(burst) if reserve else None,
    )
    assert row is not None
    return row


def ticket(db: Database, pool: str, owner: str, at: float, *, burst: int, ahead: int = AHEAD) -> float | None:
    """The start (seconds after T0) handed to ``owner``'s request asking ``at`` seconds after T0; None: refused."""
    row = ask(db, pool, owner, at, burst=burst, ahead=ahead)
    if row["wait_s"] is None:
        assert row["retry_s"] is not None and row["retry_s"] >= 0
        return None
    assert row["retry_s"] is None
    return at + float(row["wait_s"])


def simulate(
    db: Database,
    pool: str,
    requests: dict[str, int],
    *,
    until: float,
    burst: int,
    busy_s: float,
    arrive: dict[str, float] | None = None,
    pages: dict[str, int] | None = None,
    reserve: bool = False,
) -> list[tuple[float, str]]:
    """Each owner's requests ask for a start, wait for it, run ``busy_s`` and ask again; a refused
    request asks again when told (retry_s). An owner starts asking at ``arrive`` (default 0) and stops
    once it was handed ``pages`` starts (default: never). Every start handed out, in order: (start, owner)."""
    starts: list[tuple[float, str]] = []
    handed = dict.fromkeys(requests, 0)
    order = itertools.count()
    asks = [((arrive or {}).get(owner, 0.0), next(order), owner) for owner, n in requests.items() for _ in range(n)]
    heapq.heapify(asks)
    while asks:
        at, _, owner = heapq.heappop(asks)
        if at > until:
            break
        if handed[owner] >= (pages or {}).get(owner, 1 << 30):
            continue  # the owner's job has all its starts: this request is done
        row = ask(db, pool, owner, at, burst=burst, reserve=reserve)
        if row["wait_s"] is None:
            heapq.heappush(asks, (at + float(row["retry_s"]), next(order), owner))
        else:
            start = at + float(row["wait_s"])
            starts.append((start, owner))
            handed[owner] += 1
            heapq.heappush(asks, (start + busy_s, next(order), owner))
    return sorted(starts)


def assert_within_rate(starts: list[float], *, burst: int) -> None:
    """GCRA's bound: between any two starts at most (their distance / interval) + burst + 1 starts."""
    for i, first in enumerate(starts):
        for j in range(i + 1, len(starts)):
            assert j - i + 1 <= (starts[j] - first) / INTERVAL + burst + 1 + 1e-6, (i, j, first, starts[j])


@pytest.mark.parametrize("burst", [0, 9])
def test_a_newcomer_starts_behind_a_few_of_the_busy_owners_starts_not_all(db, burst):
    pool = f"fair-pace-{time.monotonic_ns()}"
    # Given owner A's 50 slot holders all ask for a start at once
    a = [ticket(db, pool, "user-a", 0.0, burst=burst) for _ in range(50)]
    # Then A gets the starts free now (the burst) and AHEAD more; the rest are refused
    granted = [s for s in a if s is not None]
    assert granted == [0.0] * (burst + 1) + [INTERVAL * k for k in range(1, AHEAD + 1)]
    # When owner B asks at that moment, B starts right behind those, not behind A's 50
    assert ticket(db, pool, "user-b", 0.0, burst=burst) == INTERVAL * (AHEAD + 1)
    # And while B asks, B (the less served) may book AHEAD starts ahead, A only one: A, still holding one, is refused
    assert ticket(db, pool, "user-a", INTERVAL, burst=burst) is None
    assert ticket(db, pool, "user-b", INTERVAL, burst=burst) == INTERVAL * (AHEAD + 2)
    # And A is handed the next start once its last booked one has begun
    assert ticket(db, pool, "user-a", INTERVAL * AHEAD, burst=burst) == INTERVAL * (AHEAD + 3)


@pytest.mark.parametrize("burst", [0, 9])
def test_the_pools_rate_is_never_exceeded_whoever_asks(db, burst):
    pool = f"fair-pace-rate-{time.monotonic_ns()}"
    starts = simulate(db, pool, {"user-a": 12, "user-b": 3, "user-c": 1}, until=80 * INTERVAL, burst=burst, busy_s=0.3 * INTERVAL)
    assert len(starts) >= 80  # the simulation handed out starts the whole time
    assert_within_rate([s for s, _ in starts], burst=burst)


def test_an_owner_alone_gets_every_start(db):
    pool = f"fair-pace-alone-{time.monotonic_ns()}"
    starts = [s for s, _ in simulate(db, pool, {"user-a": 8}, until=60 * INTERVAL, burst=3, busy_s=0.3 * INTERVAL)]
    # The burst at once, then one start every interval: the pace is never left idle
    assert starts[:4] == [0.0] * 4
    gaps = {round(b - a, 6) for a, b in itertools.pairwise(starts[3:])}
    assert gaps == {INTERVAL}
    assert starts[-1] >= 59 * INTERVAL


def test_owners_that_keep_asking_share_the_starts_evenly(db):
    pool = f"fair-pace-share-{time.monotonic_ns()}"
    # A has 12 requests waiting at any time, B 2: first come, first served would give B ~2 starts in 14
    starts = simulate(db, pool, {"user-a": 12, "user-b": 2}, until=100 * INTERVAL, burst=0, busy_s=0.5 * INTERVAL)
    late = [owner for start, owner in starts if start >= 10 * INTERVAL]
    assert abs(late.count("user-a") - late.count("user-b")) <= AHEAD + 1


def test_a_small_job_beside_a_flood_gets_most_of_the_starts_and_the_flood_keeps_its_share_of_the_rest(db):
    pool = f"fair-pace-small-{time.monotonic_ns()}"
    # Given A has flooded for a minute (12 requests waiting at any time) when B's 20-page job arrives (4 at a time)
    starts = simulate(
        db, pool, {"user-a": 12, "user-b": 4}, until=200 * INTERVAL, burst=0, busy_s=0.5 * INTERVAL, arrive={"user-b": 60 * INTERVAL}, pages={"user-b": 20}
    )
    b = [start for start, owner in starts if owner == "user-b"]
    assert len(b) == 20
    # Then B, the less served, books AHEAD starts ahead to A's one: its 20 starts take about 20 x (AHEAD + 1) / AHEAD
    # intervals (30), not the 40 of an equal share, nor the flood's backlog
    assert b[-1] - 60 * INTERVAL <= 20 * (AHEAD + 1) / AHEAD + AHEAD + 1
    # And A is not starved meanwhile: at least one start in every AHEAD + 1
    during = [owner for start, owner in starts if b[0] <= start <= b[-1]]
    assert during.count("user-a") >= len(during) // (AHEAD + 1) - 1
    # And the pool's rate holds
    assert_within_rate([s for s, _ in starts], burst=0)


def test_an_owners_job_finished_a_while_ago_does_not_count_against_its_next_one(db):
    pool = f"fair-pace-again-{time.monotonic_ns()}"
    # Given B's first 20-page job ran alone, and A began flooding 20 intervals after it ended
    first = simulate(db, pool, {"user-b": 4}, until=30 * INTERVAL, burst=0, busy_s=0.5 * INTERVAL, pages={"user-b": 20})
    assert first[-1][0] <= 20 * INTERVAL
    # When B's second job arrives 20 intervals into the flood (same pool: B's first starts are remembered, decayed)
    starts = simulate(
        db, pool, {"user-a": 12, "user-b": 4}, until=200 * INTERVAL, burst=0, busy_s=0.5 * INTERVAL,
        arrive={"user-a": 40 * INTERVAL, "user-b": 60 * INTERVAL}, pages={"user-b": 20},
    )  # fmt: skip
    b = [start for start, owner in starts if owner == "user-b"]
    # Then B is the less served again: its second job is not paced at an equal share (40 intervals)
    assert len(b) == 20 and b[-1] - 60 * INTERVAL <= 20 * (AHEAD + 1) / AHEAD + AHEAD + 1


def test_owners_flooding_alike_swap_the_lead_and_share_the_starts_evenly_over_time(db):
    pool = f"fair-pace-alike-{time.monotonic_ns()}"
    starts = simulate(db, pool, {"user-a": 12, "user-b": 12}, until=300 * INTERVAL, burst=0, busy_s=0.5 * INTERVAL)
    late = [owner for start, owner in starts if start >= 10 * INTERVAL]
    assert len(late) >= 280
    assert abs(late.count("user-a") - late.count("user-b")) <= 2 * (AHEAD + 1)


# -- the burst kept for the little served (0036) -------------------------------------------------------------


def test_a_newcomer_beside_a_busy_flood_starts_its_first_requests_at_once_as_it_would_alone(db):
    burst = 9
    runs = {}
    for reserve in (False, True):
        pool = f"fair-pace-reserve-{reserve}-{time.monotonic_ns()}"
        # Given A has flooded for 60 intervals (12 requests waiting at any time) when B's 20-page job arrives, 4 at a time
        starts = simulate(
            db, pool, {"user-a": 12, "user-b": 4}, until=200 * INTERVAL, burst=burst, busy_s=0.5 * INTERVAL,
            arrive={"user-b": 60 * INTERVAL}, pages={"user-b": 20}, reserve=reserve,
        )  # fmt: skip
        runs[reserve] = starts
        assert_within_rate([s for s, _ in starts], burst=burst)
    b_old = [start - 60 * INTERVAL for start, owner in runs[False] if owner == "user-b"]
    b_new = [start - 60 * INTERVAL for start, owner in runs[True] if owner == "user-b"]
    assert len(b_old) == len(b_new) == 20
    # Then B's first four start the moment it asks (A spent the burst and kept it spent before)
    assert b_new[:4] == [0.0] * 4 and b_old[0] > 0
    # And B's 20 starts end sooner by about the burst A no longer holds
    assert b_new[-1] <= b_old[-1] - burst / 2, (b_new[-1], b_old[-1])
    # And A keeps the rate meanwhile: over the flood it gets as many starts as before, less the one pause
    a_old = sum(1 for _, owner in runs[False] if owner == "user-a")
    a_new = sum(1 for _, owner in runs[True] if owner == "user-a")
    assert a_new >= a_old - burst - 1, (a_new, a_old)


def test_a_busy_owner_alone_keeps_the_rate_after_one_pause_of_the_reserve(db):
    burst = 5
    pool = f"fair-pace-busy-alone-{time.monotonic_ns()}"
    starts = [s for s, _ in simulate(db, pool, {"user-a": 8}, until=200 * INTERVAL, burst=burst, busy_s=0.3 * INTERVAL, reserve=True)]
    assert starts[: burst + 1] == [0.0] * (burst + 1), "alone and not yet busy, the whole burst at once"
    gaps = [round(b - a, 6) for a, b in itertools.pairwise(starts[burst:])]
    # One start every interval, but once, when its service reaches pace_busy_after(burst): a pause of the reserve
    assert sorted(set(gaps)) == [INTERVAL, INTERVAL * (burst + 1)] and gaps.count(INTERVAL * (burst + 1)) == 1, gaps
    assert len(starts) >= 200 - burst, "the rate is kept"
    assert_within_rate(starts, burst=burst)


def test_a_small_job_alone_is_paced_as_it_was_without_the_reserve(db):
    burst = 9
    alone = {}
    for reserve in (False, True):
        pool = f"fair-pace-small-alone-{reserve}-{time.monotonic_ns()}"
        alone[reserve] = simulate(db, pool, {"user-b": 4}, until=60 * INTERVAL, burst=burst, busy_s=0.5 * INTERVAL, pages={"user-b": 20}, reserve=reserve)
    assert len(alone[True]) == 20 and alone[True] == alone[False]
    assert 20 < pace_busy_after(burst), "a 20-page job never counts as busy"


@pytest.mark.parametrize("burst", [0, 3, 9])
def test_with_the_reserve_the_pools_rate_is_never_exceeded_whoever_asks(db, burst):
    pool = f"fair-pace-reserve-rate-{time.monotonic_ns()}"
    starts = simulate(
        db, pool, {"user-a": 12, "user-b": 3, "user-c": 1}, until=120 * INTERVAL, burst=burst, busy_s=0.3 * INTERVAL,
        arrive={"user-c": 50 * INTERVAL}, reserve=True,
    )  # fmt: skip
    assert len(starts) >= 110
    assert_within_rate([s for s, _ in starts], burst=burst)


class _Stopped(Exception):
    pass


def test_the_limiter_starts_an_owners_request_behind_a_few_of_another_owners_not_all(migrated_url):
    """Through PgLimiter on the real clock: one start every 10 s, so the statements' own time is noise."""
    store = SerialDatabase(connect_params_from_url(migrated_url))
    limits = LimitSettings(concurrency=0, rpm=6, burst=0)
    interval = 60.0 / limits.rpm
    pool = f"fair-pace-limiter-{time.monotonic_ns()}"
    stop, refused = threading.Event(), threading.Event()

    def a_sleep(seconds: float) -> None:  # A's refused request would wait: park it until the test ends
        refused.set()
        stop.wait(120)
        raise _Stopped

    def b_sleep(seconds: float) -> None:
        raise AssertionError(f"B was told to ask again in {seconds:.1f} s")

    a = PgLimiter(store, limits, owner="user-a", sleep=a_sleep)
    b = PgLimiter(store, limits, owner="user-b", sleep=b_sleep)
    a_waits: list[float] = []

    def a_request() -> None:
        try:
            a_waits.append(a.pace(pool))
        except _Stopped:
            pass

    # Given owner A's 10 requests ask for a start at once
    threads = [threading.Thread(target=a_request, daemon=True) for _ in range(10)]
    try:
        for thread in threads:
            thread.start()
        wait_until(lambda: refused.is_set() or len(a_waits) == 10, what="A's requests served or refused")
        # When B's request asks, it starts behind A's starts booked ahead, not behind A's 10
        b_wait = b.pace(pool)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    assert b_wait <= (pace_ahead(interval) + 1) * interval
    assert len(a_waits) == pace_ahead(interval) + 1  # one start free now, then its cap ahead


def test_a_floods_requests_in_line_for_the_pace_hold_no_slot_and_anothers_request_is_served(migrated_url):
    """Through GovernedTransport and PgLimiter: a request takes its start time before its slot, so the
    requests one owner has waiting on the pace leave every slot free for another owner's (decision 0027).
    Before, A's waiting requests held both slots and B's request timed out waiting for one."""
    store = SerialDatabase(connect_params_from_url(migrated_url))
    limits = LimitSettings(concurrency=2, rpm=6, burst=0, lease_ttl_s=60, lease_wait_s=5)
    pool = f"slot-after-pace-{time.monotonic_ns()}"
    request = SimpleNamespace(model_id=pool, page_numbers=(1,))
    stop, cancelled = threading.Event(), threading.Event()
    parked, ended = [], []
    sent: list[str] = []

    class Model:
        def __init__(self, owner: str) -> None:
            self.owner = owner

        def send(self, request: object) -> str:
            sent.append(self.owner)
            return f"answer for {self.owner}"

    def a_sleep(seconds: float) -> None:  # A's waits (its start times ahead, its refusals) last until the test ends
        parked.append(seconds)
        stop.wait(120)
        raise _Stopped

    a = GovernedTransport(
        Model("a"), PgLimiter(store, limits, owner="user-a", sleep=a_sleep), BackoffPolicy(), sleep=a_sleep, waiting=cancelled.is_set
    )

    def a_request() -> None:
        try:
            a.send(request)
        except (_Stopped, Aborted) as exc:
            ended.append(type(exc).__name__)

    threads = [threading.Thread(target=a_request, daemon=True) for _ in range(10)]
    b_waits: list[float] = []
    try:
        # Given owner A's 10 requests ask at once: one is sent, A books its cap of starts ahead and is refused the next
        for thread in threads:
            thread.start()
        ahead = pace_ahead(60.0 / limits.rpm)
        wait_until(lambda: len(parked) == ahead + 1 and sent == ["a"], what="A's requests sent, waiting on their starts, or refused")
        # Then none of them holds a slot while it waits
        assert store.scalar("SELECT count(*) AS held FROM ondemand_leases WHERE pool = :pool", pool=pool) == 0
        # When B's request asks, it is given a start behind A's few booked ahead and a slot at once
        b = GovernedTransport(Model("b"), PgLimiter(store, limits, owner="user-b"), BackoffPolicy(), sleep=b_waits.append)
        assert b.send(request) == "answer for b"
        assert len(b_waits) == 1 and b_waits[0] <= (ahead + 1) * 60.0 / limits.rpm
        # And A's requests still queued behind its own for the pace stop when A's chunk is cancelled
        cancelled.set()
        wait_until(lambda: ended.count("Aborted") == 10 - 1 - (ahead + 1), what="A's queued requests aborted")
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    assert sent == ["a", "b"] and ended.count("_Stopped") == ahead + 1
