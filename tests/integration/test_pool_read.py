"""The packer's bounded read of the pool (db/lanes.PgLanes.read_pool, batch/packer.plan_turn): a turn reads and locks
only the fair-order prefix it can pack, and plans what a read of the whole pool would. Real PostgreSQL."""

from __future__ import annotations

import dataclasses
import random
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from batchlane.batch.packer import plan_turn
from batchlane.db import Database, connect_params_from_url
from batchlane.db import jobs as job_repo
from batchlane.db import lanes as rows
from batchlane.domain.limits import estimated_record_bytes
from batchlane.domain.pool import read_budget
from batchlane.pdf import plan_chunks
from fakes import FakeUnitOfWork
from fakes.pool import lane_rows

MAX_RECORDS = 400
QUOTA = 3
SETTINGS = SimpleNamespace(
    batch_conversion_max_concurrent_jobs=QUOTA,
    batch_conversion_max_records=MAX_RECORDS,
    batch_conversion_min_records=60,
    batch_pool_window_s=900.0,
    batch_conversion_max_job_mb=1,  # 1 MB: some chunks' estimated bytes fill a job before its records do
)


@pytest.fixture
def db(app_db: Database) -> Database:
    return app_db


def backlog(db: Database, rng: random.Random, *, jobs: int, model: str, owners: list[str]) -> list[str]:
    """``jobs`` parked jobs of 1–300 pages (chunks of 50) for ``owners`` on ``model``; some waited past the window,
    some chunks' sizes unknown; one owner has a lane in flight."""
    made = []
    with db.transaction() as tx:
        for _ in range(jobs):
            owner = rng.choice(owners)
            pages = rng.randint(1, 300)
            spans = plan_chunks(pages, 50)
            file_row = job_repo.PgJobs(tx).insert_file(owner_id=owner, name="a.pdf", s3_key="uploads/x/a.pdf", size_bytes=10)
            job = job_repo.PgJobs(tx).insert_job(
                file_id=str(file_row.id),
                owner_id=owner,
                status="waiting_batch",
                options={},
                model_id=model,
                total_pages=pages,
                pages_per_chunk=50,
                chunks=[],
            )
            sizes = {s.index: rng.choice([2_000, 40_000, 90_000]) for s in spans if rng.random() < 0.8}
            job_repo.PgJobs(tx).insert_chunks(str(job.id), spans, status="waiting_batch", chunk_bytes=sizes)
            waited = rng.choice([0, 600, 1800, 7200])
            tx.run(
                "UPDATE large_conversion_jobs SET pooled_at = now() - make_interval(secs => :s), created_at = now() - make_interval(secs => :c) WHERE id = CAST(:id AS uuid)",
                s=waited,
                c=rng.randint(0, 86_400),
                id=str(job.id),
            )
            made.append(str(job.id))
        rows.PgLanes(tx).insert_lane(lane_id=str(uuid.uuid4()), model_id=model, deadline_hours=26, chunks=[(made[0], 0, 50)])  # preparing: holds a slot
    return made


class _Rollback(Exception):
    pass


@contextmanager
def rolled_back(db: Database) -> Iterator[Any]:
    """A transaction that is always rolled back: the plans are read, nothing is packed."""
    try:
        with db.transaction() as tx:
            yield tx
            raise _Rollback
    except _Rollback:
        pass


def ours(plans: list, model: str):  # type: ignore[no-untyped-def, type-arg]
    return [plan for m, plan in plans if m == model]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_the_bounded_turn_sends_the_same_bedrock_jobs_as_a_read_of_the_whole_pool(db, seed):
    rng = random.Random(seed)
    model = f"m-bounded-{uuid.uuid4().hex[:8]}"
    owners = [f"owner-{uuid.uuid4().hex[:8]}" for _ in range(rng.randint(1, 6))]
    backlog(db, rng, jobs=rng.choice([5, 40, 120]), model=model, owners=owners)
    with rolled_back(db) as tx:  # both plans read from the same pool, at the same now()
        whole = rows.PgLanes(tx).read_pool()
        bounded = plan_turn(rows.PgLanes(tx), SETTINGS, bounded=True)
        unbounded = plan_turn(rows.PgLanes(tx), SETTINGS, bounded=False)
    [b], [u] = ours(bounded, model), ours(unbounded, model)
    assert b.bedrock_jobs == u.bedrock_jobs, "the same lanes, chunk for chunk"
    assert set(b.leave) <= set(u.leave), "nobody is let go that the whole pool would keep"
    ours_pages = sum(c.pages for c in whole.chunks if c.model_id == model)
    if ours_pages <= read_budget(QUOTA - 1, MAX_RECORDS):
        assert b == u, "a backlog one turn can read whole: the same plan in every respect"


def test_a_chunk_whose_records_are_its_pictures_is_read_by_them_not_by_its_pages(db):
    """describeFigures (0044_chunk_records.sql): a born-digital chunk of 7 pages with 12 pictures weighs 12 records in the
    pool, one of 3 pages with none 0; a PDF's chunk (records NULL) its pages."""
    model = f"m-records-{uuid.uuid4().hex[:8]}"
    with db.transaction() as tx:
        for pages, records in ((7, {0: 12}), (3, {0: 0}), (40, None)):
            file_row = job_repo.PgJobs(tx).insert_file(owner_id="owner-records", name="a.docx", s3_key="uploads/x/a.docx", size_bytes=10)
            job = job_repo.PgJobs(tx).insert_job(
                file_id=str(file_row.id), owner_id="owner-records", status="waiting_batch", options={}, model_id=model, total_pages=pages, pages_per_chunk=50, chunks=[]
            )
            job_repo.PgJobs(tx).insert_chunks(str(job.id), plan_chunks(pages, 50), status="waiting_batch", chunk_records=records)
    read = rows.PgLanes(db).read_pool()
    assert sorted(c.pages for c in read.chunks if c.model_id == model) == [0, 12, 40]


def test_the_sql_estimate_of_a_chunks_bytes_is_the_domains(db):
    rng = random.Random(7)
    model = f"m-bytes-{uuid.uuid4().hex[:8]}"
    backlog(db, rng, jobs=30, model=model, owners=[f"owner-{uuid.uuid4().hex[:8]}"])
    read = rows.PgLanes(db).read_pool()
    mine = [c for c in read.chunks if c.model_id == model]
    assert read.lightest[model] == min(estimated_record_bytes(c.source_bytes, c.pages) for c in mine)
    assert read.smallest[model] == min(c.pages for c in mine)


def test_a_turn_reads_and_locks_a_bounded_part_of_the_pool_whatever_the_backlog(db, migrated_url):
    from batchlane_dev.local.stack import app_role_url

    model = f"m-big-{uuid.uuid4().hex[:8]}"
    owners = [f"owner-{uuid.uuid4().hex[:8]}" for _ in range(4)]
    other = Database(connect_params_from_url(app_role_url(migrated_url)))
    budget = read_budget(QUOTA - 1, MAX_RECORDS)  # the lane in flight takes one slot
    try:
        seen: list[tuple[bool, int, int, int, int]] = []
        for jobs in (150, 450):  # the second backlog is four times the first
            backlog(db, random.Random(jobs), jobs=jobs - (150 if seen else 0), model=model, owners=owners)
            with rolled_back(db) as tx:
                plan_turn(rows.PgLanes(tx), SETTINGS, bounded=True)
                read = rows.PgLanes(tx).read_pool(budgets={model: budget})
                mine = [c for c in read.chunks if c.model_id == model]
                # what the turn holds locked, counted from another connection: the model's parked jobs it cannot take
                free = other.one(
                    "SELECT count(*) AS n FROM (SELECT id FROM large_conversion_jobs WHERE model_id = :m AND status = 'waiting_batch' FOR UPDATE SKIP LOCKED) x",
                    m=model,
                )
                total = tx.one("SELECT count(*) AS n FROM large_conversion_jobs WHERE model_id = :m AND status = 'waiting_batch'", m=model)
                assert free is not None and total is not None
                seen.append(
                    (read.truncated[model], sum(c.pages for c in mine), len({c.job_id for c in mine}), int(total["n"]) - int(free["n"]), int(total["n"]))
                )
        for truncated, pages, jobs_read, locked, total in seen:
            assert truncated
            assert budget <= pages < budget + 50, "the prefix stops at the first chunk past the budget"
            assert locked == jobs_read < total, "only the jobs read are locked"
        assert seen[1][4] > 2 * seen[0][4] and seen[1][2] <= 2 * seen[0][2], "the backlog grew; what a turn reads did not follow it"
    finally:
        other.close()


def _specs(rng: random.Random, *, jobs: int, owners: list[str]) -> list[dict[str, Any]]:
    """A backlog as data, to be written twice: owners, sizes, unknown chunk sizes, waits and distinct ages (no tie
    of created_at, where the order falls back on ids that differ between the two sides)."""
    ages = rng.sample(range(86_400), jobs)
    specs = []
    for age in ages:
        pages = rng.randint(1, 300)
        spans = plan_chunks(pages, 50)
        sizes = {s.index: rng.choice([2_000, 40_000, 90_000]) for s in spans if rng.random() < 0.8}
        # A born-digital document whose pictures are described: a chunk's records are its pictures, none or more than its pages.
        records = {s.index: rng.choice([0, 1, 7, 120]) for s in spans} if rng.random() < 0.3 else None
        specs.append(
            {"owner": rng.choice(owners), "pages": pages, "spans": spans, "sizes": sizes, "records": records, "waited": rng.choice([0, 600, 1800, 7200]), "age": age}
        )
    return specs


def _on_postgres(db: Database, specs: list[dict[str, Any]], model: str) -> list[str]:
    made = []
    with db.transaction() as tx:
        for spec in specs:
            file_row = job_repo.PgJobs(tx).insert_file(owner_id=spec["owner"], name="a.pdf", s3_key="uploads/x/a.pdf", size_bytes=10)
            job = job_repo.PgJobs(tx).insert_job(file_id=str(file_row.id), owner_id=spec["owner"], status="waiting_batch", options={}, model_id=model, total_pages=spec["pages"],
                pages_per_chunk=50, chunks=[],
            )  # fmt: skip
            job_repo.PgJobs(tx).insert_chunks(str(job.id), spec["spans"], status="waiting_batch", chunk_bytes=spec["sizes"], chunk_records=spec["records"])
            tx.run(
                "UPDATE large_conversion_jobs SET pooled_at = now() - make_interval(secs => :s), created_at = now() - make_interval(secs => :c) WHERE id = CAST(:id AS uuid)",
                s=spec["waited"],
                c=spec["age"],
                id=str(job.id),
            )
            made.append(str(job.id))
        rows.PgLanes(tx).insert_lane(lane_id=str(uuid.uuid4()), model_id=model, deadline_hours=26, chunks=[(made[0], 0, 50)])
    return made


def _in_memory(specs: list[dict[str, Any]], model: str) -> tuple[FakeUnitOfWork, list[str]]:
    uow, made = FakeUnitOfWork(), []
    now = uow.state.clock.now()
    for spec in specs:
        file_row = uow.jobs.insert_file(owner_id=spec["owner"], name="a.pdf", s3_key="uploads/x/a.pdf", size_bytes=10)
        job = uow.jobs.insert_job(
            file_id=file_row.id, owner_id=spec["owner"], status="splitting", options={}, model_id=model, total_pages=0, pages_per_chunk=50, chunks=[]
        )
        parked = uow.jobs.finish_split(
            job.id, parked=True, total_pages=spec["pages"], chunks=spec["spans"], chunk_bytes=spec["sizes"], chunk_records=spec["records"]
        )
        assert parked is not None
        uow.jobs.put_job(dataclasses.replace(parked, created_at=now - timedelta(seconds=spec["age"])))
        lane_rows(uow.state).pooled_at[job.id] = now - timedelta(seconds=spec["waited"])
        made.append(job.id)
    uow.lanes.insert_lane(lane_id=str(uuid.uuid4()), model_id=model, deadline_hours=26, chunks=[(made[0], 0, 50)])
    return uow, made


def _seen(read: Any, model: str, made: list[str]) -> tuple[Any, ...]:
    """A read of the pool in terms both sides share: each job by its place in the backlog, waits to the minute."""
    index = {job_id: n for n, job_id in enumerate(made)}
    chunks = [(index[c.job_id], c.chunk_index, c.pages, c.source_bytes, round(c.waited_s / 60)) for c in read.chunks if c.model_id == model]
    return chunks, read.truncated.get(model), read.smallest.get(model), read.lightest.get(model)


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_the_fake_reads_the_pool_as_the_sql_does(db, seed):
    """The in-memory LaneRepository (fakes.pool) and read_pool's SQL: the same fair order, the same
    prefix under a budget, the same truncated / smallest / lightest, on a backlog of every shape."""
    rng = random.Random(seed)
    model = f"m-fake-{uuid.uuid4().hex[:8]}"
    owners = [f"owner-{uuid.uuid4().hex[:8]}" for _ in range(rng.randint(1, 6))]
    specs = _specs(rng, jobs=rng.choice([5, 40, 120]), owners=owners)
    on_pg = _on_postgres(db, specs, model)
    fake, in_memory = _in_memory(specs, model)
    budget = rng.choice([50, 400, 2_000])

    for kwargs in ({}, {"budgets": {model: budget}}, {"budgets": {}, "default_budget": budget}, {"budgets": {model: 0}}):
        sql = rows.PgLanes(db).read_pool(**kwargs)
        assert _seen(fake.lanes.read_pool(**kwargs), model, in_memory) == _seen(sql, model, on_pg), kwargs
    assert fake.lanes.in_flight_by_model() == {model: 1} and rows.PgLanes(db).in_flight_by_model()[model] == 1
