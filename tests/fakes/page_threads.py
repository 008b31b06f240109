"""batchlane.ports.PageThreadDatabase in memory: the fake repositories over a FakeState, and no on-demand limit
unless a test hands one in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from batchlane.domain.pace import NoLimit
from batchlane.ports import Limiter
from fakes.budgets import FakeBudgets
from fakes.jobs import FakeJobs
from fakes.ledger import FakeLedger

T = TypeVar("T")


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

    def in_one_transaction(self, work: Callable[[Any], T]) -> T:
        return work(_Repositories(self.state))  # in memory, one thread at a time: nothing to roll back


class _Repositories:
    """What a page thread's transaction reaches (the money repositories), over the state."""

    def __init__(self, state: Any) -> None:
        self.state = state

    @property
    def budgets(self) -> FakeBudgets:
        return FakeBudgets(self.state)

    @property
    def ledger(self) -> FakeLedger:
        return FakeLedger(self.state)
