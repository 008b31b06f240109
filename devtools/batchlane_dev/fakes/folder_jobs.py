"""batchlane.ports.FolderJobRepository in memory: the contract of db/folder_jobs.py's Pg adapter (tests/contract)."""

from __future__ import annotations

from typing import Any


class FakeFolderJobs:
    def __init__(self, state: Any) -> None:  # a batchlane_dev.fakes.FakeState
        self.state = state
