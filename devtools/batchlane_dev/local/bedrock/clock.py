"""Emulated time: ``time_scale`` emulated seconds pass per real second.

A batch job takes hours on AWS; the offline stack and the tests compress that. The
clock starts at the real wall time when the emulator is built, so timestamps it stamps
look current and then run faster than the wall clock.

ONE clock decides the economics offline: the handlers divide the batch timeout and the
deadlines by the same ``time_scale`` (BATCHLANE_TIME_SCALE), and an emulated batch job
moves at a calibrated pace on it (``BATCH_RECORDS_PER_HOUR``, docs/offline.md). That
only holds while this machine can compute the records as fast as the pace asks: at a
scale it cannot sustain the job falls behind the clock, our wait times out first, and
the figures mean nothing. ``time_scale=auto`` picks the fastest scale it can sustain.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

# Calibration (docs/offline.md "Time offline"). AWS states no batch throughput; it sizes the
# default 24 h job timeout for jobs of up to 50,000 records (the default records-per-job
# quota), i.e. at least ~2,100 records an hour. We emulate 5,000 records an hour: a
# maximal job in 10 h, a 10,000-page document (9,600 records) in about 2 h.
BATCH_RECORDS_PER_HOUR = 5000.0
# Real seconds the emulator spends on one record (decode, read the page's text, answer):
# ~3 ms on an idle 2-core machine, ~9 ms on the same machine under load (the 10,000-page
# demo of 2026-12-01); budgeted at 10 ms. ``record_cost_ms`` raises it (a slower machine).
EMULATOR_RECORD_COST_S = 0.010
# At the auto scale the emulator needs at most this share of the real time the pace gives it.
AUTO_SCALE_HEADROOM = 0.5
MAX_AUTO_SCALE = 7200.0
JOB_LAG_SHARE = 0.1  # scale_for_job: how far behind the pace one known job may fall (share of 24 h)


def auto_time_scale(records_per_hour: float, record_cost_ms: float = 0.0) -> float:
    """The fastest scale at which this emulator keeps the calibrated pace, with headroom.

    At scale S a record is due every 3600 / (records_per_hour · S) real seconds; it costs
    ``cost`` real seconds to compute. Keeping up with room to spare: S ≤ headroom · 3600 / (rph · cost).
    """
    cost = max(EMULATOR_RECORD_COST_S, record_cost_ms / 1000.0)
    return min(MAX_AUTO_SCALE, AUTO_SCALE_HEADROOM * 3600.0 / (records_per_hour * cost))


def scale_for_job(records: int, records_per_hour: float = BATCH_RECORDS_PER_HOUR, record_cost_ms: float = 0.0) -> float:
    """The fastest scale for ONE job of ``records`` records (the demo knows its size up front).

    The emulator may fall behind the calibrated pace, but by at most ``JOB_LAG_SHARE`` of
    the default 24 h timeout: records · cost · S ≤ lag + records · 3600 / rph. A small job
    runs fast (an Expired outcome, which idles 24 emulated hours, still ends in seconds),
    a 10,000-page one slowly enough that the economics are the calibrated ones.
    """
    cost = max(EMULATOR_RECORD_COST_S, record_cost_ms / 1000.0)
    budget = JOB_LAG_SHARE * 24 * 3600 + max(records, 1) * 3600.0 / records_per_hour
    return max(auto_time_scale(records_per_hour, record_cost_ms), min(MAX_AUTO_SCALE, budget / (max(records, 1) * cost)))


class EmulatedClock:
    """Emulated time runs ``scale`` times faster than the wall clock, and can jump over an idle wait.

    A wait in which the emulator does no work and that nothing but the emulator's clock ends (a
    job idling until its expiration) need not cost real seconds: :meth:`skip_to` moves emulated
    time straight to its end. Only the emulator's own time jumps; the handlers' timers run on the
    wall clock and see the event simply arrive earlier, as they would at a higher scale."""

    def __init__(self, scale: float) -> None:
        self.scale = scale
        self._wall0 = time.time()
        self._mono0 = time.monotonic()
        self._skipped = 0.0
        self._lock = threading.Lock()

    def now(self) -> float:
        """Emulated epoch seconds."""
        return self._wall0 + (time.monotonic() - self._mono0) * self.scale + self._skipped

    @property
    def skipped_s(self) -> float:
        """Emulated seconds jumped over so far (:meth:`skip_to`)."""
        return self._skipped

    def skip_to(self, emulated_epoch: float) -> float:
        """Jump forward to ``emulated_epoch`` (never back); the emulated seconds jumped."""
        with self._lock:
            gap = max(0.0, emulated_epoch - self.now())
            self._skipped += gap
            return gap

    def real_seconds_until(self, emulated_epoch: float) -> float:
        return (emulated_epoch - self.now()) / self.scale


def iso(epoch: float | None) -> str | None:
    """ISO 8601 in UTC with milliseconds, as Bedrock's JSON answers carry timestamps."""
    if epoch is None:
        return None
    stamp = datetime.fromtimestamp(epoch, tz=UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"
