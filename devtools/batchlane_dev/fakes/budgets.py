"""batchlane.ports.BudgetRepository in memory: the contract of db/budgets.py's Pg adapter (tests/contract)."""

from __future__ import annotations

from typing import Any


class FakeBudgets:
    def __init__(self, state: Any) -> None:  # a batchlane_dev.fakes.FakeState
        self.state = state
