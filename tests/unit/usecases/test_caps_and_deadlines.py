"""Money paths that skipped a rule (issue 21.5), on the in-memory unit of work and fakes for AWS (no server):
per-user caps on what costs outside the budget (two owners against each other), and a short
deadline gated like the other ways out of the half-price batch lane."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from usecase_fakes import new_job

from batchlane.api import usecases, webhook_usecases
from batchlane.domain import status as st
from batchlane.domain.errors import Forbidden, LimitReached
from batchlane.folders import advance
from batchlane.folders import usecases as folder_usecases
from batchlane.ports import Services
from batchlane.rows import NewFolderFile
from fakes import FakeUnitOfWork

PRIORITY = "batchlane-priority"  # the group a caller without the permission lacks


class FakeUploads:
    """The presigned POST port: what S3Uploads answers, without signing."""

    def presigned_post(self, key: str, *, max_bytes: int, **_: Any) -> dict[str, Any]:
        return {"url": "http://127.0.0.1:1/upload", "fields": {"key": key}}


def _with(svc: Services, **settings: Any) -> Services:
    return dataclasses.replace(svc, settings=svc.settings.model_copy(update=settings))


def _owner(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def test_registered_uploads_are_capped_per_user_and_one_users_cap_leaves_another_free(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    svc = _with(svc_on_fakes, batchlane_max_pending_uploads=3)
    a, b = _owner("a"), _owner("b")
    first = usecases.register_upload(svc, FakeUploads(), a, name="0.pdf", size_bytes=100)["fileId"]
    for i in range(1, 3):
        usecases.register_upload(svc, FakeUploads(), a, name=f"{i}.pdf", size_bytes=100)
    with pytest.raises(LimitReached) as refused:
        usecases.register_upload(svc, FakeUploads(), a, name="one-more.pdf", size_bytes=100)
    assert refused.value.error_id == "UPLOADS_LIMIT" and "BATCHLANE_MAX_PENDING_UPLOADS" in str(refused.value)
    assert usecases.register_upload(svc, FakeUploads(), b, name="b.pdf", size_bytes=100)["fileId"]  # B is not A
    fake_uow.jobs.mark_file_deleted(first)  # a deleted file frees its place
    assert usecases.register_upload(svc, FakeUploads(), a, name="again.pdf", size_bytes=100)["fileId"]


def test_webhook_test_deliveries_are_capped_per_user_per_hour(svc_on_fakes: Services) -> None:
    svc = _with(svc_on_fakes, batchlane_max_test_deliveries_per_hour=2, batchlane_webhook_allow_private=True)
    a, b = _owner("a"), _owner("b")
    for _ in range(2):
        webhook_usecases.send_test_delivery(svc, a, url="http://127.0.0.1:9/hook", headers=None)
    with pytest.raises(LimitReached) as refused:
        webhook_usecases.send_test_delivery(svc, a, url="http://127.0.0.1:9/hook", headers=None)
    assert refused.value.error_id == "TEST_DELIVERIES_LIMIT"
    assert webhook_usecases.send_test_delivery(svc, b, url="http://127.0.0.1:9/hook", headers=None)["status"] == "pending"
    started = [d for kind, d in svc.workflows.started if kind == "delivery"]  # type: ignore[attr-defined]  # FakeWorkflows
    assert len(started) == 3  # the refused one started no retry ladder


def _folder_spec(i: int) -> dict[str, Any]:
    return {"input": {"folder": f"s3://folders/in-{i}/"}, "output": {"layout": "mirror", "folder": f"s3://folders/out-{i}/"}}


def test_live_folder_jobs_are_capped_per_user_and_the_same_spec_again_is_not_a_new_job(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    svc = _with(svc_on_fakes, batchlane_max_live_folder_jobs=2, batchlane_folder_sources="folders")
    a, b = _owner("a"), _owner("b")
    first, _ = folder_usecases.submit(svc, a, _folder_spec(1))
    folder_usecases.submit(svc, a, _folder_spec(2))
    with pytest.raises(LimitReached) as refused:
        folder_usecases.submit(svc, a, _folder_spec(3))
    assert refused.value.error_id == "FOLDER_JOBS_LIMIT" and "BATCHLANE_MAX_LIVE_FOLDER_JOBS" in str(refused.value)
    assert folder_usecases.submit(svc, a, _folder_spec(1))[1] is False  # the same spec answers its job, at the cap too
    assert folder_usecases.submit(svc, b, _folder_spec(3))[1] is True  # B is not A
    assert fake_uow.folder_jobs.move(first["id"], st.folder_job("complete")) is not None  # an ended job frees its place
    assert folder_usecases.submit(svc, a, _folder_spec(3))[1] is True
    assert fake_uow.folder_jobs.get(first["id"]) is not None


def _soon() -> str:
    return (datetime.now(UTC) + timedelta(hours=1)).isoformat()  # inside the batch lane's 26 h turnaround


def _later() -> str:
    return (datetime.now(UTC) + timedelta(days=3)).isoformat()


def test_a_deadline_sooner_than_the_batch_turnaround_needs_the_priority_permission(svc_on_fakes: Services) -> None:
    svc, owner = svc_on_fakes, _owner("a")
    file_id = usecases.register_upload(svc, FakeUploads(), owner, name="doc.pdf", size_bytes=100)["fileId"]
    with pytest.raises(Forbidden) as refused:
        usecases.convert_file(svc, owner, file_id, options={"deadline": _soon()}, priority_group=PRIORITY)
    assert "deadline" in str(refused.value) and PRIORITY in str(refused.value)
    with pytest.raises(Exception) as later:  # a deadline the batch lane can meet passes the gate (the upload is missing here)
        usecases.convert_file(svc, owner, file_id, options={"deadline": _later()}, priority_group=PRIORITY)
    assert getattr(later.value, "error_id", None) == "UPLOAD_MISSING"


def test_a_folder_deadline_sooner_than_the_batch_turnaround_needs_the_priority_permission(svc_on_fakes: Services) -> None:
    svc = _with(svc_on_fakes, batchlane_folder_sources="folders")
    owner = _owner("a")
    for spec in ({**_folder_spec(1), "policy": {"deadline": _soon()}}, {**_folder_spec(2), "options": {"deadline": _soon()}}):
        with pytest.raises(Forbidden) as refused:
            folder_usecases.submit(svc, owner, spec, priority_group=PRIORITY)
        assert "deadline" in str(refused.value)
    assert folder_usecases.submit(svc, owner, {**_folder_spec(3), "policy": {"deadline": _later()}}, priority_group=PRIORITY)[1] is True
    assert folder_usecases.submit(svc, owner, {**_folder_spec(4), "policy": {"deadline": _soon()}})[1] is True  # with the permission


class MissingBuckets:
    """The folder buckets port with no object in them: a file started now ends FILE_MISSING at once."""

    def size(self, bucket: str, key: str) -> int | None:
        return None

    def head(self, bucket: str, key: str) -> None:
        return None


def test_a_folder_file_waiting_for_live_pages_is_not_started_again_until_its_pages_are_free(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    svc = _with(svc_on_fakes, batchlane_folder_sources="folders")
    svc.folder_buckets = lambda owner_id=None: MissingBuckets()  # type: ignore[method-assign,assignment]  # the port, offline
    owner = _owner("a")
    fake_uow.budgets.set_override(owner, usd_per_month=None, max_live_jobs=None, max_live_pages=60, updated_by="test")
    job, _ = folder_usecases.submit(svc, owner, _folder_spec(1))
    # the file's 50-page conversion was refused at its split: the owner's other 30-page conversion holds the cap
    refused, other = new_job(svc, pages=50, owner=owner), new_job(svc, pages=30, owner=owner)
    assert fake_uow.jobs.move_job(refused, st.fail(), error_id="LIVE_PAGES_LIMIT") is not None
    assert fake_uow.jobs.move_job(other, st.leave_batch_lane()) and fake_uow.jobs.move_job(other, st.start())
    fake_uow.folder_jobs.add_files(job["id"], [NewFolderFile("in-1/a.pdf", 10, "out-1/a.md")])
    assert [f.source_key for f in fake_uow.folder_jobs.claim_queued(job["id"], 1)] == ["in-1/a.pdf"]
    fake_uow.folder_jobs.attach_conversion(job["id"], "in-1/a.pdf", file_id=fake_uow.jobs.get_job(refused).file_id, conversion_job_id=refused)
    row = svc.uow().folder_jobs.get(job["id"])
    assert row is not None

    assert advance.settle_ended(svc, row) == 1  # queued again, not failed: the document alone fits the cap
    (waiting,) = fake_uow.folder_jobs.list_files(job["id"])
    assert (waiting.status, waiting.waits_for_pages, waiting.conversion_job_id) == ("queued", 50, None)
    assert advance.start_queued(svc, row) == 0, "30 pages free: the 50-page file is not downloaded and surveyed again"
    assert advance.start_queued(svc, row) == 0

    assert fake_uow.jobs.move_job(other, st.assemble()) and fake_uow.jobs.move_job(other, st.settle())
    assert advance.start_queued(svc, row) == 1  # 60 pages free: it starts
    assert fake_uow.folder_jobs.list_files(job["id"])[0].error_id == "FILE_MISSING"  # (offline, no object: it ends at once)
