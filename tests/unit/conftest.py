"""tests/unit needs no server: a test here that asks for the database (``db``, ``app_db``, ``migrated_url``)
fails at once instead of starting the embedded PostgreSQL. The use cases run on the fakes
(tests/unit/usecases/conftest.py, ``svc_on_fakes``); the SQL is held by tests/contract and tests/integration.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def database_url() -> str:
    pytest.fail("tests/unit runs with no server: test the use case on svc_on_fakes, the SQL in tests/contract or tests/integration")
