"""The unit of work: one transaction over the repositories (db/uow.py; the fake: tests/fakes)."""

from __future__ import annotations

from typing import Protocol

from batchlane.ports.caps import CapCounts, RateLimits
from batchlane.ports.estimates import EstimateRepository
from batchlane.ports.folder_jobs import FolderJobRepository
from batchlane.ports.jobs import JobRepository
from batchlane.ports.lanes import LaneRepository
from batchlane.ports.model_probes import PageFormRepository, ServiceTierRepository
from batchlane.ports.money import BudgetRepository, LedgerRepository
from batchlane.ports.reads import ReadModel
from batchlane.ports.retries import RetryRepository
from batchlane.ports.webhooks import DeliveryRepository, WebhookSecretRepository


class UniqueViolation(Exception):
    """A unique constraint refused a row (two writers raced for one slot); ``constraint`` names it
    (``one_live_job_per_file``). PostgreSQL's adapters raise db.driver_errors.UniqueViolation, a subclass; the fakes this."""

    def __init__(self, constraint: str, detail: object = None) -> None:
        super().__init__(detail if detail is not None else constraint)
        self.constraint = constraint


class UnitOfWork(Protocol):
    """One transaction over the repositories: what a use case does inside ``with uow:`` commits together
    when the block ends, and none of it when the block raises. Outside a ``with`` each call is its own
    transaction. Blocks do not nest."""

    @property
    def jobs(self) -> JobRepository: ...
    @property
    def ledger(self) -> LedgerRepository: ...
    @property
    def budgets(self) -> BudgetRepository: ...
    @property
    def folder_jobs(self) -> FolderJobRepository: ...
    @property
    def deliveries(self) -> DeliveryRepository: ...
    @property
    def lanes(self) -> LaneRepository: ...
    @property
    def page_forms(self) -> PageFormRepository: ...
    @property
    def retries(self) -> RetryRepository: ...
    @property
    def service_tiers(self) -> ServiceTierRepository: ...
    @property
    def reads(self) -> ReadModel: ...
    @property
    def caps(self) -> CapCounts: ...
    @property
    def rate_limits(self) -> RateLimits: ...
    @property
    def estimates(self) -> EstimateRepository: ...
    @property
    def webhook_secrets(self) -> WebhookSecretRepository: ...

    def check_connection(self) -> None:
        """Make sure the next statement finds the database (reconnect now if the connection died): before a write
        that follows minutes of other work (a chunk's model calls), whose booking must not be lost."""
        ...

    def __enter__(self) -> UnitOfWork: ...
    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None: ...
