"""The repositories' contract tests run twice: on the in-memory fake and on PostgreSQL (the real server).

A test takes ``uow`` and uses only batchlane.ports' interfaces, so what passes on one passes on the
other; the fake cannot drift from the SQL. ``-k fake`` runs them with no server.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest


@pytest.fixture(params=["fake", "postgres"])
def uow(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "fake":
        from fakes import FakeUnitOfWork

        yield FakeUnitOfWork()
        return
    from batchlane.db.uow import PgUnitOfWork

    database = request.getfixturevalue("db")
    yield PgUnitOfWork(database)


@pytest.fixture
def new_lane(uow: Any) -> Any:
    """A lane's lane id for ledger rows to point at (the foreign key the ledger's lanes need), carrying one chunk of a job."""

    def make(job_id: str, chunk_index: int = 0) -> int:
        return int(uow.lanes.insert_lane(lane_id=str(uuid.uuid4()), model_id="model-a", deadline_hours=24, chunks=[(job_id, chunk_index, 2)]).id)

    return make


@pytest.fixture
def now(uow: Any) -> datetime:
    """The side's clock: the fake's (fixed), or the wall clock PostgreSQL's now() follows."""
    from fakes import FakeUnitOfWork

    return uow.state.clock.now() if isinstance(uow, FakeUnitOfWork) else datetime.now(UTC)


@pytest.fixture
def tick(uow: Any) -> Callable[[], None]:
    """A moment passes between two writes: the fake's clock moves a second, PostgreSQL's now() moves by itself."""
    from fakes import FakeUnitOfWork

    def step() -> None:
        if isinstance(uow, FakeUnitOfWork):
            uow.state.clock.at += timedelta(seconds=1)

    return step
