"""webhooks/events.py: the detail a job's state change publishes (and a webhook carries), field by field.

docs/operations.md "Public events" documents this body; a receiver reads these names.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest

from batchlane.pdf.split import plan_chunks
from batchlane.ports import Services
from batchlane.webhooks.events import job_change_detail, outcome, publish_job_change
from fakes import FakeUnitOfWork


def _job(uow: FakeUnitOfWork, status: str, **columns: object) -> str:
    file_row = uow.jobs.insert_file(owner_id="alice", name="Annual Report.pdf", s3_key="uploads/alice/a.pdf", size_bytes=10)
    job = uow.jobs.insert_job(
        file_id=str(file_row.id), owner_id="alice", status="processing", options={}, model_id="m", total_pages=12, pages_per_chunk=6, chunks=plan_chunks(12, 6)
    )
    uow.jobs.put_job(dataclasses.replace(job, status=status, **columns))  # type: ignore[arg-type]
    return str(job.id)


def test_a_completed_job_with_failed_pages_publishes_every_documented_field(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow, "completed", pages_failed=2, pages_batch=7, total_cost_usd=Decimal("0.671317"), markdown_key="jobs/x/out.md")
    detail = job_change_detail(svc, job_id)
    assert detail is not None and detail.pop("changedAt")
    file_id = fake_uow.jobs.get_job(job_id).file_id
    assert detail == {
        "scope": "job", "jobId": job_id, "fileId": file_id, "fileName": "Annual Report.pdf", "ownerId": "alice", "status": "completed",
        "outcome": "completed_with_failed_pages", "pages": {"total": 12, "failed": 2, "batchServed": 7}, "costUsd": "0.671317",
        "outputs": {"markdown": f"s3://{svc.settings.batchlane_bucket}/jobs/x/out.md"}, "error": None,
        "allOnDemandCostUsd": "0", "savingUsd": "0", "savingPercent": "0",  # no ledger rows on the fakes: domain/savings.py over nothing
    }  # fmt: skip


def test_a_failed_job_carries_its_error_and_no_markdown(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow, "failed", error_id="PDF_ENCRYPTED", error_message="The PDF is encrypted.", markdown_key="jobs/x/partial.md")
    detail = job_change_detail(svc, job_id)
    assert detail is not None
    assert (detail["outcome"], detail["outputs"], detail["error"]) == (
        "failed",
        {"markdown": None},
        {"code": "PDF_ENCRYPTED", "message": "The PDF is encrypted."},
    )


@pytest.mark.parametrize("status", ["processing", "pending", "assembling"])
def test_a_state_nobody_is_told_about_publishes_nothing(svc: Services, fake_uow: FakeUnitOfWork, status: str) -> None:
    assert job_change_detail(svc, _job(fake_uow, status)) is None
    assert job_change_detail(svc, "123e4567-e89b-12d3-a456-426614174000") is None


def test_publishing_skips_a_job_that_moved_on(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow, "waiting_batch")
    assert publish_job_change(svc, job_id, "completed") is False  # it is waiting now: that change publishes itself
    assert publish_job_change(svc, job_id, "waiting_batch") is True
    assert publish_job_change(svc, job_id) is True


@pytest.mark.parametrize(
    ("status", "failed", "expected"),
    [("completed", 0, "completed"), ("completed", 3, "completed_with_failed_pages"), ("failed", 3, "failed"), ("cancelled", 1, "cancelled")],
)
def test_the_outcome_names_a_completion_with_failed_pages(status: str, failed: int, expected: str) -> None:
    assert outcome(status, failed) == expected
