"""A folder job's listing and submit, on the fakes, where a user would see a difference: what each listed file is
queued, failed or skipped with (its size, its output key, the words), a listing the bucket refuses, outputs that
collide across pages, and what a submit refuses before anything is listed (a past deadline, a model not enabled, a
folder granted to another owner). Issue 44.6: these survived mutation (classify, mark_collisions, enumerate_step,
prepare, resume)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from folder_fakes import ALICE, LISTING, MemoryBuckets, listed_job
from usecase_fakes import FakeBus, workflows_of

from batchlane.domain.errors import Conflict, InputError, LimitReached
from batchlane.folders import advance, finish, layout, usecases
from batchlane.folders.enumerate import enumerate_step
from batchlane.ports import ListedPage, Services
from fakes import FakeUnitOfWork


def _files(fake_uow: FakeUnitOfWork, job_id: str) -> dict[str, tuple[Any, ...]]:
    return {f.source_key: (f.status, f.size_bytes, f.output_key, f.error_id, f.error_message) for f in fake_uow.folder_jobs.list_files(job_id)}


def test_each_listed_file_keeps_its_size_and_what_it_is_queued_skipped_or_failed_with(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    buckets.put("folders", "in/a.pdf", b"%PDF-1.7 aaaa")
    buckets.put("folders", "in/b.pdf", b"%PDF-1.7 b")
    buckets.put("folders", "in/c.txt", b"text")
    body = {"input": {"folder": "s3://folders/in/", "include": ["*.pdf", "*.txt"]}, "output": {"layout": "mirror", "folder": "s3://folders/out/"}}
    job, _ = usecases.submit(svc, ALICE, body)
    buckets.put("folders", layout.report_key("out/", job["id"]), b'\n{"key": "in/b.pdf", "status": "completed"}\n\n', owner=ALICE)  # blank lines read past
    while not enumerate_step(fake_uow, lambda owner: buckets, FakeBus(), LISTING, job["id"])["enumerationDone"]:
        pass
    unsupported = "A .txt file cannot be converted: batchlane converts PDF, PNG, JPEG, WebP, TIFF, DOCX, PPTX, XLSX, HTML, EPUB or ODT."
    assert _files(fake_uow, job["id"]) == {
        "in/a.pdf": ("queued", 13, "out/a.md", None, None),
        "in/b.pdf": ("skipped", 10, "out/b.md", "ALREADY_CONVERTED", "An earlier run's report says this file was converted."),
        "in/c.txt": ("failed", 4, "out/c.md", "FILE_TYPE_UNSUPPORTED", unsupported),  # listed, never dropped
    }


def test_two_files_of_one_name_beside_each_other_collide_on_their_one_output(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    buckets.put("folders", "in/page.htm", b"<h1>x</h1>")
    buckets.put("folders", "in/page.html", b"<h1>y</h1>")
    job, _ = usecases.submit(svc, ALICE, {"input": {"folder": "s3://folders/in/"}})  # alongside
    while not enumerate_step(fake_uow, lambda owner: buckets, FakeBus(), LISTING, job["id"])["enumerationDone"]:
        pass
    message = "Its output in/page.md is already in/page.htm's; rename one of them or use the mirror layout."
    assert _files(fake_uow, job["id"]) == {
        "in/page.htm": ("queued", 10, "in/page.md", None, None),
        "in/page.html": ("failed", 10, "in/page.md", "OUTPUT_COLLISION", message),
    }


def test_two_files_of_one_output_key_collide_across_pages_and_the_first_keeps_it(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    for key in ("in/x/report.pdf", "in/y/report.pdf", "in/z/report.pdf"):
        buckets.put("folders", key, b"%PDF-1.7 " + key.encode())
    job, _ = usecases.submit(svc, ALICE, {"input": {"folder": "s3://folders/in/"}, "output": {"layout": "flat", "folder": "s3://folders/out/"}})
    one_a_page = LISTING.model_copy(update={"batchlane_folder_list_page_size": 1})
    while not enumerate_step(fake_uow, lambda owner: buckets, FakeBus(), one_a_page, job["id"])["enumerationDone"]:
        pass
    files = _files(fake_uow, job["id"])
    message = "Its output out/report/report.md is already in/x/report.pdf's; rename one of them or use the mirror layout."
    assert files["in/x/report.pdf"] == ("queued", 24, "out/report/report.md", None, None)
    assert files["in/y/report.pdf"] == ("failed", 24, "out/report/report.md", "OUTPUT_COLLISION", message)
    assert files["in/z/report.pdf"] == ("failed", 24, "out/report/report.md", "OUTPUT_COLLISION", message)  # the next one too


def test_a_listing_the_bucket_refuses_ends_the_job_in_error_and_says_so(
    svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets, monkeypatch: pytest.MonkeyPatch
) -> None:
    buckets.put("folders", "in/a.pdf")
    job, _ = usecases.submit(svc, ALICE, {"input": {"folder": "s3://folders/in/"}})

    def refused(*args: Any, **kwargs: Any) -> ListedPage:
        raise InputError("s3://folders/in/: AccessDenied", error_id="FOLDER_UNREADABLE")

    monkeypatch.setattr(buckets, "list_page", refused)
    bus = FakeBus()
    assert enumerate_step(fake_uow, lambda owner: buckets, bus, LISTING, job["id"]) == {"enumerationDone": True}
    row = fake_uow.folder_jobs.get(job["id"])
    assert row is not None and (row.status, row.error_id, row.error_message) == ("error", "FOLDER_UNREADABLE", "s3://folders/in/: AccessDenied")
    assert [(d["status"], d["error"]["code"]) for _, d in bus.events] == [("error", "FOLDER_UNREADABLE")]


def test_a_submit_refuses_a_past_deadline_a_model_not_enabled_and_another_owners_folder(svc: Services) -> None:
    body = {"input": {"folder": "s3://folders/in/"}}
    with pytest.raises(InputError) as late:
        usecases.prepare(svc, {**body, "policy": {"deadline": (datetime.now(UTC) - timedelta(minutes=1)).isoformat()}}, owner_id=ALICE)
    assert late.value.error_id == "DEADLINE_PAST"
    svc.settings = svc.settings.model_copy(update={"batchlane_model_ids": "m-one,m-two"})  # type: ignore[misc]
    assert usecases.prepare(svc, {**body, "options": {"modelId": "m-two"}}, owner_id=ALICE).options["modelId"] == "m-two"
    with pytest.raises(InputError) as model:
        usecases.prepare(svc, {**body, "options": {"modelId": "m-three"}}, owner_id=ALICE)
    assert (model.value.error_id, str(model.value)) == ("MODEL_NOT_ALLOWED", "Model m-three is not enabled in this deployment; use one of: m-one, m-two.")
    svc.settings = svc.settings.model_copy(update={"batchlane_folder_sources": "folders/home/{owner}/"})  # type: ignore[misc]
    assert usecases.prepare(svc, {"input": {"folder": "s3://folders/home/alice/in/"}}, owner_id=ALICE) is not None
    with pytest.raises(InputError) as other:
        usecases.prepare(svc, {"input": {"folder": "s3://folders/home/bob/in/"}}, owner_id=ALICE)
    assert other.value.error_id == "FOLDER_NOT_ALLOWED"


def test_a_resume_of_a_job_still_finishing_is_refused(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf"])
    job = fake_uow.folder_jobs.get(job_id)
    assert job is not None
    with pytest.raises(Conflict) as running:
        usecases.resume(svc, job, statuses=("failed",), error_ids=None, priority_allowed=True)
    assert (running.value.error_id, str(running.value)) == (
        "FOLDER_JOB_RUNNING",
        "The folder job is processing and still finishing; try again when it has ended.",
    )


def test_a_collision_does_not_stop_the_rest_of_its_page_from_being_queued(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    for key in ("in/x/report.pdf", "in/y/report.pdf", "in/z/notes.pdf"):
        buckets.put("folders", key, b"%PDF-1.7 " + key.encode())
    job, _ = usecases.submit(svc, ALICE, {"input": {"folder": "s3://folders/in/"}, "output": {"layout": "flat", "folder": "s3://folders/out/"}})
    while not enumerate_step(fake_uow, lambda owner: buckets, FakeBus(), LISTING, job["id"])["enumerationDone"]:
        pass
    statuses = {k: v[0] for k, v in _files(fake_uow, job["id"]).items()}
    assert statuses == {"in/x/report.pdf": "queued", "in/y/report.pdf": "failed", "in/z/notes.pdf": "queued"}


def test_a_submit_past_the_owners_folder_job_cap_is_refused_in_words_and_the_same_spec_is_no_new_job(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    svc.settings = svc.settings.model_copy(update={"batchlane_max_live_folder_jobs": 1})  # type: ignore[misc]
    first, created = usecases.submit(svc, ALICE, {"input": {"folder": "s3://folders/a/"}, "name": "first"})
    assert created and usecases.submit(svc, ALICE, {"input": {"folder": "s3://folders/a/"}})[0]["id"] == first["id"]  # the same job
    with pytest.raises(LimitReached) as capped:
        usecases.submit(svc, ALICE, {"input": {"folder": "s3://folders/b/"}})
    assert capped.value.error_id == "FOLDER_JOBS_LIMIT"
    assert "folder jobs running" in str(capped.value) and "BATCHLANE_MAX_LIVE_FOLDER_JOBS" in str(capped.value)
    assert "Wait for one to finish or cancel one" in str(capped.value)


def test_a_new_job_starts_its_first_run_and_keeps_its_spec_as_json(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    deadline = datetime(2099, 5, 1, 12, 0, tzinfo=UTC)
    job, _ = usecases.submit(svc, ALICE, {"input": {"folder": "s3://folders/a/"}, "name": "quarterly", "policy": {"deadline": deadline.isoformat()}})
    row = fake_uow.folder_jobs.get(job["id"])
    assert row is not None and ("folder", f"{job['id']}-1-{int(row.created_at.timestamp())}") in workflows_of(svc).started
    assert row.spec["policy"]["deadline"] == "2099-05-01T12:00:00Z" and job["spec"]["policy"]["deadline"] == "2099-05-01T12:00:00Z"
    assert (job["name"], job["throughputPagesPerMinute"], job["etaSeconds"]) == ("quarterly", None, None)


def _end_loop(svc: Services, fake_uow: FakeUnitOfWork, job_id: str) -> None:
    """The folder loop's last turn and its Finish: the cancelled job ends."""
    assert advance.advance(svc, job_id)["done"] is True
    finish.finish(fake_uow, svc.folder_buckets, svc.bus, job_id)


def test_the_same_spec_again_resumes_a_cancelled_job_only_when_it_skips_what_exists(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    skip = listed_job(svc, fake_uow, buckets, ["a.pdf", "b.pdf"])
    usecases.cancel(svc, ALICE, skip)
    _end_loop(svc, fake_uow, skip)
    again, created = usecases.submit(svc, ALICE, {"input": {"folder": "s3://folders/in/"}, "output": {"layout": "mirror", "folder": "s3://folders/out/"}})
    assert (again["id"], created, again["status"], again["files"]["queued"], again["files"]["skipped"]) == (skip, False, "processing", 2, 0)
    body = {"input": {"folder": "s3://folders/r/"}, "output": {"layout": "mirror", "folder": "s3://folders/r-out/", "onExisting": "replace"}}
    buckets.put("folders", "r/a.pdf")
    replace, _ = usecases.submit(svc, ALICE, body)
    while not enumerate_step(fake_uow, lambda owner: buckets, FakeBus(), LISTING, replace["id"])["enumerationDone"]:
        pass
    usecases.cancel(svc, ALICE, replace["id"])
    _end_loop(svc, fake_uow, replace["id"])
    assert usecases.submit(svc, ALICE, body)[0]["status"] == "cancelled"  # replace: the same spec again does not run it again


def test_a_job_that_could_not_run_answers_its_error(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    job, _ = usecases.submit(svc, ALICE, {"input": {"folder": "s3://folders/empty/"}, "output": {"layout": "mirror", "folder": "s3://folders/o/"}})
    while not enumerate_step(fake_uow, lambda owner: buckets, FakeBus(), LISTING, job["id"])["enumerationDone"]:
        pass
    assert usecases.status(svc, ALICE, job["id"])["error"]["code"] == "FOLDER_EMPTY"
    assert usecases.status(svc, ALICE, job["id"])["error"]["message"] == "The folder holds no objects."
