"""The repositories' contract tests run twice: on the in-memory fake and on PostgreSQL (the real server).

A test takes ``uow`` and uses only batchlane.ports' interfaces, so what passes on one passes on the
other; the fake cannot drift from the SQL. ``-k fake`` runs them with no server.
"""

from __future__ import annotations

from collections.abc import Iterator
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
