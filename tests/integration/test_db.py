"""The schema and the repositories against a real PostgreSQL."""

from __future__ import annotations

import uuid
from dataclasses import FrozenInstanceError, fields
from decimal import Decimal

import pytest
from pg8000.exceptions import DatabaseError

from batchlane.db import Database, connect_params_from_url, ledger
from batchlane.db import jobs as job_repo
from batchlane.db import lanes as rows
from batchlane.db.driver_errors import UniqueViolation
from batchlane.db.migrate import migrate, migration_files
from batchlane.domain import status as st
from batchlane.pdf import plan_chunks


@pytest.fixture
def db(app_db: Database) -> Database:
    """The repositories run as the functions do: as ``batchlane_app`` (no DDL), not as the owner."""
    return app_db


def make_job(db: Database, *, status: str = "pending", pages: int = 120, owner: str = "owner-1") -> str:
    with db.transaction() as tx:
        file_row = job_repo.PgJobs(tx).insert_file(owner_id=owner, name="a.pdf", s3_key="uploads/x/a.pdf", size_bytes=10)
        job = job_repo.PgJobs(tx).insert_job(
            file_id=str(file_row.id),
            owner_id=owner,
            status=status,
            options={},
            model_id="m",
            total_pages=pages,
            pages_per_chunk=50,
            chunks=plan_chunks(pages, 50),
        )
    return str(job.id)


def test_migrate_is_idempotent_and_applies_every_file(db, migrated_url):
    owner = Database(connect_params_from_url(migrated_url))  # migrations are the master's (migrate)
    try:
        assert migrate(owner) == []  # the session fixture applied them already
    finally:
        owner.close()
    applied = {r["version"] for r in db.run("SELECT version FROM schema_migrations")}
    assert applied == {version for version, _ in migration_files()}


def test_statuses_are_constrained(db):
    job_id = make_job(db)
    with pytest.raises(DatabaseError):
        db.run("UPDATE large_conversion_jobs SET status = 'done' WHERE id = CAST(:id AS uuid)", id=job_id)


def test_one_live_job_per_file(db):
    job_id = make_job(db)
    file_id = str(job_repo.PgJobs(db).get_job(job_id).file_id)
    with pytest.raises(UniqueViolation) as refused:
        job_repo.PgJobs(db).insert_job(
            file_id=file_id, owner_id="owner-1", status="pending", options={}, model_id="m", total_pages=1, pages_per_chunk=50, chunks=plan_chunks(1, 50)
        )
    assert refused.value.constraint == "one_live_job_per_file"


@pytest.mark.parametrize(("row_type", "table"), [(job_repo.JobRow, "large_conversion_jobs"), (job_repo.ChunkRow, "chunk_jobs"), (job_repo.FileRow, "files")])
def test_each_typed_row_reads_only_columns_its_table_has(db, row_type, table):
    columns = {r["column_name"] for r in db.run("SELECT column_name FROM information_schema.columns WHERE table_name = :t", t=table)}
    assert {f.name for f in fields(row_type)} <= columns


def test_rows_come_back_typed_with_string_ids_and_cannot_be_changed(db):
    job_id = make_job(db)
    job = job_repo.PgJobs(db).get_job(job_id)
    chunk = job_repo.PgJobs(db).get_chunks(job_id)[0]
    file_row = job_repo.PgJobs(db).get_file(job.file_id)
    assert (job.id, chunk.job_id, file_row.id) == (job_id, job_id, job.file_id)  # use cases compare them with the ids they were given
    assert (job.options, job.total_cost_usd, chunk.result_key, file_row.source_bucket) == ({}, Decimal(0), None, None)
    with pytest.raises(FrozenInstanceError):
        job.status = "completed"  # type: ignore[misc]


def test_transitions_are_guarded_on_the_current_status(db):
    job_id = make_job(db)
    assert job_repo.PgJobs(db).move_job(job_id, st.start()).status == "processing"
    assert job_repo.PgJobs(db).move_job(job_id, st.pause_budget()).status == "paused_budget"
    assert job_repo.PgJobs(db).move_job(job_id, st.pause_budget()) is None
    assert job_repo.PgJobs(db).move_job(job_id, st.resume()).status == "processing"


def test_chunk_heartbeat_is_guarded_on_worker_and_status(db):
    job_id = make_job(db)
    job_repo.PgJobs(db).move_job(job_id, st.start())
    assert job_repo.PgJobs(db).claim_chunk(job_id, 0, "worker-a").attempts == 1
    assert job_repo.PgJobs(db).heartbeat_chunk(job_id, 0, "worker-a", 3)
    assert not job_repo.PgJobs(db).heartbeat_chunk(job_id, 0, "worker-b", 3)
    db.run("UPDATE chunk_jobs SET status = 'cancelled' WHERE job_id = CAST(:id AS uuid)", id=job_id)
    assert not job_repo.PgJobs(db).heartbeat_chunk(job_id, 0, "worker-a", 4)


def make_lane(db: Database, *chunks: tuple[str, int], model: str = "m") -> rows.Lane:
    """A lane (one Bedrock job) carrying ``chunks`` — (job id, chunk index) — as the packer inserts it."""
    return rows.PgLanes(db).insert_lane(lane_id=str(uuid.uuid4()), model_id=model, deadline_hours=26, chunks=[(j, c, 50) for j, c in chunks])


def test_a_lane_tags_its_jobs_in_order_and_a_chunk_rides_in_one_open_lane_at_a_time(db):
    a, b = make_job(db, status="waiting_batch"), make_job(db, status="waiting_batch")
    lane = make_lane(db, (a, 0), (b, 0), (a, 1))
    assert (lane.state, lane.job_id, lane.member_count) == ("preparing", None, 2)
    assert [(m.job_id, m.chunk_index, m.member_tag, m.state) for m in rows.PgLanes(db).members(lane.id)] == [
        (a, 0, "m0", "packed"),
        (a, 1, "m0", "packed"),
        (b, 0, "m1", "packed"),
    ]
    assert rows.PgLanes(db).member_job_ids(lane.id) == [a, b]
    with pytest.raises(UniqueViolation) as refused:
        make_lane(db, (a, 1))
    assert refused.value.constraint == "one_open_lane_per_chunk"
    rows.PgLanes(db).leave_lanes(a)
    again = make_lane(db, (a, 1))  # once it left that lane, the chunk may ride in another
    assert [m.chunk_index for m in rows.PgLanes(db).members(again.id)] == [1]
    assert [r.id for r in rows.PgLanes(db).lanes_of_job(a)] == [lane.id, again.id]


def test_the_batch_ledger_row_is_written_at_most_once_per_lane_and_each_member_has_one_share(db):
    a, b = make_job(db, status="waiting_batch"), make_job(db, status="waiting_batch")
    lane = make_lane(db, (a, 0), (b, 0))
    kwargs = {"job_id": None, "lane_row_id": lane.id, "model_id": "m", "input_tokens": 10, "output_tokens": 1, "cost_usd": Decimal("0.5"), "metadata": {}}
    assert ledger.PgLedger(db).add_batch_cost(**kwargs) is True
    assert ledger.PgLedger(db).add_batch_cost(**kwargs) is False
    for job_id, cost in ((a, Decimal("0.3")), (b, Decimal("0.2")), (a, Decimal("9"))):  # the second share of a is refused
        ledger.PgLedger(db).add_batch_share(job_id=job_id, lane_row_id=lane.id, model_id="m", input_tokens=5, output_tokens=1, cost_usd=cost, metadata={})
    assert (ledger.PgLedger(db).job_total(a), ledger.PgLedger(db).job_total(b)) == (Decimal("0.3"), Decimal("0.2")), (
        "a job counts its share, never the lane's row"
    )
    assert (ledger.PgLedger(db).batch_cost_of_job(a), ledger.PgLedger(db).batch_cost_of_job(b)) == (Decimal("0.3"), Decimal("0.2"))
    with pytest.raises(DatabaseError):  # only the lane's own row may have no job
        db.run(
            """INSERT INTO cost_ledger (job_id, lane_row_id, source, backend, model_id, input_tokens, output_tokens, cost_usd, metadata)
               VALUES (NULL, :row, 'batch_share', 'batch', 'm', 0, 0, 0, '{}')""",
            row=lane.id,
        )


def test_guarded_close_has_exactly_one_winner_and_collects_the_members_still_packed(db):
    a, b = make_job(db, status="waiting_batch"), make_job(db, status="waiting_batch")
    lane = make_lane(db, (a, 0), (b, 0))
    rows.PgLanes(db).mark_submitted(
        lane.lane_id, arn=f"arn:aws:bedrock:us-east-1:1:model-invocation-job/{uuid.uuid4().hex[:8]}", name="n", output_uri="s3://b/o/", deadline_hours=26
    )
    rows.PgLanes(db).leave_lanes(b)
    first = rows.PgLanes(db).close(lane.lane_id, st.close(), end_state="Completed")
    second = rows.PgLanes(db).close(lane.lane_id, st.close(), end_state="Completed")
    assert first is not None and second is None
    rows.PgLanes(db).record_accepted(lane.id, {(a, 0): 7, (b, 0): 9})  # only a collected member takes a count
    assert [(m.job_id, m.state, m.accepted) for m in rows.PgLanes(db).members(lane.id)] == [(a, "collected", 7), (b, "left", None)]
    assert rows.PgLanes(db).job_lane_outcome(a) == rows.LaneOutcome(settled=False, accepted=7, lanes=1), "chunks 1 and 2 are still in the pool"
    rows.PgLanes(db).leave_pool([a], reason="pool_too_small")
    assert rows.PgLanes(db).job_lane_outcome(a).settled is True


def test_the_pool_is_every_unpacked_chunk_of_a_parked_job_owners_in_turns_busy_owners_later(db):
    x, y, z = (f"owner-{uuid.uuid4().hex[:8]}" for _ in range(3))
    x1, x2 = make_job(db, status="waiting_batch", pages=100, owner=x), make_job(db, status="waiting_batch", pages=100, owner=x)
    y1 = make_job(db, status="waiting_batch", pages=100, owner=y)
    z1, z2 = make_job(db, status="waiting_batch", pages=100, owner=z), make_job(db, status="waiting_batch", pages=100, owner=z)
    make_lane(db, (z1, 0), (z1, 1))  # z has a lane in flight: its next job waits a turn
    gone = make_job(db, status="waiting_batch", pages=100, owner=y)
    rows.PgLanes(db).leave_pool([gone], reason="process_now")
    ours = {x1: "x1", x2: "x2", y1: "y1", z2: "z2", z1: "z1", gone: "gone"}
    pool = [(ours[c.job_id], c.chunk_index, c.pages) for c in rows.PgLanes(db).pool_chunks() if c.job_id in ours]
    assert pool == [("x1", 0, 50), ("x1", 1, 50), ("y1", 0, 50), ("y1", 1, 50), ("x2", 0, 50), ("x2", 1, 50), ("z2", 0, 50), ("z2", 1, 50)]


def test_terminal_status_is_never_overwritten_by_a_late_event(db):
    job_id = make_job(db, status="waiting_batch")
    lane = make_lane(db, (job_id, 0))
    arn = f"arn:aws:bedrock:us-east-1:1:model-invocation-job/late-{uuid.uuid4().hex[:8]}"
    rows.PgLanes(db).mark_submitted(lane.lane_id, arn=arn, name="n2", output_uri="s3://b/o/", deadline_hours=26)
    rows.PgLanes(db).record_status(arn, "Completed")
    assert rows.PgLanes(db).record_status(arn, "InProgress").bedrock_status == "Completed"


def test_a_connection_killed_while_idle_is_reestablished_before_the_next_write(db, migrated_url):
    job_id = make_job(db)
    pid = db.one("SELECT pg_backend_pid() AS pid")["pid"]
    killer = Database(connect_params_from_url(migrated_url))
    killer.run("SELECT pg_terminate_backend(:pid)", pid=pid)
    killer.close()
    db.check()  # what the chunk processor does before its final writes
    assert job_repo.PgJobs(db).move_job(job_id, st.start()) is not None
    assert db.one("SELECT pg_backend_pid() AS pid")["pid"] != pid


def test_holds_close_once(db):
    job_id = make_job(db)
    ledger.PgLedger(db).place_hold(job_id=job_id, owner_id="owner-1", amount_usd=Decimal("2"), hours=6)
    assert ledger.PgLedger(db).close_hold(job_id, outcome="settled", settled_usd=Decimal("1"))
    assert not ledger.PgLedger(db).close_hold(job_id, outcome="cancelled")
    assert ledger.PgLedger(db).get_hold(job_id).outcome == "settled"


def test_leaving_the_batch_lane_moves_job_and_chunks_once(db):
    """The one resume transaction (the lane's resume and process now share it)."""
    from batchlane.batch.resume import leave_batch_lane
    from batchlane.db.uow import PgUnitOfWork

    job_id = make_job(db, status="waiting_batch")
    ledger.PgLedger(db).place_hold(job_id=job_id, owner_id="owner-1", amount_usd=Decimal("2"), hours=30)
    with PgUnitOfWork(db) as uow:
        assert leave_batch_lane(uow, job_id, primed=True, batch_cost_usd=Decimal("0.5"), hold_hours=6)
    job = job_repo.PgJobs(db).get_job(job_id)
    assert (job.status, job.batch_primed, job.batch_cost_usd) == ("pending", True, Decimal("0.5"))
    assert {c.status for c in job_repo.PgJobs(db).get_chunks(job_id)} == {"pending"}
    hold = db.one("SELECT expires_at < now() + interval '7 hours' AS back FROM funds_holds WHERE job_id = CAST(:id AS uuid)", id=job_id)
    assert hold["back"], "the hold is back to the on-demand window"
    with PgUnitOfWork(db) as uow:
        assert not leave_batch_lane(uow, job_id, primed=False, hold_hours=6), "a job no longer parked stays as it is"
    assert job_repo.PgJobs(db).get_job(job_id).batch_primed is True


def test_migration_0030_moves_the_jobs_state_out_of_the_users_options(db):
    """Jobs written before 0030 keep their state (primed answers, lane cost, pause, process now, a running retry)
    in the new columns, and their options keep only what the user asked for."""
    job_id = make_job(db, status="pending")
    legacy = {
        "highFidelity": True,
        "_batchLane": True,
        "_batchPrimed": True,
        "_batchCostUsd": "0.0123",
        "_pauseSettled": True,
        "_budgetResumes": 2,
        "_processNow": True,
        "_maxPages": 40,
        "_retry": {"attempt": 3, "pages": [4, 7]},
    }
    db.run("UPDATE large_conversion_jobs SET options = CAST(:o AS jsonb) WHERE id = CAST(:id AS uuid)", o=legacy, id=job_id)
    sql = dict(migration_files())["0030_job_state_columns"]
    db.execute_script(sql[sql.index("UPDATE large_conversion_jobs") :])  # the data move, as it ran on existing rows
    job = job_repo.PgJobs(db).get_job(job_id)
    assert (job.batch_primed, job.batch_cost_usd, job.pause_settled, job.budget_resumes, job.process_now, job.max_pages) == (
        True,
        Decimal("0.0123"),
        True,
        2,
        True,
        40,
    )
    assert (job.retry_attempt, job.retry_pages) == (3, (4, 7))
    assert job.options == {"highFidelity": True, "batchLane": True}
