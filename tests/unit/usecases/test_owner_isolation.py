"""Two owners against each other on the in-memory unit of work (no server): B never sees nor touches A's file, job,
folder job or delivery. Every answer to B is the 404 a missing id gets (the API never confirms another's id), and A's
rows are as they were afterwards. The same calls by A succeed, so a 404 here is the owner check, not a broken setup."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from usecase_fakes import new_job

from batchlane.api import estimates, live, results, usecases, webhook_usecases
from batchlane.domain.errors import NotFound
from batchlane.folders import usecases as folder_usecases
from batchlane.ports import Services
from fakes import FakeUnitOfWork

A, B = "owner-a", "owner-b"
HOOK = "http://127.0.0.1:9/hook"


class NoDownloads:
    """The downloads port: an owner check that lets B through would reach it; nothing here should."""

    def head(self, key: str) -> Any:
        raise AssertionError(f"B reached A's object {key}")

    def presigned_get(self, key: str, *, filename: str, ttl_s: int = 900) -> str:
        raise AssertionError(f"B got a URL for A's object {key}")


@pytest.fixture
def svc(svc_on_fakes: Services) -> Services:
    settings = svc_on_fakes.settings.model_copy(update={"batchlane_folder_sources": "folders", "batchlane_webhook_allow_private": True})
    return dataclasses.replace(svc_on_fakes, settings=settings)


@pytest.fixture
def a_job(svc: Services, fake_uow: FakeUnitOfWork) -> tuple[str, str]:
    """A's file and its job (parked for the batch lane, with a hold): (file id, job id)."""
    job_id = new_job(svc, pages=4, owner=A)
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None
    return job.file_id, job_id


def _not_found(call: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(NotFound) as refused:
        call(*args, **kwargs)
    return str(refused.value.error_id)


def test_b_never_sees_nor_touches_as_file_or_job(svc: Services, fake_uow: FakeUnitOfWork, a_job: tuple[str, str]) -> None:
    file_id, job_id = a_job
    before_job, before_file = fake_uow.jobs.get_job(job_id), fake_uow.jobs.get_file(file_id)
    # A sees its own
    assert usecases.file_conversion(svc, A, file_id)["jobId"] == job_id
    assert usecases.job_conversion(svc, A, job_id)["jobId"] == job_id
    assert [f["fileId"] for f in usecases.list_files(svc, A)["files"]] == [file_id]
    # B: the same ids are missing ones
    assert usecases.list_files(svc, B) == {"files": []}
    for call, args in (
        (usecases.file_conversion, (svc, B, file_id)),
        (usecases.cancel_file, (svc, B, file_id)),
        (usecases.process_now_file, (svc, B, file_id)),
        (usecases.delete_file, (svc, B, file_id)),
        (usecases.convert_file, (svc, B, file_id)),
        (estimates.start_file_estimate, (svc, B, file_id)),
    ):
        kwargs = {"options": None} if call in (usecases.convert_file, estimates.start_file_estimate) else {}
        assert _not_found(call, *args, **kwargs) == "FILE_NOT_FOUND", call.__name__
    for call, args in (
        (usecases.job_conversion, (svc, B, job_id)),
        (usecases.resume_job, (svc, B, job_id)),
        (results.markdown_download, (svc, NoDownloads(), B, job_id)),
        (results.job_retries, (svc, B, job_id)),
        (live.source_read, (svc, NoDownloads(), B, job_id)),
    ):
        assert _not_found(call, *args) == "JOB_NOT_FOUND", call.__name__
    assert _not_found(results.job_pages, svc, B, job_id, status="failed") == "JOB_NOT_FOUND"
    assert _not_found(results.retry_job, svc, B, job_id, error_ids=None, pages=None) == "JOB_NOT_FOUND"
    # A's rows are untouched, its upload still there
    assert fake_uow.jobs.get_job(job_id) == before_job and fake_uow.jobs.get_file(file_id) == before_file
    assert svc.workflows.started == []  # type: ignore[attr-defined]  # FakeWorkflows: nothing was started for B


def test_a_deleted_files_jobs_are_gone_for_its_owner_too(svc: Services, fake_uow: FakeUnitOfWork, a_job: tuple[str, str]) -> None:
    file_id, job_id = a_job
    svc.store.put_bytes(f"jobs/{job_id}/chunks/0.pdf", b"%PDF")
    answer = usecases.delete_file(svc, A, file_id)
    assert (answer["deleted"], answer["cancelledJobId"]) == (True, job_id)  # its live job was cancelled first
    assert svc.store.list_keys(f"jobs/{job_id}/") == []
    assert fake_uow.jobs.get_file(file_id).deleted_at is not None
    assert usecases.list_files(svc, A) == {"files": []}
    assert _not_found(usecases.job_conversion, svc, A, job_id) == "FILE_NOT_FOUND"  # its job went with it
    assert _not_found(usecases.file_conversion, svc, A, file_id) == "FILE_NOT_FOUND"


def _folder(svc: Services) -> str:
    body = {"input": {"folder": "s3://folders/in/"}, "output": {"layout": "mirror", "folder": "s3://folders/out/"}}
    job, created = folder_usecases.submit(svc, A, body)
    assert created
    return str(job["id"])


def test_b_never_sees_nor_touches_as_folder_job(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    folder_id = _folder(svc)
    before = fake_uow.folder_jobs.get(folder_id)
    assert folder_usecases.status(svc, A, folder_id)["status"] == "enumerating"
    assert folder_usecases.list_jobs(svc, B) == {"folderJobs": []}
    for call in (folder_usecases.status, folder_usecases.files, folder_usecases.cancel, folder_usecases.retry):
        with pytest.raises(NotFound):
            call(svc, B, folder_id)
    with pytest.raises(NotFound):
        folder_usecases.report_page(svc, B, folder_id, after=None, limit=10)
    assert fake_uow.folder_jobs.get(folder_id) == before  # B's cancel did not cancel it
    assert [j["id"] for j in folder_usecases.list_jobs(svc, A)["folderJobs"]] == [folder_id]


def test_b_never_sees_as_deliveries_nor_lists_them_by_as_job(svc: Services, a_job: tuple[str, str]) -> None:
    _, job_id = a_job
    folder_id = _folder(svc)
    webhook_usecases.send_test_delivery(svc, A, url=HOOK, headers=None)
    mine = webhook_usecases.list_deliveries(svc, A, job_id=None, limit=10)["deliveries"]
    assert [d["event"] for d in mine] == ["webhook.test"]
    assert webhook_usecases.list_deliveries(svc, B, job_id=None, limit=10) == {"deliveries": []}
    assert _not_found(webhook_usecases.list_deliveries, svc, B, job_id=job_id, limit=10) == "JOB_NOT_FOUND"
    with pytest.raises(NotFound):
        webhook_usecases.list_deliveries(svc, B, job_id=folder_id, limit=10)
    assert webhook_usecases.list_deliveries(svc, A, job_id=job_id, limit=10) == {"deliveries": []}  # A may ask: none for that job yet


def test_one_owners_caps_and_rate_limit_leave_the_others_whole(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    """A registering uploads and using up its rate limit takes nothing from B's."""
    svc = dataclasses.replace(svc, settings=svc.settings.model_copy(update={"batchlane_max_pending_uploads": 1}))

    class Uploads:
        def presigned_post(self, key: str, *, max_bytes: int, **_: Any) -> dict[str, Any]:
            return {"url": "http://127.0.0.1:1/upload", "fields": {"key": key}}

    usecases.register_upload(svc, Uploads(), A, name="a.pdf", size_bytes=10)
    usecases.register_upload(svc, Uploads(), B, name="b.pdf", size_bytes=10)  # A's one pending upload is not B's
    assert [fake_uow.rate_limits.take(A, cost=1, rate_per_s=0.001, burst=2) for _ in range(3)][-1] > 0
    assert fake_uow.rate_limits.take(B, cost=2, rate_per_s=0.001, burst=2) == 0
