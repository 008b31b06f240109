"""The PostgreSQL unit of work: the repositories of batchlane.ports over one Database.

Inside ``with uow:`` every repository runs on one transaction (COMMIT when the block ends, ROLLBACK
when it raises); outside, on the Database itself, each statement its own transaction.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from batchlane.db.budgets import PgBudgets
from batchlane.db.caps import PgCaps
from batchlane.db.connection import Database, Transaction
from batchlane.db.deliveries import PgDeliveries
from batchlane.db.estimates import PgEstimates
from batchlane.db.folder_jobs import PgFolderJobs
from batchlane.db.jobs import PgJobs, Runner
from batchlane.db.lanes import PgLanes
from batchlane.db.ledger import PgLedger
from batchlane.db.page_forms import PgPageForms
from batchlane.db.rate_limits import PgRateLimits
from batchlane.db.read_model import PgReads
from batchlane.db.retries import PgRetries
from batchlane.db.service_tiers import PgServiceTiers
from batchlane.db.webhook_secrets import PgWebhookSecrets


class PgUnitOfWork:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._tx_context: AbstractContextManager[Transaction] | None = None
        self._tx: Transaction | None = None

    @property
    def runner(self) -> Runner:
        """The open transaction inside ``with``, else the Database (for the SQL not yet behind a repository)."""
        return self._tx if self._tx is not None else self._db

    @property
    def jobs(self) -> PgJobs:
        return PgJobs(self.runner)

    @property
    def ledger(self) -> PgLedger:
        return PgLedger(self.runner)

    @property
    def budgets(self) -> PgBudgets:
        return PgBudgets(self.runner)

    @property
    def folder_jobs(self) -> PgFolderJobs:
        return PgFolderJobs(self.runner)

    @property
    def deliveries(self) -> PgDeliveries:
        return PgDeliveries(self.runner)

    @property
    def lanes(self) -> PgLanes:
        return PgLanes(self.runner)

    @property
    def page_forms(self) -> PgPageForms:
        return PgPageForms(self.runner)

    @property
    def reads(self) -> PgReads:
        return PgReads(self.runner)

    @property
    def caps(self) -> PgCaps:
        return PgCaps(self.runner)

    @property
    def rate_limits(self) -> PgRateLimits:
        return PgRateLimits(self.runner)

    @property
    def retries(self) -> PgRetries:
        return PgRetries(self.runner)

    @property
    def service_tiers(self) -> PgServiceTiers:
        return PgServiceTiers(self.runner)

    @property
    def estimates(self) -> PgEstimates:
        return PgEstimates(self.runner)

    @property
    def webhook_secrets(self) -> PgWebhookSecrets:
        return PgWebhookSecrets(self.runner)

    def check_connection(self) -> None:
        """Ping this thread's connection now and reconnect if it is gone (inside ``with`` the transaction's own is used)."""
        if self._tx is None:
            self._db.check()

    def __enter__(self) -> PgUnitOfWork:
        if self._tx_context is not None:
            raise RuntimeError("a unit of work's blocks do not nest")
        self._tx_context = self._db.transaction()
        self._tx = self._tx_context.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        context, self._tx_context, self._tx = self._tx_context, None, None
        assert context is not None
        context.__exit__(exc_type, exc, tb)  # type: ignore[arg-type]
