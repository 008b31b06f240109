"""conversion_start on the in-memory unit of work (no server): what the conversion Map is given to iterate."""

from __future__ import annotations

from decimal import Decimal

import pytest

from batchlane.domain import status as st
from batchlane.domain.errors import NotFound
from batchlane.domain.status import ChunkStatus, JobStatus
from batchlane.filejob.start import start_conversion
from batchlane.pdf.split import plan_chunks
from fakes import FakeUnitOfWork


def _job(uow: FakeUnitOfWork, *, status: str = JobStatus.PENDING, pages: int = 6) -> str:
    file_id = uow.jobs.insert_file(owner_id="owner-1", name="book.pdf", s3_key="uploads/book.pdf", size_bytes=100).id
    chunks = plan_chunks(pages, 2)
    return uow.jobs.insert_job(
        file_id=file_id, owner_id="owner-1", status=status, options={}, model_id="m", total_pages=pages, pages_per_chunk=2, chunks=chunks
    ).id


def _convert_chunk(uow: FakeUnitOfWork, job_id: str, index: int) -> None:
    assert uow.jobs.claim_chunk(job_id, index, "w") is not None
    assert uow.jobs.complete_chunk(job_id, index, "w", pages_done=2, pages_failed=0, pages_batch=0, cost_usd=Decimal("0.01"), result_key=f"r{index}")


def test_a_pending_job_starts_processing_with_every_chunk_to_convert() -> None:
    uow = FakeUnitOfWork()
    job_id = _job(uow)
    answer = start_conversion(uow, job_id)
    assert answer == {"jobId": job_id, "chunks": [0, 1, 2], "proceed": True, "status": "processing"}
    assert uow.jobs.get_job(job_id).status == JobStatus.PROCESSING and uow.commits == 1


def test_a_job_back_from_the_batch_lane_gets_its_waiting_chunks_pending() -> None:
    uow = FakeUnitOfWork()
    job_id = _job(uow, status=JobStatus.WAITING_BATCH)
    assert uow.jobs.move_job(job_id, st.leave_batch_lane()) is not None  # only the job leaves; its chunks still wait
    assert start_conversion(uow, job_id)["chunks"] == [0, 1, 2]
    assert {c.status for c in uow.jobs.get_chunks(job_id)} == {ChunkStatus.PENDING}


def test_a_restarted_conversion_iterates_only_the_chunks_not_yet_converted() -> None:
    uow = FakeUnitOfWork()
    job_id = _job(uow)
    start_conversion(uow, job_id)
    _convert_chunk(uow, job_id, 1)
    assert start_conversion(uow, job_id)["chunks"] == [0, 2]  # the workflow (re)starts a processing job
    assert uow.jobs.get_chunk(job_id, 1).status == ChunkStatus.COMPLETED


def test_a_late_start_leaves_a_completed_job_completed() -> None:
    """A redelivered start after the job settled: nothing is converted (or billed) again (issue 23.10's planted bug)."""
    uow = FakeUnitOfWork()
    job_id = _job(uow, pages=2)
    start_conversion(uow, job_id)
    _convert_chunk(uow, job_id, 0)
    uow.jobs.move_job(job_id, st.assemble())
    uow.jobs.move_job(job_id, st.settle())
    answer = start_conversion(uow, job_id)
    assert (answer["proceed"], answer["chunks"], answer["status"]) == (False, [], "completed")
    assert uow.jobs.get_job(job_id).status == JobStatus.COMPLETED
    assert uow.jobs.claim_chunk(job_id, 0, "late") is None


def test_a_cancelled_job_is_not_started() -> None:
    uow = FakeUnitOfWork()
    job_id = _job(uow)
    uow.jobs.move_job(job_id, st.cancel())
    uow.jobs.move_chunks(job_id, st.cancel(st.Entity.CHUNK))
    assert start_conversion(uow, job_id) == {"jobId": job_id, "chunks": [], "proceed": False, "status": "cancelled"}
    assert {c.status for c in uow.jobs.get_chunks(job_id)} == {ChunkStatus.CANCELLED}


def test_an_unknown_job_is_not_found() -> None:
    with pytest.raises(NotFound):
        start_conversion(FakeUnitOfWork(), "00000000-0000-0000-0000-000000000000")
