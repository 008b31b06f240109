"""GovernedTransport: backoff with full jitter while holding the slot, within a budget."""

import pytest
from ondemand_fakes import CONFIG, ModelTransport, RecordingLimiter, chunk_pages

from batchlane.claude import ModelCallError, build_page_request
from batchlane.ondemand import Aborted, BackoffPolicy, GovernedTransport
from batchlane.ondemand.governed import PACE_LATE_S

PAGE = chunk_pages(1)[0]
REQUEST = build_page_request(chunk_index=0, page_number=1, pdf_bytes=PAGE.pdf_bytes, config=CONFIG)


class SleepRecorder:
    def __init__(self, limiter=None):
        self.waits = []
        self.held_while_sleeping = []
        self._limiter = limiter

    def __call__(self, seconds):
        self.waits.append(seconds)
        if self._limiter is not None:
            self.held_while_sleeping.append(self._limiter.held)


def test_throttles_are_absorbed_while_the_slot_is_held():
    limiter = RecordingLimiter()
    sleep = SleepRecorder(limiter)
    inner = ModelTransport(lambda request, n: "throttle" if n <= 3 else None)
    transport = GovernedTransport(inner, limiter, BackoffPolicy(base_s=1, max_s=20, budget_s=1e9, max_attempts=10), sleep=sleep)
    answer = transport.send(REQUEST)
    assert answer.text and len(inner.sent) == 4
    assert (transport.requests, transport.throttled, transport.exhausted) == (4, 3, 0)
    # the first start time before the slot; then one slot for the whole request: taken once, held
    # through every backoff and each retry's start time, given back once
    assert limiter.events == ["pace/0", "acquire", "pace/1", "pace/1", "pace/1", "release"]
    assert sleep.held_while_sleeping == [1, 1, 1]
    # full jitter: each wait is uniform in [0, min(max, base * 2^n)]
    assert all(0 <= wait <= cap for wait, cap in zip(sleep.waits, (1, 2, 4), strict=True))


def test_a_spent_budget_raises_a_retryable_error_never_an_answer():
    limiter = RecordingLimiter()
    inner = ModelTransport(lambda request, n: "throttle")
    transport = GovernedTransport(inner, limiter, BackoffPolicy(base_s=0.01, max_s=0.01, budget_s=1e9, max_attempts=4), sleep=SleepRecorder())
    with pytest.raises(ModelCallError) as caught:
        transport.send(REQUEST)
    assert caught.value.retryable and caught.value.code == "ThrottlingException"
    assert len(inner.sent) == 4 and transport.exhausted == 1 and limiter.held == 0


def test_a_non_retryable_error_is_not_retried():
    class Invalid:
        sent = 0

        def send(self, request):
            self.sent += 1
            raise ModelCallError("ValidationException", "bad", retryable=False)

    inner = Invalid()
    transport = GovernedTransport(inner, RecordingLimiter(), BackoffPolicy(), sleep=SleepRecorder())
    with pytest.raises(ModelCallError):
        transport.send(REQUEST)
    assert inner.sent == 1


def test_an_aborted_chunk_sends_nothing_and_stops_backing_off():
    inner = ModelTransport(lambda request, n: "throttle")
    stopped = {"now": True}
    transport = GovernedTransport(inner, RecordingLimiter(), BackoffPolicy(), aborted=lambda: stopped["now"], sleep=SleepRecorder())
    with pytest.raises(Aborted):
        transport.send(REQUEST)
    assert inner.sent == []
    # cancelled while backing off: the next attempt is not made
    calls = {"n": 0}

    def aborted():  # asked before the slot, before and after attempt 1's start time, then before the backoff sleep
        calls["n"] += 1
        return calls["n"] > 3

    transport = GovernedTransport(inner, RecordingLimiter(), BackoffPolicy(), aborted=aborted, sleep=SleepRecorder())
    with pytest.raises(Aborted):
        transport.send(REQUEST)
    assert len(inner.sent) == 1


def _send_after_waiting_for_a_slot(polls_while_waiting: int) -> tuple[int, int, int]:
    """One throttle, then the answer, after a slot wait that polls ``polls_while_waiting`` times: (sent, row reads, flag polls)."""

    class WaitingLimiter(RecordingLimiter):
        def slot(self, pool, *, aborted):
            assert not any(aborted() for _ in range(polls_while_waiting))  # a wait for a slot polls this
            return super().slot(pool, aborted=aborted)

    reads, polls = [], []
    inner = ModelTransport(lambda request, n: "throttle" if n == 1 else None)
    transport = GovernedTransport(
        inner, WaitingLimiter(), BackoffPolicy(), aborted=lambda: reads.append(1) and False, waiting=lambda: polls.append(1) and False, sleep=SleepRecorder()
    )
    assert transport.send(REQUEST).text
    return len(inner.sent), len(reads), len(polls)


def test_a_long_wait_for_a_slot_polls_the_flag_never_the_row():
    # The row is a database read: a request queued for minutes must not read it every poll.
    short_sent, short_reads, short_polls = _send_after_waiting_for_a_slot(5)
    long_sent, long_reads, long_polls = _send_after_waiting_for_a_slot(500)
    assert short_sent == long_sent == 2  # the throttled attempt, then the answer
    assert long_reads == short_reads <= 2 * long_sent  # bounded by the attempts, whatever the wait
    assert long_polls - short_polls == 500 - 5  # the wait itself polled only the flag


def test_a_request_cancelled_while_queued_for_a_slot_sends_nothing():
    # Cancelled while queued for a slot: the flag alone stops it, nothing is sent
    stopped = ModelTransport()
    with pytest.raises(Aborted):
        GovernedTransport(stopped, RecordingLimiter(), BackoffPolicy(), aborted=lambda: False, waiting=lambda: True).send(REQUEST)
    assert stopped.sent == []


def test_a_request_waiting_on_the_pace_holds_no_slot():
    # A flood's requests in line for their start times must leave the slots to requests being served
    limiter = RecordingLimiter(pace_waits=(2.5,))
    sleep = SleepRecorder(limiter)
    transport = GovernedTransport(ModelTransport(), limiter, BackoffPolicy(), sleep=sleep)
    assert transport.send(REQUEST).text
    assert sleep.waits == [2.5] and sleep.held_while_sleeping == [0]
    assert limiter.events == ["pace/0", "acquire", "release"]


class _Clock:
    """Reads ``first`` when the start time comes, then ``first + after_slot`` once the slot is taken."""

    def __init__(self, after_slot: float) -> None:
        self.readings = [100.0, 100.0 + after_slot]

    def __call__(self) -> float:
        return self.readings.pop(0) if len(self.readings) > 1 else self.readings[0]


@pytest.mark.parametrize(("after_slot", "paced"), [(PACE_LATE_S, 1), (PACE_LATE_S + 0.01, 2)])
def test_a_slot_that_comes_late_sends_on_a_fresh_start_time_never_on_the_stale_one(after_slot, paced):
    # Sent within the margin on the start it waited for; later, it asks the pace again holding the slot,
    # so requests delayed by the slots cannot all go at once when slots free
    limiter = RecordingLimiter()
    inner = ModelTransport()
    transport = GovernedTransport(inner, limiter, BackoffPolicy(), sleep=SleepRecorder(), clock=_Clock(after_slot))
    assert transport.send(REQUEST).text and len(inner.sent) == 1
    assert limiter.events == ["pace/0", "acquire", *["pace/1"] * (paced - 1), "release"]


class _SleepingClock:
    """A test clock that moves only when the code sleeps (or a slot wait moves it): time a test controls, never waited for."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


@pytest.mark.parametrize("pace_wait", [0.6, 2.5, 30.0])
def test_the_start_time_is_read_after_the_paces_sleep_so_a_long_wait_keeps_its_start(pace_wait):
    # A request that slept on the pace and then got a slot at once is sent on the start it waited for.
    # Read before the sleep, every wait over PACE_LATE_S would look like a late slot and queue again.
    clock = _SleepingClock()
    limiter = RecordingLimiter(pace_waits=(pace_wait,))
    inner = ModelTransport()
    transport = GovernedTransport(inner, limiter, BackoffPolicy(), sleep=clock.sleep, clock=clock)
    assert transport.send(REQUEST).text and len(inner.sent) == 1
    assert clock.waits == [pace_wait]
    assert limiter.events == ["pace/0", "acquire", "release"]


@pytest.mark.parametrize(("slot_wait", "paced"), [(PACE_LATE_S, 1), (PACE_LATE_S + 0.25, 2)])
def test_a_slot_that_comes_late_after_a_paced_wait_takes_a_fresh_start(slot_wait, paced):
    # The clock moves with the pace's sleep (2 s) and with the wait for the slot; only the slot's lateness counts.
    clock = _SleepingClock()

    class SlowSlots(RecordingLimiter):
        def slot(self, pool, *, aborted):
            clock.now += slot_wait
            return super().slot(pool, aborted=aborted)

    limiter = SlowSlots(pace_waits=(2.0,))
    transport = GovernedTransport(ModelTransport(), limiter, BackoffPolicy(), sleep=clock.sleep, clock=clock)
    assert transport.send(REQUEST).text
    assert limiter.events == ["pace/0", "acquire", *["pace/1"] * (paced - 1), "release"]


def test_the_backoff_policy_is_read_from_the_settings_by_name():
    from types import SimpleNamespace

    settings = SimpleNamespace(batchlane_backoff_base_s="0.5", batchlane_backoff_max_s=8, batchlane_throttle_budget_s="90", batchlane_throttle_max_attempts="6")
    assert BackoffPolicy.from_settings(settings) == BackoffPolicy(base_s=0.5, max_s=8.0, budget_s=90.0, max_attempts=6)


def test_each_backoff_is_full_jitter_up_to_base_times_two_to_the_attempt_capped(monkeypatch):
    # The top of each jitter range, drawn deterministically: base 0.5 s doubling, capped at 3 s
    import random

    monkeypatch.setattr(random, "uniform", lambda low, high: high)
    sleep = SleepRecorder()
    inner = ModelTransport(lambda request, n: "throttle" if n <= 4 else None)
    transport = GovernedTransport(inner, RecordingLimiter(), BackoffPolicy(base_s=0.5, max_s=3, budget_s=1e9, max_attempts=10), sleep=sleep)
    assert transport.send(REQUEST).text
    assert sleep.waits == [0.5, 1.0, 2.0, 3.0]


def test_the_pace_is_asked_for_the_requests_model_and_polls_the_waiting_flag():
    # A long pace wait polls the flag the chunk's poller sets (set here only while the pace waits), never a fixed False
    flag = {"waiting": False}
    asked = []

    class PollingLimiter(RecordingLimiter):
        def pace(self, pool, *, aborted=lambda: False):
            flag["waiting"] = True
            asked.append((pool, aborted()))
            flag["waiting"] = False
            return super().pace(pool, aborted=aborted)

    transport = GovernedTransport(ModelTransport(), PollingLimiter(), BackoffPolicy(), waiting=lambda: flag["waiting"], sleep=SleepRecorder())
    assert transport.send(REQUEST).text
    assert asked == [(REQUEST.model_id, True)]


def test_a_chunk_cancelled_after_a_throttle_sleeps_no_backoff():
    calls = {"n": 0}

    def aborted():  # false for the first attempt's checks, true from the backoff on
        calls["n"] += 1
        return calls["n"] > 1

    sleep = SleepRecorder()
    inner = ModelTransport(lambda request, n: "throttle")
    transport = GovernedTransport(inner, RecordingLimiter(), BackoffPolicy(), aborted=aborted, waiting=lambda: False, sleep=sleep)
    with pytest.raises(Aborted):
        transport.send(REQUEST)
    assert len(inner.sent) == 1 and sleep.waits == []  # stopped before the backoff, not after sleeping it


def test_a_slot_wait_that_times_out_is_a_retryable_model_error_counted_as_exhausted():
    from batchlane.ports import LeaseWaitTimeout

    pools = []

    class Full(RecordingLimiter):
        def slot(self, pool, *, aborted):
            pools.append(pool)
            raise LeaseWaitTimeout("no slot for m in 300 s")

    inner = ModelTransport()
    transport = GovernedTransport(inner, Full(), BackoffPolicy(), sleep=SleepRecorder())
    with pytest.raises(ModelCallError) as caught:
        transport.send(REQUEST)
    assert (caught.value.code, caught.value.retryable) == ("LeaseWaitTimeout", True)
    assert "no slot for m in 300 s" in str(caught.value)
    assert (transport.exhausted, transport.requests, inner.sent, pools) == (1, 0, [], [REQUEST.model_id])


def test_a_spent_time_budget_stops_retrying_before_the_attempt_cap():
    inner = ModelTransport(lambda request, n: "throttle")
    transport = GovernedTransport(inner, RecordingLimiter(), BackoffPolicy(base_s=0.01, max_s=0.01, budget_s=0, max_attempts=10), sleep=SleepRecorder())
    with pytest.raises(ModelCallError):
        transport.send(REQUEST)
    assert len(inner.sent) == 1 and transport.exhausted == 1
