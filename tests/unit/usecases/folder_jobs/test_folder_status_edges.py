"""What a folder job's owner reads and asks of it, on the fakes: its status field by field (pace and ETA), its files a
page at a time with their refusals, its report a page at a time, retry and cancel with their refusals, and the sweep
that ends a job whose run ended without recording it (folders/recovery.py). Issue 44.6: the mutants of these were
reached by no fast test, or by owner-isolation tests that stop at the 404."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest
from folder_fakes import ALICE, LISTING, MemoryBuckets, end_conversion, file_of, listed_job
from usecase_fakes import FakeBus, workflows_of

import batchlane
from batchlane.contract import FOLDER_JOB_STATE_CHANGE_DETAIL_TYPE
from batchlane.domain import status as st
from batchlane.domain.errors import Conflict, Forbidden, InputError, NotFound
from batchlane.domain.workflow_end import Execution
from batchlane.folders import advance, finish, recovery, usecases
from batchlane.folders.enumerate import enumerate_step
from batchlane.folders.spec import NotificationsSpec
from batchlane.ports import Services
from batchlane.rows import FolderCounts, FolderJob
from batchlane.webhooks.subscription import CallbackInvalid
from fakes import FakeUnitOfWork


def _finished(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets, outcomes: dict[str, tuple[str, int]], folder: str = "in") -> str:
    """A job whose files ended as ``outcomes`` (name -> (conversion status, pages)), its loop run to the end."""
    job_id = listed_job(svc, fake_uow, buckets, sorted(outcomes), folder=folder, policy={"maxRetries": 0})
    advance.advance(svc, job_id)
    for name, (status, pages) in outcomes.items():
        extra: dict[str, Any] = {"error_id": "PDF_ENCRYPTED", "error_message": "encrypted"} if status == "failed" else {}
        end_conversion(fake_uow, svc, job_id, f"{folder}/{name}", status, total_pages=pages, total_cost_usd=Decimal("0.1"), **extra)
    assert advance.advance(svc, job_id)["done"] is True
    finish.finish(fake_uow, svc.folder_buckets, svc.bus, job_id)
    return job_id


def test_a_finished_jobs_status_field_by_field(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    job_id = _finished(svc, fake_uow, buckets, {"a.pdf": ("completed", 6), "b.pdf": ("completed", 6), "c.pdf": ("failed", 0)})
    job = fake_uow.folder_jobs.get(job_id)
    assert job is not None
    seen = usecases.status(svc, ALICE, job_id)
    assert seen["id"] == job_id and seen["status"] == "completed_with_failures" and seen["error"] is None
    assert seen["files"] == {"discovered": 3, "excluded": 0, "queued": 0, "processing": 0, "completed": 2, "failed": 1, "skipped": 0}
    assert seen["pages"] == {"completed": 12, "failed": 0} and seen["costUsd"] == "0.3"  # the failed file's spend too
    assert seen["enumerationComplete"] is True and seen["etaSeconds"] == 0  # finished: nothing left
    assert (seen["outputUri"], seen["manifestUri"]) == ("s3://folders/out/", f"s3://folders/out/_batchlane/{job_id}/manifest.json")
    assert seen["reportUri"] == f"s3://folders/out/_batchlane/{job_id}/report.jsonl"
    assert seen["createdAt"] == job.created_at.isoformat() and seen["finishedAt"] == job.finished_at.isoformat()  # type: ignore[union-attr]
    assert seen["spec"]["output"] == {"folder": "s3://folders/out/", "layout": "mirror", "onExisting": "skip"}
    assert usecases.list_jobs(svc, ALICE) == {"folderJobs": [seen]}
    assert usecases.list_jobs(svc, "bob") == {"folderJobs": []}


def test_pace_is_pages_a_minute_and_the_eta_scales_the_pages_per_finished_file_to_the_files_left(
    fake_uow: FakeUnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = fake_uow.state.clock.now()

    class Held(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return now

    monkeypatch.setattr(usecases, "datetime", Held)  # pace reads the wall clock: held at the fakes' now

    def counts(**kw: Any) -> FolderCounts:
        base = {"discovered": 0, "queued": 0, "processing": 0, "completed": 0, "failed": 0, "skipped": 0, "pages_completed": 0, "pages_failed": 0}
        return FolderCounts(**{**base, "cost_usd": Decimal(0), **kw})  # type: ignore[arg-type]

    job = _job_row(fake_uow, minutes_ago=10)
    # 20 pages in 10 minutes: 2 a minute; 4 files finished (5 pages each), 6 left: 30 pages, 15 minutes
    assert usecases.pace(job, counts(completed=3, failed=1, pages_completed=18, pages_failed=2, queued=4, processing=2)) == (2.0, 900)
    assert usecases.pace(job, counts(completed=1, pages_completed=9, queued=4)) == (0.9, None)  # under ETA_MIN_PAGES: no ETA yet
    assert usecases.pace(job, counts(completed=1, pages_completed=10, queued=1)) == (1.0, 600)  # exactly ETA_MIN_PAGES
    assert usecases.pace(job, counts(queued=4)) == (None, None)  # nothing done: no figure at all
    assert usecases.pace(_job_row(fake_uow, minutes_ago=3), counts(completed=1, pages_completed=7, queued=1)) == (2.33, None)  # two decimals
    assert usecases.pace(_job_row(fake_uow, minutes_ago=0.5), counts(completed=1, pages_completed=10, queued=1)) == (20.0, 30)  # under a minute
    assert usecases.pace(_job_row(fake_uow, minutes_ago=0), counts(pages_completed=1))[0] == 1_000_000.0  # no division by zero
    listing = _job_row(fake_uow, minutes_ago=10, enumeration_done=False)
    assert usecases.pace(listing, counts(completed=3, pages_completed=30, queued=4)) == (3.0, None)  # the folder's size is not known yet


def _job_row(fake_uow: FakeUnitOfWork, *, minutes_ago: float, enumeration_done: bool = True) -> Any:
    now = fake_uow.state.clock.now()
    fields = {f.name: None for f in dataclasses.fields(FolderJob)}
    return dataclasses.replace(
        FolderJob(**fields),  # type: ignore[arg-type]
        created_at=now - timedelta(minutes=minutes_ago),
        finished_at=None,
        enumeration_done=enumeration_done,
    )


def test_files_are_answered_a_page_at_a_time_with_what_became_of_each(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    job_id = _finished(svc, fake_uow, buckets, {"a.pdf": ("completed", 2), "b.pdf": ("failed", 0), "c.pdf": ("completed", 1)})
    first = usecases.files(svc, ALICE, job_id, limit=2)
    assert [f["key"] for f in first["files"]] == ["in/a.pdf", "in/b.pdf"] and first["next"] == "in/b.pdf"
    a, b = first["files"]
    assert (a["status"], a["pages"], a["pagesFailed"], a["attempts"], a["outputUris"], a["failedPages"]) == (
        "completed",
        2,
        0,
        1,
        ["s3://folders/out/a.md"],
        [],
    )
    assert a["conversionJobId"] is not None and a["error"] is None
    assert (b["status"], b["outputUris"], b["error"]["code"]) == ("failed", [], "PDF_ENCRYPTED")
    rest = usecases.files(svc, ALICE, job_id, after="in/b.pdf", limit=2)
    assert [f["key"] for f in rest["files"]] == ["in/c.pdf"] and rest["next"] is None
    assert [f["key"] for f in usecases.files(svc, ALICE, job_id, status_filter="failed")["files"]] == ["in/b.pdf"]
    with pytest.raises(InputError) as bad_status:
        usecases.files(svc, ALICE, job_id, status_filter="done")
    assert bad_status.value.error_id == "STATUS_INVALID"
    for after in ("in/\x1fa", "in/\x7f", "k" * 1025):
        with pytest.raises(InputError) as bad_after:
            usecases.files(svc, ALICE, job_id, after=after)
        assert bad_after.value.error_id == "BAD_REQUEST"
    assert usecases.files(svc, ALICE, job_id, after="k" * 1024)["files"] == []  # an S3 key's full length is a key


def test_the_report_is_answered_a_page_at_a_time(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    job_id = _finished(svc, fake_uow, buckets, {"a.pdf": ("completed", 1), "b.pdf": ("completed", 1), "c.pdf": ("completed", 1)})
    whole = list(usecases.report(svc, ALICE, job_id))
    assert [json.loads(line)["key"] for line in whole] == ["in/a.pdf", "in/b.pdf", "in/c.pdf"]
    page, after = usecases.report_page(svc, ALICE, job_id, after=None, limit=2)
    assert (page, after) == (whole[:2], "in/b.pdf")
    assert usecases.report_page(svc, ALICE, job_id, after=after, limit=2) == (whole[2:], None)
    assert usecases.report_page(svc, ALICE, job_id, after=None, limit=3) == (whole, None)  # exactly a page: no next
    with pytest.raises(NotFound):
        usecases.report_page(svc, "bob", job_id, after=None, limit=2)


def test_retry_requeues_the_failed_files_in_a_new_run_and_refuses_what_it_cannot_do(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    job_id = _finished(svc, fake_uow, buckets, {"a.pdf": ("completed", 1), "b.pdf": ("failed", 0)})
    before = fake_uow.folder_jobs.get(job_id)
    assert before is not None
    retried = usecases.retry(svc, ALICE, job_id)
    assert (retried["requeued"], retried["status"], retried["files"]["queued"], retried["files"]["completed"]) == (1, "processing", 1, 1)
    again = fake_uow.folder_jobs.get(job_id)
    assert again is not None and again.run == before.run + 1
    assert ("folder", f"{job_id}-{again.run}-{int(again.created_at.timestamp())}") in workflows_of(svc).started
    with pytest.raises(Conflict) as running:
        usecases.retry(svc, ALICE, job_id)
    assert running.value.error_id == "FOLDER_JOB_RUNNING" and str(running.value) == "The folder job is still processing; retry it once it has finished."
    done = _finished(svc, fake_uow, buckets, {"x.pdf": ("completed", 1)}, folder="other")
    with pytest.raises(Conflict) as nothing:
        usecases.retry(svc, ALICE, done)
    assert (nothing.value.error_id, str(nothing.value)) == ("NOTHING_TO_RETRY", "No file failed: there is nothing to retry.")


def test_retry_of_only_some_error_ids_requeues_only_those(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    job_id = _finished(svc, fake_uow, buckets, {"a.pdf": ("failed", 0), "b.pdf": ("failed", 0)})
    assert usecases.retry(svc, ALICE, job_id, error_ids=["PDF_ENCRYPTED"])["requeued"] == 2
    other = _finished(svc, fake_uow, buckets, {"c.pdf": ("failed", 0)}, folder="other")
    assert usecases.retry(svc, ALICE, other, error_ids=["SOMETHING_ELSE"])["requeued"] == 0


def test_cancel_of_an_ended_job_is_refused_and_of_a_live_one_skips_its_queue(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    job_id = _finished(svc, fake_uow, buckets, {"a.pdf": ("completed", 1)})
    with pytest.raises(Conflict) as ended:
        usecases.cancel(svc, ALICE, job_id)
    assert (ended.value.error_id, str(ended.value)) == ("NOT_CANCELLABLE", "The folder job is completed; there is nothing to cancel.")
    live = listed_job(svc, fake_uow, buckets, ["z.pdf"], folder="live")
    cancelled = usecases.cancel(svc, ALICE, live)
    assert (cancelled["status"], cancelled["files"]["queued"], cancelled["files"]["skipped"]) == ("cancelled", 0, 1)


def test_a_job_is_its_owners_only_and_an_id_that_cannot_be_one_is_refused(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf"])
    with pytest.raises(NotFound) as other:
        usecases.status(svc, "bob", job_id)
    assert str(other.value) == f"no folder job {job_id}"
    with pytest.raises(InputError):
        usecases.status(svc, ALICE, "../etc")


def test_the_grants_are_answered_as_folder_uris(svc: Services) -> None:
    svc.settings = svc.settings.model_copy(update={"batchlane_folder_sources": "folders,shared/team/"})  # type: ignore[misc]
    assert usecases.grants(svc, ALICE) == {"folders": ["s3://folders/", "s3://shared/team/"]}


def test_a_folder_jobs_notifications_name_only_the_event_a_folder_sends() -> None:
    ok = usecases.check_notifications(NotificationsSpec(callback_url="https://hooks.example.com/x", callback_events=["job.completed"]), allow_private=False)
    assert (ok.callback_url, ok.callback_events) == ("https://hooks.example.com/x", ["job.completed"])
    with pytest.raises(CallbackInvalid) as wrong:
        usecases.check_notifications(
            NotificationsSpec(callback_url="https://hooks.example.com/x", callback_events=["job.completed", "file.error", "job.paused"]), allow_private=False
        )
    assert str(wrong.value) == "notifications.callback_events: a folder job sends job.completed, not file.error, job.paused."


def test_the_sweep_ends_a_job_whose_run_ended_without_recording_it(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    """Every file ended and the run was ABORTED before its Finish: finished as Finish would; a run that TIMED_OUT with a
    file in flight: the job's error; a RUNNING one is left alone."""
    done = listed_job(svc, fake_uow, buckets, ["a.pdf"])
    advance.advance(svc, done)
    end_conversion(fake_uow, svc, done, "in/a.pdf", "completed", total_pages=1)
    advance.advance(svc, done)
    stuck = listed_job(svc, fake_uow, buckets, ["b.pdf", "b2.pdf"], folder="stuck")
    svc.settings = svc.settings.model_copy(update={"batchlane_folder_max_in_flight": 1})  # type: ignore[misc]
    advance.advance(svc, stuck)  # one file in flight, one queued: the run timed out with both unfinished
    fresh = listed_job(svc, fake_uow, buckets, ["c.pdf"], folder="fresh")
    clock = fake_uow.state.clock
    for job_id, status in ((done, "ABORTED"), (stuck, "TIMED_OUT"), (fresh, "RUNNING")):
        job = fake_uow.folder_jobs.get(job_id)
        assert job is not None
        machine, name = recovery.we.folder_execution(job.id, job.run, job.created_at)
        workflows_of(svc).executions[(machine, name)] = Execution(machine, name, status, clock.now(), clock.now() + timedelta(seconds=1))
    clock.at += timedelta(seconds=recovery.SWEEP_UNCHANGED_S + 2)

    ended = recovery.settle_ended_folder_jobs(svc)

    assert ended == {done: "completed", stuck: "error"}  # the running one is left alone
    told = {d["jobId"]: d["status"] for _, d in svc.bus.events}  # type: ignore[attr-defined]
    assert (told.get(done), told.get(stuck)) == ("completed", "error")
    assert ("folders", f"stuck-out/_batchlane/{stuck}/manifest.json") in buckets.objects  # its record written as it failed
    stuck_row = fake_uow.folder_jobs.get(stuck)
    assert stuck_row is not None and stuck_row.error_id == "FOLDER_JOB_TIMED_OUT"
    assert recovery.settle_ended_folder_jobs(svc) == {}  # ended once


def test_the_sweep_waits_until_a_job_is_unchanged_for_its_time_scaled(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf"])
    job = fake_uow.folder_jobs.get(job_id)
    assert job is not None
    machine, name = recovery.we.folder_execution(job.id, job.run, job.created_at)
    clock = fake_uow.state.clock
    workflows_of(svc).executions[(machine, name)] = Execution(machine, name, "FAILED", clock.now(), clock.now())
    svc.settings = svc.settings.model_copy(update={"batchlane_time_scale": 10.0})  # type: ignore[misc]
    clock.at += timedelta(seconds=recovery.SWEEP_UNCHANGED_S / 10 - 1)
    assert recovery.settle_ended_folder_jobs(svc) == {}
    clock.at += timedelta(seconds=2)
    assert recovery.settle_ended_folder_jobs(svc) == {job_id: "error"}
    row = fake_uow.folder_jobs.get(job_id)
    assert row is not None and row.error_id == "FOLDER_JOB_FAILED"


def test_an_explicit_file_list_is_listed_in_pages_of_its_own_and_a_missing_file_fails_when_it_starts(
    svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets
) -> None:
    buckets.put("folders", "in/a.pdf")
    buckets.put("folders", "in/c.pdf")
    body = {
        "input": {"files": ["s3://folders/in/a.pdf", "s3://folders/in/b.pdf", "s3://folders/in/c.pdf"]},
        "output": {"folder": "s3://folders/out/", "layout": "mirror"},
    }
    job, _ = usecases.submit(svc, ALICE, body)
    two_a_page = LISTING.model_copy(update={"batchlane_folder_list_page_size": 2})
    assert enumerate_step(fake_uow, lambda owner: buckets, FakeBus(), two_a_page, job["id"]) == {"enumerationDone": False}
    assert [f.source_key for f in fake_uow.folder_jobs.list_files(job["id"])] == ["in/a.pdf", "in/b.pdf"]
    assert enumerate_step(fake_uow, lambda owner: buckets, FakeBus(), two_a_page, job["id"]) == {"enumerationDone": True}
    assert [f.source_key for f in fake_uow.folder_jobs.list_files(job["id"])] == ["in/a.pdf", "in/b.pdf", "in/c.pdf"]
    advance.advance(svc, job["id"])
    missing = file_of(fake_uow, job["id"], "in/b.pdf")
    assert (missing.status, missing.error_id, missing.error_message) == ("failed", "FILE_MISSING", "s3://folders/in/b.pdf does not exist.")


def test_a_completed_files_failed_pages_are_listed_and_no_other_file_asks_for_them(
    svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf", "b.pdf", "c.pdf"], policy={"maxRetries": 0})
    advance.advance(svc, job_id)
    with_gaps = end_conversion(fake_uow, svc, job_id, "in/a.pdf", "completed", total_pages=9, pages_failed=2)
    end_conversion(fake_uow, svc, job_id, "in/b.pdf", "completed", total_pages=9)
    end_conversion(fake_uow, svc, job_id, "in/c.pdf", "failed", total_pages=9, pages_failed=9, error_id="PDF_ENCRYPTED")
    advance.advance(svc, job_id)
    asked: list[str] = []

    def failed_pages(svc: Services, conversion_id: str) -> list[Any]:  # filejob/retry.failed_pages, held by its own tests
        asked.append(conversion_id)
        return [SimpleNamespace(page=7), SimpleNamespace(page=3)]

    monkeypatch.setattr(usecases, "failed_pages", failed_pages)
    listed = {f["key"]: f["failedPages"] for f in usecases.files(svc, ALICE, job_id)["files"]}
    assert listed == {"in/a.pdf": [3, 7], "in/b.pdf": [], "in/c.pdf": []}
    assert asked == [with_gaps]


def test_cancel_stops_the_conversions_parked_for_the_batch_lane(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf", "b.pdf"])
    advance.advance(svc, job_id)
    parked = end_conversion(fake_uow, svc, job_id, "in/a.pdf", "waiting_batch")
    running = file_of(fake_uow, job_id, "in/b.pdf").conversion_job_id
    assert usecases.stop_parked(svc, job_id) == 1
    assert (fake_uow.jobs.get_job(parked).status, fake_uow.jobs.get_job(running).status) == ("cancelled", "splitting")  # type: ignore[union-attr]


def test_a_broken_loop_ends_the_job_once_with_its_message_capped_even_when_the_bucket_refuses_the_record(
    svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets
) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf"])
    bus = FakeBus()

    def refusing(owner: str) -> Any:
        raise RuntimeError("the bucket is the problem")

    assert finish.fail(fake_uow, refusing, bus, job_id, error_id="FOLDER_JOB_FAILED", message="m" * 600) == {"jobId": job_id, "status": "error"}
    row = fake_uow.folder_jobs.get(job_id)
    assert row is not None and (row.status, row.error_id, row.error_message) == ("error", "FOLDER_JOB_FAILED", "m" * 500)
    assert [(d["status"], d["outcome"], d["error"]) for _, d in bus.events] == [("error", "error", {"code": "FOLDER_JOB_FAILED", "message": "m" * 500})]
    again = finish.fail(fake_uow, lambda owner: buckets, bus, job_id, error_id="FOLDER_JOB_TIMED_OUT", message="later")
    assert again == {"jobId": job_id, "status": "error"} and len(bus.events) == 1  # already ended: not moved, not told again
    assert fake_uow.folder_jobs.get(job_id).error_id == "FOLDER_JOB_FAILED"  # type: ignore[union-attr]
    assert finish.fail(fake_uow, lambda owner: buckets, bus, "fj-" + "0" * 24, error_id="X", message="y") == {"jobId": "fj-" + "0" * 24, "status": "error"}


def test_the_manifest_and_report_in_the_users_bucket_field_by_field(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    """A document completed with failed pages ends the job completed_with_failures (no file failed); the record is the owner's."""
    buckets.put("folders", "in/notes.txt", b"not a type we convert")
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf", "b.pdf"], name="quarterly", input={"folder": "s3://folders/in/", "exclude": ["b.*"]})
    advance.advance(svc, job_id)
    end_conversion(fake_uow, svc, job_id, "in/a.pdf", "completed", total_pages=4, pages_failed=1, total_cost_usd=Decimal("0.5"))
    advance.advance(svc, job_id)
    bus = FakeBus()
    assert finish.finish(fake_uow, svc.folder_buckets, bus, job_id) == {"jobId": job_id, "status": "completed_with_failures"}
    job = fake_uow.folder_jobs.get(job_id)
    assert job is not None
    body, owner = buckets.objects[("folders", f"out/_batchlane/{job_id}/manifest.json")]
    written = json.loads(body)
    assert owner == ALICE and written.pop("writtenAt") and written.pop("spec")["name"] == "quarterly"
    assert written == {
        "jobId": job_id, "name": "quarterly", "status": "completed_with_failures", "batchlaneVersion": batchlane.__version__,
        "enumeration": {"objectsListed": 3, "excluded": 2, "complete": True},  # b.pdf by the glob, notes.txt by the default include
        "files": {"discovered": 1, "queued": 0, "processing": 0, "completed": 1, "failed": 0, "skipped": 0},
        "pages": {"completed": 3, "failed": 1}, "costUsd": "0.5",
        "createdAt": job.created_at.isoformat(), "enumeratedAt": job.enumerated_at.isoformat(), "finishedAt": written["finishedAt"],  # type: ignore[union-attr]
    }  # fmt: skip
    assert written["finishedAt"] is not None
    assert body.startswith(b'{\n  "batchlaneVersion": ')  # indented, keys sorted: a person reads it in the bucket
    report_key, manifest_key = ("folders", f"out/_batchlane/{job_id}/report.jsonl"), ("folders", f"out/_batchlane/{job_id}/manifest.json")
    assert (buckets.content_types[report_key], buckets.content_types[manifest_key]) == ("application/x-ndjson", "application/json")
    report, report_owner = buckets.objects[report_key]
    assert report_owner == ALICE and [json.loads(line)["key"] for line in report.splitlines()] == ["in/a.pdf"]
    ((detail_type, detail),) = bus.events
    assert detail_type == FOLDER_JOB_STATE_CHANGE_DETAIL_TYPE and detail.pop("changedAt").endswith("+00:00")  # UTC, with its zone
    assert detail == {
        "scope": "folder_job", "jobId": job_id, "name": "quarterly", "ownerId": ALICE, "status": "completed_with_failures",
        "outcome": "completed_with_failures",
        "files": {"discovered": 1, "excluded": 2, "queued": 0, "processing": 0, "completed": 1, "failed": 0, "skipped": 0},
        "pages": {"completed": 3, "failed": 1}, "costUsd": "0.500000",
        "outputs": {"folder": "s3://folders/out/", "manifest": f"s3://folders/{manifest_key[1]}", "report": f"s3://folders/{report_key[1]}"},
        "error": None,
    }  # fmt: skip
    assert written["finishedAt"].endswith("+00:00") and json.loads(body)["writtenAt"].endswith("+00:00")  # UTC, with its zone

    def owners(owner: str) -> Any:
        assert owner == ALICE
        return buckets

    assert finish.finish(fake_uow, owners, bus, job_id) == {"jobId": job_id, "status": "completed_with_failures"} and len(bus.events) == 1
    assert [json.loads(line)["outputUris"] for line in usecases.report(svc, ALICE, job_id)] == [["s3://folders/out/a.md"]]


def test_a_cancelled_job_finishes_cancelled_and_a_job_that_does_not_exist_is_not_found(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf"])
    usecases.cancel(svc, ALICE, job_id)
    assert advance.advance(svc, job_id)["done"] is True
    assert finish.finish(fake_uow, svc.folder_buckets, FakeBus(), job_id) == {"jobId": job_id, "status": "cancelled"}
    with pytest.raises(NotFound) as missing:
        finish.finish(fake_uow, svc.folder_buckets, FakeBus(), "fj-" + "0" * 24)
    assert str(missing.value) == "no folder job fj-" + "0" * 24


# -- what the first measured run after these tests left alive (issue 44.6) ----------------------------------------------
def test_the_grants_follow_the_owner_and_the_groups_of_the_caller(svc: Services) -> None:
    svc.settings = svc.settings.model_copy(update={"batchlane_folder_sources": "folders/home/{owner}/,legal@vault/contracts/"})  # type: ignore[misc]
    assert usecases.grants(svc, ALICE) == {"folders": ["s3://folders/home/alice/"]}
    assert usecases.grants(svc, "bob", groups=["legal"]) == {"folders": ["s3://folders/home/bob/", "s3://vault/contracts/"]}


def test_files_and_report_pages_of_three_name_their_last_key_and_refuse_in_words(
    svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcomes = {f"{name}.pdf": ("completed", 1) for name in "abcd"}
    job_id = _finished(svc, fake_uow, buckets, outcomes)
    first = usecases.files(svc, ALICE, job_id, limit=3)
    assert [f["key"] for f in first["files"]] == ["in/a.pdf", "in/b.pdf", "in/c.pdf"] and first["next"] == "in/c.pdf"
    page, after = usecases.report_page(svc, ALICE, job_id, after=None, limit=3)
    assert [json.loads(line)["key"] for line in page] == ["in/a.pdf", "in/b.pdf", "in/c.pdf"] and after == "in/c.pdf"
    assert usecases.files(svc, ALICE, job_id, after="in/a b.pdf")["files"][0]["key"] == "in/a.pdf"  # a space is a key's own
    with pytest.raises(InputError) as bad_status:
        usecases.files(svc, ALICE, job_id, status_filter="done")
    assert str(bad_status.value) == "status must be one of queued, processing, completed, failed, skipped."
    with pytest.raises(InputError) as bad_after:
        usecases.files(svc, ALICE, job_id, after="in/\n")
    assert str(bad_after.value) == "after must be an object key (at most 1024 characters, no control characters)."


def test_a_failed_files_error_carries_its_message_and_failed_pages_are_read_for_this_deployment(
    svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = _finished(svc, fake_uow, buckets, {"a.pdf": ("failed", 0)})
    (line,) = [json.loads(x) for x in usecases.report(svc, ALICE, job_id)]
    assert (line["outputKeys"], line["outputUris"], line["error"]["message"]) == ([], [], "encrypted")  # an output key, but no output
    error = usecases.files(svc, ALICE, job_id)["files"][0]["error"]
    assert (error["code"], error["message"]) == ("PDF_ENCRYPTED", "encrypted") and error["nextStep"].startswith("Remove the password")
    other = listed_job(svc, fake_uow, buckets, ["g.pdf"], folder="gaps")
    advance.advance(svc, other)
    end_conversion(fake_uow, svc, other, "gaps/g.pdf", "completed", total_pages=3, pages_failed=1)
    advance.advance(svc, other)

    def failed_pages(given: Services, conversion_id: str) -> list[Any]:
        assert given is svc  # the deployment's store and database, not another's
        return [SimpleNamespace(page=2)]

    monkeypatch.setattr(usecases, "failed_pages", failed_pages)
    assert usecases.files(svc, ALICE, other)["files"][0]["failedPages"] == [2]


def test_list_jobs_answers_at_most_its_limit_newest_first(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    listed_job(svc, fake_uow, buckets, ["a.pdf"], folder="one")
    fake_uow.state.clock.at += timedelta(seconds=1)
    newest = listed_job(svc, fake_uow, buckets, ["b.pdf"], folder="two")
    assert [j["id"] for j in usecases.list_jobs(svc, ALICE, limit=1)["folderJobs"]] == [newest]


def test_a_cancel_leaves_the_job_unended_until_its_files_in_flight_end_and_stops_parked_ones(
    svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets
) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf", "b.pdf"])
    advance.advance(svc, job_id)
    parked = end_conversion(fake_uow, svc, job_id, "in/a.pdf", "waiting_batch")
    cancelled = usecases.cancel(svc, ALICE, job_id)
    assert (cancelled["status"], cancelled["finishedAt"]) == ("cancelled", None)
    assert fake_uow.jobs.get_job(parked).status == "cancelled"  # type: ignore[union-attr]


def test_a_folder_jobs_notification_keeps_its_headers() -> None:
    spec = NotificationsSpec(callback_url="https://hooks.example.com/x", callback_events=["job.completed"], callback_headers={"X-Api-Key": "k"})
    assert usecases.check_notifications(spec, allow_private=False).callback_headers == {"X-Api-Key": "k"}


def test_an_explicit_list_of_exactly_one_page_is_listed_in_one_step(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    body = {"input": {"files": ["s3://folders/in/a.pdf", "s3://folders/in/b.pdf"]}, "output": {"folder": "s3://folders/out/", "layout": "mirror"}}
    job, _ = usecases.submit(svc, ALICE, body)
    two_a_page = LISTING.model_copy(update={"batchlane_folder_list_page_size": 2})
    assert enumerate_step(fake_uow, lambda owner: buckets, FakeBus(), two_a_page, job["id"]) == {"enumerationDone": True}


def test_failing_a_job_that_already_ended_answers_its_status_and_reads_the_owners_bucket(
    svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets
) -> None:
    job_id = _finished(svc, fake_uow, buckets, {"a.pdf": ("completed", 1)})

    def owners(owner: str) -> Any:
        assert owner == ALICE
        return buckets

    assert finish.fail(fake_uow, owners, FakeBus(), job_id, error_id="X", message="y") == {"jobId": job_id, "status": "completed"}
    live = listed_job(svc, fake_uow, buckets, ["z.pdf"], folder="live")
    assert finish.fail(fake_uow, owners, FakeBus(), live, error_id="FOLDER_JOB_FAILED", message="m")["status"] == "error"
    assert ("folders", f"live-out/_batchlane/{live}/manifest.json") in buckets.objects


def test_without_the_priority_group_a_spec_that_leaves_the_batch_lane_is_refused_naming_each_reason(svc: Services) -> None:
    soon = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    body = {"input": {"folder": "s3://folders/in/"}, "policy": {"priority": "high", "deadline": soon}, "options": {"deadline": soon, "parser": "docling"}}
    with pytest.raises(Forbidden) as refused:
        usecases.submit(svc, ALICE, body, priority_group="batchlane-priority")
    hours = f"{svc.settings.batch_deadline_hours:g}"
    assert str(refused.value) == (
        f"priority high, lane opt-out options or a deadline sooner than the batch lane's {hours} h turnaround "
        "(policy.priority high, parser, policy.deadline, options.deadline) skip the half-price batch lane; "
        "that needs membership of the batchlane-priority group."
    )


def test_a_retry_without_the_group_is_not_refused_for_a_deadline_that_has_come_close_since(
    svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets
) -> None:
    """The deadline was the submit's to judge; a retry by someone without the group keeps the files in the batch lane."""
    soon = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf"], policy={"deadline": soon, "maxRetries": 0}, options={"deadline": soon})
    advance.advance(svc, job_id)
    end_conversion(fake_uow, svc, job_id, "in/a.pdf", "failed", error_id="PDF_ENCRYPTED", error_message="encrypted")
    advance.advance(svc, job_id)
    finish.finish(fake_uow, svc.folder_buckets, svc.bus, job_id)
    retried = usecases.retry(svc, ALICE, job_id, priority_group="batchlane-priority")
    assert retried["requeued"] == 1 and fake_uow.folder_jobs.get(job_id).priority_allowed is False  # type: ignore[union-attr]
    assert [d["status"] for _, d in svc.bus.events][-1] == "processing"  # type: ignore[attr-defined]  # the reopened job told


def test_cancel_stops_every_parked_conversion_even_after_one_that_left_the_lane(
    svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf", "b.pdf"])
    advance.advance(svc, job_id)
    first = end_conversion(fake_uow, svc, job_id, "in/a.pdf", "waiting_batch")
    second = end_conversion(fake_uow, svc, job_id, "in/b.pdf", "waiting_batch")
    stopped: list[str] = []

    def cancel_job(svc: Services, conversion_id: str) -> None:
        stopped.append(conversion_id)
        if conversion_id == first:
            raise Conflict("it is assembling now")

    monkeypatch.setattr(usecases, "cancel_job", cancel_job)
    assert usecases.stop_parked(svc, job_id) == 2 and sorted(stopped) == sorted([first, second])


def test_a_finish_that_meets_a_cancel_ends_the_job_cancelled_and_says_so_in_its_record(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    """The job is cancelled between Finish's read and its move: the move to completed fails, the job ends cancelled,
    and the record written first is written again with the status it ended with."""
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf"])
    advance.advance(svc, job_id)
    end_conversion(fake_uow, svc, job_id, "in/a.pdf", "completed", total_pages=1)
    advance.advance(svc, job_id)
    real = fake_uow.folder_jobs

    class CancelledMeanwhile:
        cancelled = False

        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def move(self, job: str, move: Any, **kw: Any) -> Any:
            if not self.cancelled:
                self.cancelled = True
                real.move(job, st.folder_job("cancel"), ended=False)  # the owner's cancel lands first
            return real.move(job, move, **kw)

    bus = FakeBus()
    answer = finish.finish(SimpleNamespace(folder_jobs=CancelledMeanwhile()), svc.folder_buckets, bus, job_id)  # type: ignore[arg-type]
    assert answer == {"jobId": job_id, "status": "cancelled"}
    manifest = json.loads(buckets.objects[("folders", f"out/_batchlane/{job_id}/manifest.json")][0])
    assert manifest["status"] == "cancelled" and [d["status"] for _, d in bus.events] == ["cancelled"]
