"""A folder job's lane rights, decided once at submit and again at retry, never by the file starting (issue 40.3).

Review: Bob (no priority group) submits a folder with a deadline the batch lane can still meet; a file fails; he fixes
it and retries after the turnaround no longer fits: the retried file went on-demand with reason ``deadline``, because
folders/advance.start_file re-decided the lane each time a file started and the retry never looked at the group.
Queued files of a large folder drifted on-demand the same way. Without the group, a late file stays in the batch lane
and is reported ``deadline_missed``."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from folder_fakes import MemoryBuckets

from batchlane.domain import status as st
from batchlane.domain.errors import Forbidden
from batchlane.folders import advance
from batchlane.folders import usecases as folder_usecases
from batchlane.folders.spec import FolderJobSpec
from batchlane.ports import Services
from batchlane.rows import NewFolderFile
from fakes import FakeUnitOfWork

PRIORITY = "batchlane-priority"  # the group a caller without the permission lacks


def _with_folders(svc: Services, buckets: MemoryBuckets) -> Services:
    svc = dataclasses.replace(svc, settings=svc.settings.model_copy(update={"batchlane_folder_sources": "folders"}))
    svc.folder_buckets = lambda owner_id=None: buckets  # type: ignore[method-assign, assignment]  # the port, offline
    return svc


def _spec(deadline: datetime, priority: str = "normal") -> dict[str, Any]:
    i = uuid.uuid4().hex[:6]
    return {
        "input": {"folder": f"s3://folders/in-{i}/"},
        "output": {"layout": "mirror", "folder": f"s3://folders/out-{i}/"},
        "policy": {"deadline": deadline.isoformat(), "priority": priority},
    }


class Started:
    """create_job as start_file calls it: what lane the file was sent to, with which options."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, svc: Services, *, file_id: str, options: dict[str, Any], max_pages: int | None, on_demand: bool) -> Any:
        self.calls.append({"options": options, "on_demand": on_demand})
        return type("Created", (), {"job_id": str(uuid.uuid4())})()


def _fits(svc: Services) -> datetime:
    """A deadline the batch turnaround (and its margin) still meets, with two hours to spare."""
    return datetime.now(UTC) + timedelta(hours=svc.settings.batch_deadline_hours + svc.settings.batch_deadline_margin_s / 3600 + 2)


def _start_late_file(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets, job_id: str, started: Started) -> str:
    """Time passes (the deadline, as the spec stores it, moves within the turnaround) and a file of the job starts."""
    job = fake_uow.folder_jobs.get(job_id)
    assert job is not None
    soon = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    spec = {**job.spec, "policy": {**job.spec["policy"], "deadline": soon}}
    fake_uow.folder_jobs._rows.jobs[job_id] = dataclasses.replace(job, spec=spec)  # what the clock does to a stored deadline
    key = f"{job.input_prefix}late-{uuid.uuid4().hex[:4]}.pdf"
    buckets.put(job.input_bucket, key)
    fake_uow.folder_jobs.add_files(job_id, [NewFolderFile(key, 8, None)])
    (claimed,) = fake_uow.folder_jobs.claim_queued(job_id, 1)
    row = fake_uow.folder_jobs.get(job_id)
    assert row is not None
    advance.start_file(svc, buckets, row, FolderJobSpec.model_validate(row.spec), claimed)
    return key


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> Started:
    seen = Started()
    monkeypatch.setattr(advance, "create_job", seen)
    return seen


def test_without_the_priority_group_a_late_file_stays_in_the_batch_lane_and_is_reported_deadline_missed(
    svc_on_fakes: Services, fake_uow: FakeUnitOfWork, started: Started
) -> None:
    buckets = MemoryBuckets()
    svc = _with_folders(svc_on_fakes, buckets)
    bob = f"bob-{uuid.uuid4().hex[:6]}"
    job, _ = folder_usecases.submit(svc, bob, _spec(_fits(svc)), priority_group=PRIORITY)  # a deadline the batch lane meets: allowed
    key = _start_late_file(svc, fake_uow, buckets, job["id"], started)
    (call,) = started.calls
    assert call["on_demand"] is False, "a late file of a job without the lane rights went on-demand"
    assert "deadline" not in call["options"] and call["options"]["batchLane"] is True  # the pool would send it on-demand by it
    (row,) = [f for f in fake_uow.folder_jobs.list_files(job["id"]) if f.source_key == key]
    assert row.lane_reason == "deadline_missed"


def test_with_the_priority_group_at_submit_a_late_file_goes_on_demand_for_its_deadline(
    svc_on_fakes: Services, fake_uow: FakeUnitOfWork, started: Started
) -> None:
    buckets = MemoryBuckets()
    svc = _with_folders(svc_on_fakes, buckets)
    alice = f"alice-{uuid.uuid4().hex[:6]}"
    job, _ = folder_usecases.submit(svc, alice, _spec(_fits(svc)), priority_group=None)  # a member of the group
    key = _start_late_file(svc, fake_uow, buckets, job["id"], started)
    assert started.calls[0]["on_demand"] is True
    (row,) = [f for f in fake_uow.folder_jobs.list_files(job["id"]) if f.source_key == key]
    assert row.lane_reason == "deadline"


def test_a_retry_decides_the_rights_again_from_the_callers_groups_then(svc_on_fakes: Services, fake_uow: FakeUnitOfWork, started: Started) -> None:
    """Bob's retry after the turnaround no longer fits: allowed (his files only wait in the batch lane), with no rights;
    a priority-high job retried by someone who lost the group is refused, as its submit would be."""
    buckets = MemoryBuckets()
    svc = _with_folders(svc_on_fakes, buckets)
    bob = f"bob-{uuid.uuid4().hex[:6]}"
    job, _ = folder_usecases.submit(svc, bob, _spec(_fits(svc)), priority_group=PRIORITY)
    row = fake_uow.folder_jobs.get(job["id"])
    assert row is not None
    buckets.put(row.input_bucket, f"{row.input_prefix}a.pdf")
    fake_uow.folder_jobs.add_files(job["id"], [NewFolderFile(f"{row.input_prefix}a.pdf", 8, None)])
    (a,) = fake_uow.folder_jobs.claim_queued(job["id"], 1)
    fake_uow.folder_jobs.finish_file(job["id"], a.source_key, status="failed", error_id="CONVERSION_FAILED", error_message="boom")
    assert fake_uow.folder_jobs.move(job["id"], st.folder_job("enumerated")) and fake_uow.folder_jobs.move(job["id"], st.folder_job("complete_with_failures"))
    folder_usecases.retry(svc, bob, job["id"], priority_group=PRIORITY)
    assert fake_uow.folder_jobs.get(job["id"]).priority_allowed is False  # type: ignore[union-attr]
    _start_late_file(svc, fake_uow, buckets, job["id"], started)
    assert started.calls[-1]["on_demand"] is False

    carol = f"carol-{uuid.uuid4().hex[:6]}"
    high, _ = folder_usecases.submit(svc, carol, _spec(_fits(svc), priority="high"), priority_group=None)
    assert fake_uow.folder_jobs.get(high["id"]).priority_allowed is True  # type: ignore[union-attr]
    fake_uow.folder_jobs.add_files(high["id"], [NewFolderFile(f"{fake_uow.folder_jobs.get(high['id']).input_prefix}b.pdf", 8, None)])  # type: ignore[union-attr]
    (b,) = fake_uow.folder_jobs.claim_queued(high["id"], 1)
    fake_uow.folder_jobs.finish_file(high["id"], b.source_key, status="failed", error_id="CONVERSION_FAILED", error_message="boom")
    assert fake_uow.folder_jobs.move(high["id"], st.folder_job("enumerated")) and fake_uow.folder_jobs.move(high["id"], st.folder_job("complete_with_failures"))
    with pytest.raises(Forbidden):  # carol has left the group since
        folder_usecases.retry(svc, carol, high["id"], priority_group=PRIORITY)
    assert fake_uow.folder_jobs.get(high["id"]).status == "completed_with_failures"  # type: ignore[union-attr]  # not reopened


def test_a_job_that_could_not_run_is_listed_again_with_the_rights_of_who_retries_it(
    svc_on_fakes: Services, fake_uow: FakeUnitOfWork, started: Started
) -> None:
    """An empty folder's job (error) runs again from its listing at retry (issue 41.5): its lane rights are the retrying
    caller's groups then, as for a retry of failed files; a priority-high one is refused without the group."""
    buckets = MemoryBuckets()
    svc = _with_folders(svc_on_fakes, buckets)
    dana = f"dana-{uuid.uuid4().hex[:6]}"
    job, _ = folder_usecases.submit(svc, dana, _spec(_fits(svc)), priority_group=None)  # in the group at submit
    assert fake_uow.folder_jobs.move(job["id"], st.folder_job("fail"), error_id="FOLDER_EMPTY", error_message="nothing there")
    folder_usecases.retry(svc, dana, job["id"], priority_group=PRIORITY)  # she has left the group since
    again = fake_uow.folder_jobs.get(job["id"])
    assert again is not None and (again.status, again.run, again.priority_allowed) == ("enumerating", 2, False)

    high, _ = folder_usecases.submit(svc, dana, _spec(_fits(svc), priority="high"), priority_group=None)
    assert fake_uow.folder_jobs.move(high["id"], st.folder_job("fail"), error_id="FOLDER_EMPTY", error_message="nothing there")
    with pytest.raises(Forbidden):
        folder_usecases.retry(svc, dana, high["id"], priority_group=PRIORITY)
    assert fake_uow.folder_jobs.get(high["id"]).status == "error"  # type: ignore[union-attr]  # not listed again
