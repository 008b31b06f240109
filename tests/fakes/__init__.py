"""In-memory fakes of the repositories and the unit of work in batchlane.ports (not shipped in the layer).

They follow the PostgreSQL adapters' contract: tests/contract runs the same tests against both.
A ``with uow:`` block that raises leaves the state as it was before the block (a snapshot is restored).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fakes.budgets import FakeBudgets
from fakes.caps import FakeCaps
from fakes.deliveries import FakeDeliveries
from fakes.estimates import FakeEstimates
from fakes.folder_jobs import FakeFolderJobs
from fakes.jobs import FakeJobs
from fakes.lanes import FakeLanes
from fakes.ledger import FakeLedger
from fakes.page_forms import FakePageForms
from fakes.rate_limits import FakeRateLimits
from fakes.read_model import FakeReads
from fakes.retries import FakeRetries
from fakes.service_tiers import FakeServiceTiers
from fakes.webhook_secrets import FakeWebhookSecrets


class FakeClock:
    """The fakes' now(): fixed unless a test moves it (PostgreSQL's now() is the transaction's start)."""

    def __init__(self, start: datetime | None = None) -> None:
        self.at = start or datetime(2026, 1, 5, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.at


@dataclass
class FakeState:
    """Every aggregate's rows; each fake repository keeps its own part (attributes added per aggregate)."""

    clock: FakeClock = field(default_factory=FakeClock)
    parts: dict[str, Any] = field(default_factory=dict)

    def part(self, name: str, factory: Any) -> Any:
        """The aggregate's own rows, made on first use (so repositories are added without touching this class)."""
        if name not in self.parts:
            self.parts[name] = factory()
        return self.parts[name]


class FakeUnitOfWork:
    def __init__(self, state: FakeState | None = None) -> None:
        self.state = state or FakeState()
        self._snapshot: dict[str, Any] | None = None
        self.commits = 0
        self.connection_checks = 0

    @property
    def jobs(self) -> FakeJobs:
        return FakeJobs(self.state)

    @property
    def ledger(self) -> FakeLedger:
        return FakeLedger(self.state)

    @property
    def budgets(self) -> FakeBudgets:
        return FakeBudgets(self.state)

    @property
    def folder_jobs(self) -> FakeFolderJobs:
        return FakeFolderJobs(self.state)

    @property
    def deliveries(self) -> FakeDeliveries:
        return FakeDeliveries(self.state)

    @property
    def lanes(self) -> FakeLanes:
        return FakeLanes(self.state)

    @property
    def page_forms(self) -> FakePageForms:
        return FakePageForms(self.state)

    @property
    def retries(self) -> FakeRetries:
        return FakeRetries(self.state)

    @property
    def reads(self) -> FakeReads:
        return FakeReads(self.state)

    @property
    def caps(self) -> FakeCaps:
        return FakeCaps(self.state)

    @property
    def rate_limits(self) -> FakeRateLimits:
        return FakeRateLimits(self.state)

    @property
    def service_tiers(self) -> FakeServiceTiers:
        return FakeServiceTiers(self.state)

    @property
    def estimates(self) -> FakeEstimates:
        return FakeEstimates(self.state)

    @property
    def webhook_secrets(self) -> FakeWebhookSecrets:
        return FakeWebhookSecrets(self.state)

    def check_connection(self) -> None:
        self.connection_checks += 1  # no connection to lose; counted, so a test sees the check was made

    def __enter__(self) -> FakeUnitOfWork:
        if self._snapshot is not None:
            raise RuntimeError("a unit of work's blocks do not nest")
        self._snapshot = copy.deepcopy(self.state.parts)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        snapshot, self._snapshot = self._snapshot, None
        if exc_type is not None and snapshot is not None:
            self.state.parts = snapshot
        else:
            self.commits += 1
