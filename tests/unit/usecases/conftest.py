"""Use cases against in-memory fakes: the AWS ports (usecase_fakes) and, through ``svc_on_fakes``, the repositories
(tests/fakes, held to the PostgreSQL adapters by tests/contract).

``svc_on_fakes`` is a ``FakeServices``: it has no database at all, and no test under tests/unit may start a server
(tests/unit/conftest.py fails any that asks for one).
"""

from __future__ import annotations

import pytest
from usecase_fakes import BUCKET, MODEL, FakeBatchJobs, FakeBus, FakeWorkflows, MemoryStore, NoModelRuntime

from batchlane.config import Settings
from batchlane.domain.cost import PriceTable
from fakes import FakeUnitOfWork
from fakes.services import FakeServices


def _settings() -> Settings:
    return Settings(
        batchlane_bucket=BUCKET,
        batch_conversion_s3_bucket=BUCKET,
        batch_conversion_role_arn="arn:aws:iam::123456789012:role/batch",
        batch_conversion_enabled=True,
        batchlane_model_id=MODEL,
        batchlane_time_scale=1.0,
    )


@pytest.fixture
def fake_uow() -> FakeUnitOfWork:
    """The fake unit of work whose state every ``svc_on_fakes.uow()`` shares (a test seeds and reads through it)."""
    return FakeUnitOfWork()


@pytest.fixture
def svc_on_fakes(fake_uow: FakeUnitOfWork) -> FakeServices:
    settings = _settings()
    return FakeServices(
        settings=settings,
        store=MemoryStore(bucket=BUCKET),
        workflows=FakeWorkflows(),
        bus=FakeBus(),
        prices=PriceTable(settings.batchlane_prices),
        batch_jobs=FakeBatchJobs(),
        model_runtime=NoModelRuntime(),
        state=fake_uow.state,
    )


@pytest.fixture
def svc(svc_on_fakes: FakeServices) -> FakeServices:
    """What a use-case test calls ``svc``: the fakes (a module may give its own)."""
    return svc_on_fakes
