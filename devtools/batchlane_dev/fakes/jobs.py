"""batchlane.ports.JobRepository in memory: the contract of db/jobs.py's Pg adapter (tests/contract)."""

from __future__ import annotations

from typing import Any


class FakeJobs:
    def __init__(self, state: Any) -> None:  # a batchlane_dev.fakes.FakeState
        self.state = state
