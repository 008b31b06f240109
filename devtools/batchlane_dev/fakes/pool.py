"""The pool's half of the in-memory LaneRepository (batchlane_dev.fakes.lanes.FakeLanes): what db/batch_rows.py reads
across jobs, chunks, lanes and folder files (the fair order, the folder window, stranded jobs, what to purge)."""

from __future__ import annotations

from typing import Any


class FakePool:
    state: Any  # a batchlane_dev.fakes.FakeState (set by FakeLanes)
