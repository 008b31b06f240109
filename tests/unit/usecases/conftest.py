"""Use cases of the batch lane and the operations against in-memory fakes of the AWS ports.

The database is the real embedded PostgreSQL (tests/conftest.py): the repositories are not
behind a port yet (issue 11, point 2), and the guarded transitions are the rules under test.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from usecase_fakes import BUCKET, MODEL, FakeBatchJobs, FakeBus, FakeWorkflows, MemoryStore, NoModelRuntime

from batchlane.config import Settings
from batchlane.db import Database
from batchlane.domain.cost import PriceTable
from batchlane.runtime import Services


@pytest.fixture
def svc(db: Database) -> Iterator[Services]:
    settings = Settings(
        batchlane_bucket=BUCKET,
        batch_conversion_s3_bucket=BUCKET,
        batch_conversion_role_arn="arn:aws:iam::123456789012:role/batch",
        batch_conversion_enabled=True,
        batchlane_model_id=MODEL,
        batchlane_time_scale=1.0,
    )
    yield Services(
        settings=settings,
        db=db,
        store=MemoryStore(bucket=BUCKET),
        workflows=FakeWorkflows(),
        bus=FakeBus(),
        prices=PriceTable(settings.batchlane_prices),
        batch_jobs=FakeBatchJobs(),
        model_runtime=NoModelRuntime(),
    )
