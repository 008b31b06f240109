"""The repositories' contract tests run twice: on the in-memory fake and on PostgreSQL (the real server).

A test takes ``uow`` and uses only batchlane.ports' interfaces, so what passes on one passes on the
other; the fake cannot drift from the SQL. ``-k fake`` runs them with no server.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest


@pytest.fixture(params=["fake", "postgres"])
def uow(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "fake":
        from batchlane_dev.fakes import FakeUnitOfWork

        yield FakeUnitOfWork()
        return
    from batchlane.db.uow import PgUnitOfWork

    database = request.getfixturevalue("db")
    yield PgUnitOfWork(database)


@pytest.fixture
def new_lane(uow: Any) -> Any:
    """A lane's batch row id for ledger rows to point at, carrying one chunk of a job (the lanes have no repository yet: on PostgreSQL the
    row is written by db/batch_rows.insert_lane, the foreign key the ledger's batch rows need; the fake needs none)."""
    from batchlane_dev.fakes import FakeUnitOfWork

    made: list[int] = []

    def make(job_id: str, chunk_index: int = 0) -> int:
        if isinstance(uow, FakeUnitOfWork):
            made.append(len(made) + 1)
            return made[-1]
        from batchlane.db import batch_rows

        return batch_rows.insert_lane(uow.runner, lane_id=str(uuid.uuid4()), model_id="model-a", deadline_hours=24, chunks=[(job_id, chunk_index, 2)]).id

    return make


@pytest.fixture
def now(uow: Any) -> datetime:
    """The side's clock: the fake's (fixed), or the wall clock PostgreSQL's now() follows."""
    from batchlane_dev.fakes import FakeUnitOfWork

    return uow.state.clock.now() if isinstance(uow, FakeUnitOfWork) else datetime.now(UTC)
