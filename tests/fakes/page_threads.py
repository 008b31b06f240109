"""batchlane.ports.PageThreadDatabase in memory: the fake repositories over a FakeState, and no on-demand limit
unless a test hands one in."""

from __future__ import annotations

from typing import Any

from batchlane.domain.pace import NoLimit
from batchlane.ports import Limiter
from fakes.budgets import FakeBudgets
from fakes.jobs import FakeJobs


class FakePageThreadDatabase:
    def __init__(self, state: Any, limiter: Limiter | None = None) -> None:  # a fakes.FakeState
        self.state = state
        self._limiter: Limiter = limiter or NoLimit()
        self.owners: list[str | None] = []  # whose requests each limiter served (slots are shared by owner)

    def limiter(self, *, owner: str | None) -> Limiter:
        self.owners.append(owner)
        return self._limiter

    @property
    def budgets(self) -> FakeBudgets:
        return FakeBudgets(self.state)

    @property
    def jobs(self) -> FakeJobs:
        return FakeJobs(self.state)
