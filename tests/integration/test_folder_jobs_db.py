"""The folder-job repository on real PostgreSQL: idempotent inserts, guarded claims, counts."""

from __future__ import annotations

from batchlane.db import folder_jobs as repo
from batchlane.db.connection import Database
from batchlane.folders.spec import folder_job_id, parse_spec
from batchlane.rows import NewFolderFile


def _job(db: Database, folder: str) -> str:
    spec = parse_spec({"input": {"folder": folder}})
    job_id = folder_job_id(spec, "tester")
    row = repo.PgFolderJobs(db).add(job_id=job_id, owner_id="tester", name=None, spec=spec.model_dump(mode="json"), source=("b", "in/"), target=("b", "in/"))
    assert row is not None and row.status == "enumerating"
    assert (
        repo.PgFolderJobs(db).add(job_id=job_id, owner_id="tester", name=None, spec={}, source=("b", "in/"), target=("b", "in/")) is None
    )  # same spec: the same job
    return job_id


def test_a_relisted_page_adds_nothing_and_claims_respect_the_cap(db: Database) -> None:
    job_id = _job(db, "s3://b/in-claims/")
    files = [NewFolderFile(f"in/{i}.pdf", 10, f"in/{i}.md") for i in range(5)]
    assert repo.PgFolderJobs(db).add_files(job_id, files) == 5
    assert repo.PgFolderJobs(db).add_files(job_id, files) == 0
    assert len(repo.PgFolderJobs(db).claim_queued(job_id, 2)) == 2
    assert len(repo.PgFolderJobs(db).claim_queued(job_id, 10)) == 3
    assert repo.PgFolderJobs(db).claim_queued(job_id, 10) == []
    assert repo.PgFolderJobs(db).finish_file(job_id, "in/0.pdf", status="failed", error_id="PDF_CORRUPT", pages=3) is not None
    assert repo.PgFolderJobs(db).finish_file(job_id, "in/0.pdf", status="completed") is None  # already terminal
    counts = repo.PgFolderJobs(db).counts(job_id)
    assert (counts.discovered, counts.processing, counts.failed) == (5, 4, 1)


def test_retry_requeues_only_the_error_ids_asked_for(db: Database) -> None:
    job_id = _job(db, "s3://b/in-retry/")
    repo.PgFolderJobs(db).add_files(job_id, [NewFolderFile(f"in/{i}.pdf", 1, f"in/{i}.md") for i in range(3)])
    repo.PgFolderJobs(db).claim_queued(job_id, 3)
    repo.PgFolderJobs(db).finish_file(job_id, "in/0.pdf", status="failed", error_id="PDF_CORRUPT")
    repo.PgFolderJobs(db).finish_file(job_id, "in/1.pdf", status="failed", error_id="PDF_ENCRYPTED")
    repo.PgFolderJobs(db).finish_file(job_id, "in/2.pdf", status="completed")
    assert repo.PgFolderJobs(db).requeue(job_id, statuses=("failed",), error_ids=["PDF_ENCRYPTED"]) == 1
    assert [r.source_key for r in repo.PgFolderJobs(db).list_files(job_id, status="queued")] == ["in/1.pdf"]
    assert [r.source_key for r in repo.PgFolderJobs(db).list_files(job_id, status="completed")] == ["in/2.pdf"]


def test_a_file_whose_conversion_was_never_opened_is_claimed_again(db: Database) -> None:
    job_id = _job(db, "s3://b/in-stalled/")
    repo.PgFolderJobs(db).add_files(job_id, [NewFolderFile(f"in/{i}.pdf", 1, f"in/{i}.md") for i in range(2)])
    repo.PgFolderJobs(db).claim_queued(job_id, 2)
    repo.PgFolderJobs(db).release(job_id, "in/0.pdf")  # the intake could not start
    repo.PgFolderJobs(db).attach_conversion(job_id, "in/1.pdf", file_id=_file(db), conversion_job_id=None)  # type: ignore[arg-type]
    assert [r.source_key for r in repo.PgFolderJobs(db).list_files(job_id, status="queued")] == ["in/0.pdf"]
    assert repo.PgFolderJobs(db).requeue_stalled_starts(job_id, older_than_s=3600) == 0  # a fresh claim is left alone
    assert repo.PgFolderJobs(db).requeue_stalled_starts(job_id, older_than_s=0) == 1  # a turn that died before opening it
    assert repo.PgFolderJobs(db).counts(job_id).queued == 2


def _file(db: Database) -> str:
    return str(repo.PgFolderJobs(db).insert_source_file(owner_id="tester", name="x.pdf", bucket="b", key="in/1.pdf", size_bytes=1).id)


def _plan(db: Database, sql: str, **params: object) -> dict[str, object]:
    row = db.one("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, **params)
    assert row is not None
    plan = row["QUERY PLAN"]
    return (plan[0] if isinstance(plan, list) else plan)["Plan"]  # type: ignore[no-any-return]


def _nodes(plan: dict[str, object]) -> list[dict[str, object]]:
    return [plan, *(n for child in plan.get("Plans", []) for n in _nodes(child))]  # type: ignore[attr-defined]


def test_a_loop_turn_reads_the_files_it_acts_on_not_the_whole_folder(db: Database) -> None:
    """A folder of 4,000 files, 1,000 finished and reported, 40 finished unreported, 2,960 queued: the turn's claim of
    50, its report read and its live counts read index entries of those files only, not the folder's (issue 27,
    point 3; 0034_folder_turn_indexes.sql). Without those indexes the claim read and sorted all 2,960 queued
    files and the report read every finished one."""
    job_id = _job(db, "s3://b/in-turn-cost/")
    repo.PgFolderJobs(db).add_files(job_id, [NewFolderFile(f"in/{i:05d}.pdf", 1, f"in/{i:05d}.md") for i in range(4000)])
    db.run(
        """UPDATE folder_job_files SET status = 'completed', reported = (source_key < 'in/01000')
           WHERE folder_job_id = :job AND source_key < 'in/01040'""",
        job=job_id,
    )
    db.run("ANALYZE folder_job_files")
    claim = _plan(
        db,
        """SELECT folder_job_id, source_key FROM folder_job_files WHERE folder_job_id = :job AND status = ANY(:from_)
           ORDER BY source_key LIMIT :limit FOR UPDATE SKIP LOCKED""",
        job=job_id,
        from_=["queued"],
        limit=50,
    )
    unreported = _plan(
        db,
        "SELECT * FROM folder_job_files WHERE folder_job_id = :job AND reported = false AND status IN ('completed', 'failed', 'skipped') ORDER BY source_key",
        job=job_id,
    )
    for name, plan, most in (("claim", claim, 50), ("report", unreported, 40)):
        scans = [n for n in _nodes(plan) if "Scan" in str(n["Node Type"])]
        assert scans and all(n["Node Type"] != "Seq Scan" for n in scans), (name, scans)
        read = max(int(n["Actual Rows"]) + int(n.get("Rows Removed by Filter", 0)) for n in scans)  # type: ignore[call-overload]
        assert read <= most, f"the {name} read {read} rows, not only the files it takes: {scans}"
    assert repo.PgFolderJobs(db).live_counts(job_id, cap=100) == (100, 0), "a turn counts up to the cap"
    assert [r.source_key for r in repo.PgFolderJobs(db).unreported(job_id)] == [f"in/{i:05d}.pdf" for i in range(1000, 1040)]
    assert [r.source_key for r in repo.PgFolderJobs(db).claim_queued(job_id, 2)] == ["in/01040.pdf", "in/01041.pdf"]
