"""0045_lanes_table.sql on a database that holds rows at the schema before it (0044): every row, key, grant
and uniqueness survives the rename of conversion_batch_jobs to lanes and of batch_row_id to lane_row_id."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from decimal import Decimal
from urllib.parse import urlparse, urlunparse

import pytest

from batchlane.db import Database, connect_params_from_url, ledger
from batchlane.db import jobs as job_repo
from batchlane.db import lanes as lane_repo
from batchlane.db import migrate as migrate_module
from batchlane.db.migrate import ensure_app_role, migrate, migration_files
from batchlane.pdf import plan_chunks

NEW = "0045_lanes_table"


@pytest.fixture
def fresh_db(database_url: str) -> Iterator[tuple[Database, str]]:
    """An empty database of its own on the session's server (the shared one is migrated already), and a role
    that gets the functions' grants there: (owner connection, role name). Both dropped afterwards."""
    name, role = f"lanes_mig_{uuid.uuid4().hex[:10]}", f"lanes_mig_role_{uuid.uuid4().hex[:10]}"
    admin = Database(connect_params_from_url(database_url))
    admin.execute_script(f"CREATE DATABASE {name}")
    parsed = urlparse(database_url)
    owner = Database(connect_params_from_url(urlunparse(parsed._replace(path=f"/{name}"))))
    try:
        yield owner, role
    finally:
        owner.close()
        admin.execute_script(f"DROP DATABASE {name}")
        admin.execute_script(f"DROP ROLE IF EXISTS {role}")
        admin.close()


def test_the_rename_keeps_the_rows_written_before_it(fresh_db, monkeypatch):
    db, role = fresh_db
    before = [(version, sql) for version, sql in migration_files() if version < NEW]
    assert [v for v, _ in migration_files()][len(before)] == NEW, "0045 is the next migration after the previous schema"
    monkeypatch.setattr(migrate_module, "migration_files", lambda: before)
    migrate(db)
    ensure_app_role(db, "not-used-to-sign-in", role=role)

    # Rows at the previous schema, written as the code before the rename wrote them.
    with db.transaction() as tx:
        file_row = job_repo.PgJobs(tx).insert_file(owner_id="owner-1", name="a.pdf", s3_key="uploads/x/a.pdf", size_bytes=10)
        job = job_repo.PgJobs(tx).insert_job(
            file_id=str(file_row.id), owner_id="owner-1", status="waiting_batch", options={}, model_id="m", total_pages=60,
            pages_per_chunk=50, chunks=plan_chunks(60, 50),
        )
    job_id, lane_uuid = str(job.id), str(uuid.uuid4())
    old = db.one(
        """INSERT INTO conversion_batch_jobs (lane_id, state, model_id, member_count, deadline, record_count)
           VALUES (CAST(:lane AS uuid), 'submitted', 'm', 1, now() + interval '1 day', 2) RETURNING id""",
        lane=lane_uuid,
    )
    assert old is not None
    row_id = int(old["id"])
    for chunk, pages in ((0, 50), (1, 10)):
        db.run(
            """INSERT INTO batch_members (batch_row_id, job_id, chunk_index, member_tag, pages, records, state)
               VALUES (:row, CAST(:job AS uuid), :chunk, 'm0', :pages, 1, 'packed')""",
            row=row_id, job=job_id, chunk=chunk, pages=pages,
        )
    for source, job_ref, cost in (("batch", None, "0.50"), ("batch_share", job_id, "0.25")):
        db.run(
            """INSERT INTO cost_ledger (job_id, batch_row_id, source, backend, model_id, cost_usd)
               VALUES (CAST(:job AS uuid), :row, :source, 'batch', 'm', CAST(:cost AS numeric))""",
            job=job_ref, row=row_id, source=source, cost=cost,
        )

    monkeypatch.undo()
    assert migrate(db) == [NEW], "only the rename is left to apply"

    # The rows, read by today's repositories.
    lanes = lane_repo.PgLanes(db)
    lane = lanes.get_row(lane_uuid)
    assert lane is not None and (lane.id, lane.state, lane.record_count) == (row_id, "submitted", 2)
    assert [(m.lane_row_id, m.chunk_index, m.pages, m.state) for m in lanes.members(row_id)] == [(row_id, 0, 50, "packed"), (row_id, 1, 10, "packed")]
    assert [lane.id for lane in lanes.lanes_of_job(job_id)] == [row_id]
    rows = ledger.PgLedger(db).ledger_rows(job_id)
    assert [(r.source, r.lane_row_id, r.cost_usd) for r in rows] == [("batch_share", row_id, Decimal("0.250000"))]
    assert ledger.PgLedger(db).batch_cost_of_job(job_id) == Decimal("0.25")

    # Keys and uniqueness still hold: the sequence continues, one batch ledger row per lane, the foreign key.
    newer = lanes.insert_lane(lane_id=str(uuid.uuid4()), model_id="m", deadline_hours=1, chunks=[])
    assert newer.id > row_id
    again = {"job_id": None, "lane_row_id": row_id, "model_id": "m", "input_tokens": 1, "output_tokens": 1, "cost_usd": Decimal("1"), "metadata": {}}
    assert ledger.PgLedger(db).add_batch_cost(**again) is False, "one_ledger_row_per_lane still refuses a second batch row"
    db.run("DELETE FROM lanes WHERE id = :id", id=row_id)
    assert db.one("SELECT count(*) AS n FROM batch_members WHERE lane_row_id = :id", id=row_id) == {"n": 0}, "ON DELETE CASCADE kept"

    # The functions' role keeps its grants on the renamed table and sequence.
    grants = db.one(
        "SELECT has_table_privilege(:r, 'lanes', 'INSERT') AS t, has_sequence_privilege(:r, 'lanes_id_seq', 'USAGE') AS s", r=role
    )
    assert grants == {"t": True, "s": True}

    # No name in the schema carries the old one.
    left = db.run(
        """SELECT relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'
             AND (relname LIKE '%conversion_batch_jobs%' OR relname LIKE '%batch_row%')
           UNION ALL SELECT conname FROM pg_constraint WHERE conname LIKE '%conversion_batch_jobs%' OR conname LIKE '%batch_row%'
           UNION ALL SELECT table_name || '.' || column_name FROM information_schema.columns
             WHERE table_schema = 'public' AND column_name LIKE '%batch_row%'"""
    )
    assert left == []
