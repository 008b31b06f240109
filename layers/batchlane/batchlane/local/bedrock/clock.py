"""Emulated time: ``time_scale`` emulated seconds pass per real second.

A batch job takes hours on AWS; the offline stack and the tests compress that. The
clock starts at the real wall time when the emulator is built, so timestamps it stamps
look current and then run faster than the wall clock.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime


class EmulatedClock:
    def __init__(self, scale: float) -> None:
        self.scale = scale
        self._wall0 = time.time()
        self._mono0 = time.monotonic()

    def now(self) -> float:
        """Emulated epoch seconds."""
        return self._wall0 + (time.monotonic() - self._mono0) * self.scale

    def real_seconds_until(self, emulated_epoch: float) -> float:
        return (emulated_epoch - self.now()) / self.scale


def iso(epoch: float | None) -> str | None:
    """ISO 8601 in UTC with milliseconds, as Bedrock's JSON answers carry timestamps."""
    if epoch is None:
        return None
    stamp = datetime.fromtimestamp(epoch, tz=UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"
