"""GovernedTransport: every on-demand model request under the global limit, backing off with full jitter while it holds its slot.

A request takes its start time from the pace *before* it takes a slot: a request waiting in line
for the pace holds nothing, so the slots are held by requests being served, and another owner's
request finds one free (a flood's queue held every slot before, and fed a newcomer slots only
as fast as the pace let the flood's requests end: docs/decisions/0027). A slot that comes later
than ``PACE_LATE_S`` after the start time is not used on that start: the request takes a fresh
one, so sends delayed by the slots never bunch beyond the pace's bound by more than that margin.

Why, and the two abort checks: docs/module-notes.md "batchlane.ondemand.governed".
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, stop_after_delay, wait_random_exponential

from batchlane.claude.request import PageRequest
from batchlane.claude.transports import INVOCATION_ENDING, ModelAnswer, ModelCallError, Transport
from batchlane.domain.pace import PACE_LEAD_S
from batchlane.observability import logger
from batchlane.ports import Aborted, LeaseWaitTimeout, Limiter

# How long after its start time a request may still be sent on it (the slot came late): the margin the
# pace already gives a loaded host's wake-ups. Later, it takes a fresh start time.
PACE_LATE_S = PACE_LEAD_S


@dataclass(frozen=True)
class BackoffPolicy:
    base_s: float = 1.0
    max_s: float = 20.0
    budget_s: float = 180.0  # time one request may spend on attempts, backoff and pacing waits
    max_attempts: int = 12

    @classmethod
    def from_settings(cls, settings: Any) -> BackoffPolicy:
        return cls(
            base_s=float(settings.batchlane_backoff_base_s),
            max_s=float(settings.batchlane_backoff_max_s),
            budget_s=float(settings.batchlane_throttle_budget_s),
            max_attempts=int(settings.batchlane_throttle_max_attempts),
        )


def _retryable(exc: BaseException) -> bool:
    """Retry in place what was refused (throttling, unavailable); never what may have run (a read
    timeout), nor a request the ending invocation has no time left to wait for (the chunk retries those)."""
    return isinstance(exc, ModelCallError) and exc.retryable and exc.possibly_billed is None and exc.code != INVOCATION_ENDING


class GovernedTransport:
    """Wraps the raw on-demand transport; counts requests and throttles for the chunk's report."""

    def __init__(
        self,
        inner: Transport,
        limiter: Limiter,
        policy: BackoffPolicy,
        *,
        aborted: Callable[[], bool] = lambda: False,
        waiting: Callable[[], bool] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._inner = inner
        self._limiter = limiter
        self._policy = policy
        self._aborted = aborted
        self._waiting = waiting or aborted
        self._sleep = sleep
        self._clock = clock
        self._lock = threading.Lock()
        self.requests = 0
        self.throttled = 0
        self.exhausted = 0

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)

    def send(self, request: PageRequest) -> ModelAnswer:
        if self._waiting():
            raise Aborted("chunk no longer processing")
        started = self._start(request)
        try:
            with self._limiter.slot(request.model_id, aborted=self._waiting) as lease:
                return self._attempts(request, lease, started)
        except LeaseWaitTimeout as exc:
            self._count("exhausted")
            raise ModelCallError("LeaseWaitTimeout", str(exc), retryable=True) from exc

    def _start(self, request: PageRequest) -> float:
        """Wait for a start time from the pace; the clock's reading when it came.

        The row before taking a start time, the flag after waiting for it: a read between
        the start time and the send would make the pace uneven."""
        if self._aborted():
            raise Aborted("chunk no longer processing")
        wait = self._limiter.pace(request.model_id, aborted=self._waiting)
        if wait > 0:
            self._sleep(wait)
        if self._waiting():
            raise Aborted("chunk no longer processing")
        return self._clock()

    def _attempts(self, request: PageRequest, lease: Any, started: float) -> ModelAnswer:
        policy = self._policy

        def before_sleep(state: RetryCallState) -> None:
            if self._aborted():
                raise Aborted("chunk no longer processing")

        retrying = Retrying(
            retry=retry_if_exception(_retryable),
            wait=wait_random_exponential(multiplier=policy.base_s, max=policy.max_s),
            stop=stop_after_delay(policy.budget_s) | stop_after_attempt(policy.max_attempts),
            sleep=self._sleep,
            before_sleep=before_sleep,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    if attempt.retry_state.attempt_number > 1:
                        lease.renew()  # the first attempt runs on a lease just taken
                        self._start(request)  # a retry waits on the pace holding its slot: it is being served
                    elif self._clock() - started > PACE_LATE_S:
                        self._start(request)  # the slot came late: a fresh start time, not a bunched send
                    self._count("requests")
                    try:
                        return self._inner.send(request)
                    except ModelCallError as exc:
                        if _retryable(exc):
                            self._count("throttled")
                        raise
        except ModelCallError as exc:
            if exc.possibly_billed is not None:
                logger.warning("on-demand request timed out; booked as billed, not re-sent now", code=exc.code, pages=list(request.page_numbers))
            elif exc.retryable:
                self._count("exhausted")
                logger.warning(
                    "on-demand request gave up within its budget",
                    code=exc.code,
                    pages=list(request.page_numbers),
                    attempts=retrying.statistics.get("attempt_number"),
                )
            raise
        raise AssertionError("unreachable: tenacity either returns or raises")
