"""The folder-job repository on real PostgreSQL: idempotent inserts, guarded claims, counts."""

from __future__ import annotations

from batchlane.db import folder_jobs as repo
from batchlane.db.connection import Database
from batchlane.folders.spec import folder_job_id, parse_spec


def _job(db: Database, folder: str) -> str:
    spec = parse_spec({"input": {"folder": folder}})
    job_id = folder_job_id(spec, "tester")
    row = repo.insert_job(db, job_id=job_id, owner_id="tester", name=None, spec=spec.model_dump(mode="json"), source=("b", "in/"), target=("b", "in/"))
    assert row is not None and row["status"] == "enumerating"
    assert (
        repo.insert_job(db, job_id=job_id, owner_id="tester", name=None, spec={}, source=("b", "in/"), target=("b", "in/")) is None
    )  # same spec: the same job
    return job_id


def test_a_relisted_page_adds_nothing_and_claims_respect_the_cap(db: Database) -> None:
    job_id = _job(db, "s3://b/in-claims/")
    files = [repo.NewFile(f"in/{i}.pdf", 10, f"in/{i}.md") for i in range(5)]
    assert repo.insert_files(db, job_id, files) == 5
    assert repo.insert_files(db, job_id, files) == 0
    assert len(repo.claim_queued(db, job_id, 2)) == 2
    assert len(repo.claim_queued(db, job_id, 10)) == 3
    assert repo.claim_queued(db, job_id, 10) == []
    assert repo.finish_file(db, job_id, "in/0.pdf", status="failed", error_id="PDF_CORRUPT", pages=3) is not None
    assert repo.finish_file(db, job_id, "in/0.pdf", status="completed") is None  # already terminal
    counts = repo.counts(db, job_id)
    assert (counts["discovered"], counts["processing"], counts["failed"]) == (5, 4, 1)


def test_retry_requeues_only_the_error_ids_asked_for(db: Database) -> None:
    job_id = _job(db, "s3://b/in-retry/")
    repo.insert_files(db, job_id, [repo.NewFile(f"in/{i}.pdf", 1, f"in/{i}.md") for i in range(3)])
    repo.claim_queued(db, job_id, 3)
    repo.finish_file(db, job_id, "in/0.pdf", status="failed", error_id="PDF_CORRUPT")
    repo.finish_file(db, job_id, "in/1.pdf", status="failed", error_id="PDF_ENCRYPTED")
    repo.finish_file(db, job_id, "in/2.pdf", status="completed")
    assert repo.requeue(db, job_id, statuses=("failed",), error_ids=["PDF_ENCRYPTED"]) == 1
    assert [r["source_key"] for r in repo.list_files(db, job_id, status="queued")] == ["in/1.pdf"]
    assert [r["source_key"] for r in repo.list_files(db, job_id, status="completed")] == ["in/2.pdf"]


def test_a_file_whose_conversion_was_never_opened_is_claimed_again(db: Database) -> None:
    job_id = _job(db, "s3://b/in-stalled/")
    repo.insert_files(db, job_id, [repo.NewFile(f"in/{i}.pdf", 1, f"in/{i}.md") for i in range(2)])
    repo.claim_queued(db, job_id, 2)
    repo.release(db, job_id, "in/0.pdf")  # the intake could not start
    repo.attach_conversion(db, job_id, "in/1.pdf", file_id=_file(db), conversion_job_id=None)  # type: ignore[arg-type]
    assert [r["source_key"] for r in repo.list_files(db, job_id, status="queued")] == ["in/0.pdf"]
    assert repo.requeue_stalled_starts(db, job_id, older_than_s=3600) == 0  # a fresh claim is left alone
    assert repo.requeue_stalled_starts(db, job_id, older_than_s=0) == 1  # a turn that died before opening it
    assert repo.counts(db, job_id)["queued"] == 2


def _file(db: Database) -> str:
    return str(repo.insert_source_file(db, owner_id="tester", name="x.pdf", bucket="b", key="in/1.pdf", size_bytes=1)["id"])
