"""No trap in a folder job that could not run (issue 41.5): an empty folder's job (FOLDER_EMPTY) is listed again when
the same spec is posted once the folder holds a PDF, and `retry` of it does the same, instead of answering the
failed job again or "FOLDER_JOB_RUNNING: The folder job is error"."""

from __future__ import annotations

import dataclasses

import pytest
from folder_fakes import MemoryBuckets
from usecase_fakes import FakeBus, workflows_of

from batchlane.config import Settings
from batchlane.folders import usecases
from batchlane.folders.enumerate import enumerate_step
from batchlane.ports import Services
from fakes import FakeUnitOfWork

ALICE = "alice"
SPEC = {"input": {"folder": "s3://folders/empty/"}, "output": {"layout": "mirror", "folder": "s3://folders/out/"}}
LISTING = Settings(batchlane_folder_list_page_size=10, batchlane_folder_list_pages_per_step=1)


@pytest.fixture
def svc(svc_on_fakes: Services) -> Services:
    settings = svc_on_fakes.settings.model_copy(update={"batchlane_folder_sources": "folders"})
    return dataclasses.replace(svc_on_fakes, settings=settings)


def _list(uow: FakeUnitOfWork, buckets: MemoryBuckets, job_id: str) -> None:
    while not enumerate_step(uow, lambda owner: buckets, FakeBus(), LISTING, job_id)["enumerationDone"]:
        pass


def _empty_folder_job(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> str:
    job, created = usecases.submit(svc, ALICE, SPEC)
    assert created
    _list(fake_uow, buckets, job["id"])
    assert (usecases.status(svc, ALICE, job["id"])["status"], fake_uow.folder_jobs.get(job["id"]).error_id) == ("error", "FOLDER_EMPTY")
    return str(job["id"])


def test_the_same_spec_posted_once_the_empty_folder_holds_a_pdf_lists_it_again_and_converts(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    buckets = MemoryBuckets()
    job_id = _empty_folder_job(svc, fake_uow, buckets)
    buckets.put("folders", "empty/paper.pdf")
    again, created = usecases.submit(svc, ALICE, SPEC)
    assert (again["id"], created, again["status"], again["error"]) == (job_id, False, "enumerating", None)
    assert ("folder", f"{job_id}-{fake_uow.folder_jobs.get(job_id).run}-{int(fake_uow.folder_jobs.get(job_id).created_at.timestamp())}") in workflows_of(svc).started
    _list(fake_uow, buckets, job_id)
    listed = fake_uow.folder_jobs.get(job_id)
    assert (listed.status, listed.objects_listed) == ("processing", 1)
    assert [f.source_key for f in fake_uow.folder_jobs.list_files(job_id)] == ["empty/paper.pdf"]


def test_retry_of_a_folder_job_that_could_not_run_lists_its_folder_again(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    buckets = MemoryBuckets()
    job_id = _empty_folder_job(svc, fake_uow, buckets)
    retried = usecases.retry(svc, ALICE, job_id)
    assert (retried["status"], retried["requeued"], retried["error"]) == ("enumerating", 0, None)
    assert len([s for s in workflows_of(svc).started if s[0] == "folder"]) == 2
