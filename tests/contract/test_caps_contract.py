"""CapCounts' contract, on the fake and on PostgreSQL: what each per-user cap counts (docs/operations.md "Per-user caps"),
only the owner's own rows, and only those that still hold a place."""

from __future__ import annotations

import uuid
from typing import Any

from batchlane.domain import status as st
from batchlane.domain.status import JobStatus
from batchlane.pdf.split import plan_chunks

TEST_EVENT = "webhook.test"


def _owner() -> str:
    return f"caps-{uuid.uuid4().hex[:8]}"


def _upload(uow: Any, owner: str) -> str:
    return str(uow.jobs.insert_file(owner_id=owner, name="a.pdf", s3_key=f"uploads/{uuid.uuid4()}.pdf", size_bytes=10).id)


def test_pending_uploads_are_the_owners_registered_files_not_converted_deleted_nor_a_folders(uow: Any) -> None:
    owner, other = _owner(), _owner()
    deleted, converting, waiting = _upload(uow, owner), _upload(uow, owner), _upload(uow, owner)
    uow.folder_jobs.insert_source_file(owner_id=owner, name="b.pdf", bucket="theirs", key="in/b.pdf", size_bytes=10)  # read where it lies
    _upload(uow, other)
    assert uow.caps.pending_uploads(owner) == 3
    uow.jobs.mark_file_deleted(deleted)
    assert uow.jobs.move_file(converting, st.convert())
    assert uow.caps.pending_uploads(owner) == 1
    assert uow.jobs.get_file(waiting).status == "uploaded"
    assert uow.caps.pending_uploads(other) == 1
    assert uow.caps.pending_uploads(_owner()) == 0


def _folder_job(uow: Any, owner: str) -> str:
    job_id = "fj-" + uuid.uuid4().hex[:24]
    assert uow.folder_jobs.add(job_id=job_id, owner_id=owner, name=None, spec={}, source=("in", "a/"), target=("out", "b/")) is not None
    return job_id


def test_live_folder_jobs_count_until_their_end_is_recorded(uow: Any) -> None:
    owner = _owner()
    _folder_job(uow, owner)
    cancelled, failed = _folder_job(uow, owner), _folder_job(uow, owner)
    _folder_job(uow, _owner())
    uow.folder_jobs.move(cancelled, st.folder_job("cancel"), ended=False)  # its files in flight still finish: it holds its place
    uow.folder_jobs.move(failed, st.folder_job("fail"), error_id="FOLDER_EMPTY", error_message="empty")
    assert uow.caps.live_folder_jobs(owner) == 2
    uow.folder_jobs.move(cancelled, st.folder_job("end_cancelled"))
    assert uow.caps.live_folder_jobs(owner) == 1


def _delivery(uow: Any, owner: str, *, event: str = TEST_EVENT, job_id: str | None = None, folder_job_id: str | None = None) -> None:
    added = uow.deliveries.add(
        delivery_id=str(uuid.uuid4()), owner_id=owner, job_id=job_id, folder_job_id=folder_job_id, event=event, url="https://h.example/in",
        headers={}, payload={},
    )  # fmt: skip
    assert added


def test_recent_test_deliveries_are_the_owners_tests_of_the_last_hours_only(uow: Any) -> None:
    owner = _owner()
    file_id = _upload(uow, owner)
    job = uow.jobs.insert_job(
        file_id=file_id, owner_id=owner, status=JobStatus.PENDING, options={}, model_id="m", total_pages=2, pages_per_chunk=2, chunks=plan_chunks(2, 2)
    )
    _delivery(uow, owner)
    _delivery(uow, owner)
    _delivery(uow, owner, event="job.completed", job_id=str(job.id))  # a job's event, not a test
    _delivery(uow, owner, folder_job_id=_folder_job(uow, owner))  # a folder job's, not a test
    _delivery(uow, owner, event="file.completed")
    _delivery(uow, _owner())
    assert uow.caps.recent_test_deliveries(owner, event=TEST_EVENT, hours=1) == 2
    assert uow.caps.recent_test_deliveries(owner, event=TEST_EVENT, hours=0) == 0  # none is newer than now
