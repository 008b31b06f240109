"""Use cases against in-memory fakes: the AWS ports (usecase_fakes) and, through ``svc_on_fakes``, the repositories
(fakes, held to the PostgreSQL adapters by tests/contract).

``svc_on_fakes`` has no database at all: a use case that reaches for ``svc.db`` fails loudly, and no test under
tests/unit may start a server (tests/unit/conftest.py fails any that asks for one).
"""

from __future__ import annotations

from typing import Any

import pytest
from usecase_fakes import BUCKET, MODEL, FakeBatchJobs, FakeBus, FakeWorkflows, MemoryStore, NoModelRuntime

from batchlane.config import Settings
from batchlane.domain.cost import PriceTable
from batchlane.runtime import Services
from fakes import FakeUnitOfWork
from fakes.admission import FakeChunkAdmissions
from fakes.page_threads import FakePageThreadDatabase


def _settings() -> Settings:
    return Settings(
        batchlane_bucket=BUCKET,
        batch_conversion_s3_bucket=BUCKET,
        batch_conversion_role_arn="arn:aws:iam::123456789012:role/batch",
        batch_conversion_enabled=True,
        batchlane_model_id=MODEL,
        batchlane_time_scale=1.0,
    )


def _services(db: Any, **extra: Any) -> Services:
    settings = _settings()
    return Services(
        settings=settings,
        db=db,
        store=MemoryStore(bucket=BUCKET),
        workflows=FakeWorkflows(),
        bus=FakeBus(),
        prices=PriceTable(settings.batchlane_prices),
        batch_jobs=FakeBatchJobs(),
        model_runtime=NoModelRuntime(),
        **extra,
    )


class NoDatabase:
    """Where a Database would be: any use raises, naming the rule it breaks."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"a use case reached for svc.db.{name}: use cases take the unit of work (svc.uow()), never the database")


@pytest.fixture
def fake_uow() -> FakeUnitOfWork:
    """The fake unit of work whose state every ``svc_on_fakes.uow()`` shares (a test seeds and reads through it)."""
    return FakeUnitOfWork()


@pytest.fixture
def svc_on_fakes(fake_uow: FakeUnitOfWork) -> Services:
    return _services(
        NoDatabase(),
        unit_of_work=lambda: FakeUnitOfWork(fake_uow.state),
        admissions=FakeChunkAdmissions(fake_uow.state.clock.now),
        page_threads=FakePageThreadDatabase(fake_uow.state),
    )


@pytest.fixture
def svc(svc_on_fakes: Services) -> Services:
    """What a use-case test calls ``svc``: the fakes (a module may give its own)."""
    return svc_on_fakes
