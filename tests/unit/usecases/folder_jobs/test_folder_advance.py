"""A folder job's turns (folders/advance.advance) on the fakes: files started within the caps, their ended conversions
settled (the Markdown and what lies beside it copied to the output key, stamped with the owner; pages, cost, lane and
error recorded; a failure retried, waiting for pages, or final), the report part written, the loop told when it is done
and when to hand over to the next execution. Until issue 44.6 a turn ran only on the offline stack (tests/e2e/
test_folder_jobs.py): no fast test reached advance(), settle_ended() or the copies beside the Markdown."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest
from folder_fakes import ALICE, MemoryBuckets, end_conversion, file_of, listed_job, ours
from usecase_fakes import store_of, workflows_of

from batchlane.domain.errors import InputError, LimitReached, NotFound, ObjectUnreadable, StoreUnavailable
from batchlane.filejob.outputs import CONTENT_TYPES
from batchlane.folders import advance, finish, usecases
from batchlane.folders.spec import parse_spec
from batchlane.ports import Services
from fakes import FakeUnitOfWork


def test_a_turn_starts_the_files_then_a_later_turn_copies_each_output_and_reports_it(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf", "sub/b.pdf"])

    first = advance.advance(svc, job_id)

    assert first == {"done": False, "handover": False, "processing": 2, "queued": 0}
    assert {f.status for f in fake_uow.folder_jobs.list_files(job_id)} == {"processing"}
    conversion = end_conversion(fake_uow, svc, job_id, "in/a.pdf", "completed", total_pages=3, pages_batch=3, total_cost_usd=Decimal("0.25"))
    ours(svc, f"jobs/{conversion}/pages.jsonl", b'{"page": 1}\n')
    ours(svc, f"jobs/{conversion}/output.html", b"<h1>a</h1>")
    ours(svc, f"jobs/{conversion}/images/p1-1.png", b"png")
    ours(svc, f"jobs/{conversion}/blocks.jsonl", b'{"block": 1}\n')  # conversionFormats.json

    second = advance.advance(svc, job_id)

    assert second == {"done": False, "handover": False, "processing": 1, "queued": 0}
    a = file_of(fake_uow, job_id, "in/a.pdf")
    assert (a.status, a.pages, a.cost_usd, a.lane, a.output_key) == ("completed", 3, Decimal("0.25"), "batch", "out/a.md")
    out = {k: v for (b, k), v in buckets.objects.items() if b == "folders" and k.startswith("out/") and "_batchlane" not in k}
    assert out == {
        "out/a.md": (b"# in/a.pdf", ALICE),
        "out/a.pages.jsonl": (b'{"page": 1}\n', ALICE),
        "out/a.converted.html": (b"<h1>a</h1>", ALICE),
        "out/a.images/p1-1.png": (b"png", ALICE),
        "out/a.blocks.jsonl": (b'{"block": 1}\n', ALICE),
    }  # no docx rendering was produced: none is copied
    assert {k: buckets.content_types[("folders", k)] for k in out} == {
        "out/a.md": "text/markdown; charset=utf-8",
        "out/a.pages.jsonl": "application/x-ndjson",
        "out/a.converted.html": "text/html; charset=utf-8",
        "out/a.images/p1-1.png": "image/png",
        "out/a.blocks.jsonl": CONTENT_TYPES["json"],
    }
    (part,) = [k for (b, k) in buckets.objects if k.startswith(f"out/_batchlane/{job_id}/report/")]
    (line,) = [json.loads(x) for x in buckets.objects[("folders", part)][0].splitlines()]
    assert (line["key"], line["status"], line["pages"], line["costUsd"], line["outputUris"]) == (
        "in/a.pdf",
        "completed",
        3,
        "0.250000",
        ["s3://folders/out/a.md"],
    )
    assert buckets.objects[("folders", part)][1] == ALICE and buckets.content_types[("folders", part)] == "application/x-ndjson"

    assert set(buckets.read_as) == {ALICE}  # listed, read and written as the job's owner, never with the deployment's role
    end_conversion(fake_uow, svc, job_id, "in/sub/b.pdf", "cancelled")
    last = advance.advance(svc, job_id)
    assert last == {"done": True, "handover": False, "processing": 0, "queued": 0}
    b = file_of(fake_uow, job_id, "in/sub/b.pdf")
    assert (b.status, b.error_id, b.error_message) == ("skipped", "CANCELLED", "The file's conversion was cancelled.")
    assert ("folders", "out/sub/b.md") not in buckets.objects


def test_a_failed_conversion_is_retried_until_its_retries_are_spent_then_fails_with_its_error(
    svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets
) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf"], policy={"maxRetries": 1})
    advance.advance(svc, job_id)
    end_conversion(fake_uow, svc, job_id, "in/a.pdf", "failed", error_id="CONVERSION_FAILED", error_message="the model answered nothing")
    assert advance.advance(svc, job_id)["done"] is False
    retried = file_of(fake_uow, job_id, "in/a.pdf")
    assert (retried.status, retried.attempts) == ("processing", 2)  # queued again and started in the same turn
    end_conversion(fake_uow, svc, job_id, "in/a.pdf", "failed", error_id="CONVERSION_FAILED", error_message="the model answered nothing", total_pages=4)
    assert advance.advance(svc, job_id)["done"] is True
    failed = file_of(fake_uow, job_id, "in/a.pdf")
    assert (failed.status, failed.error_id, failed.error_message, failed.pages) == ("failed", "CONVERSION_FAILED", "the model answered nothing", 4)


def test_a_failure_that_no_retry_mends_fails_the_file_at_once_and_a_missing_error_is_a_conversion_failure(
    svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets
) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf", "b.pdf"])
    advance.advance(svc, job_id)
    end_conversion(fake_uow, svc, job_id, "in/a.pdf", "failed", error_id="PDF_ENCRYPTED", error_message="encrypted")
    end_conversion(fake_uow, svc, job_id, "in/b.pdf", "failed", error_id=None, error_message=None)
    advance.advance(svc, job_id)
    a, b = file_of(fake_uow, job_id, "in/a.pdf"), file_of(fake_uow, job_id, "in/b.pdf")
    assert (a.status, a.error_id, a.attempts) == ("failed", "PDF_ENCRYPTED", 1)
    assert b.status == "processing" and b.attempts == 2  # no error id: retried as a conversion failure


def test_a_file_refused_for_the_owners_live_pages_waits_for_them_without_spending_a_retry(
    svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets
) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf"], policy={"maxRetries": 0})
    advance.advance(svc, job_id)
    end_conversion(fake_uow, svc, job_id, "in/a.pdf", "failed", error_id="LIVE_PAGES_LIMIT", error_message="cap", total_pages=10)
    advance.advance(svc, job_id)
    waiting = file_of(fake_uow, job_id, "in/a.pdf")
    assert (waiting.status, waiting.error_id, waiting.waits_for_pages) == ("processing", None, 10)  # maxRetries 0: a retry would have failed it


def test_the_markdown_missing_or_another_owners_output_fails_the_file_and_nothing_is_overwritten(
    svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets
) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf", "b.pdf"], output={"layout": "mirror", "folder": "s3://folders/out/", "onExisting": "replace"})
    advance.advance(svc, job_id)
    conversion = end_conversion(fake_uow, svc, job_id, "in/a.pdf", "completed", total_pages=1)
    store_of(svc).delete_keys([f"jobs/{conversion}/output.md"])
    del buckets.objects[(svc.store.bucket, f"jobs/{conversion}/output.md")]
    end_conversion(fake_uow, svc, job_id, "in/b.pdf", "completed", total_pages=1)
    buckets.put("folders", "out/b.md", b"# bob's", owner="bob")  # written by bob's job after b.pdf started
    advance.advance(svc, job_id)
    a, b = file_of(fake_uow, job_id, "in/a.pdf"), file_of(fake_uow, job_id, "in/b.pdf")
    assert (a.status, a.error_id, a.error_message) == ("failed", "OUTPUT_MISSING", "The Markdown was not found.")
    assert (b.status, b.error_id) == ("failed", "OUTPUT_NOT_YOURS")
    assert b.error_message == "out/b.md was written by another owner's folder job: it is never overwritten."
    assert buckets.objects[("folders", "out/b.md")] == (b"# bob's", "bob")


def test_a_cancelled_job_starts_nothing_new_and_is_done_once_its_files_in_flightend_conversion(
    svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets
) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf", "b.pdf", "c.pdf"])
    svc.settings = svc.settings.model_copy(update={"batchlane_folder_max_in_flight": 1})  # type: ignore[misc]
    assert advance.advance(svc, job_id) == {"done": False, "handover": False, "processing": 1, "queued": 2}
    usecases.cancel(svc, ALICE, job_id)
    assert advance.advance(svc, job_id) == {"done": False, "handover": False, "processing": 1, "queued": 0}
    skipped = [f for f in fake_uow.folder_jobs.list_files(job_id) if f.status == "skipped"]
    assert [(f.error_id, f.error_message) for f in skipped] == [("CANCELLED", "The folder job was cancelled before this file started.")] * 2
    (running,) = [f for f in fake_uow.folder_jobs.list_files(job_id) if f.status == "processing"]
    end_conversion(fake_uow, svc, job_id, running.source_key, "completed", total_pages=1)
    assert advance.advance(svc, job_id)["done"] is True


def test_after_its_turns_a_run_hands_over_to_the_next_execution_once(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf"])
    svc.settings = svc.settings.model_copy(update={"batchlane_folder_turns_per_execution": 2})  # type: ignore[misc]
    before = len(workflows_of(svc).started)
    assert advance.advance(svc, job_id)["handover"] is False  # turn 1
    assert advance.advance(svc, job_id)["handover"] is True  # turn 2: the next run starts
    job = fake_uow.folder_jobs.get(job_id)
    handed = [s for s in workflows_of(svc).started[before:] if s[0] == "folder"]
    assert job is not None and job.run == 2 and handed == [("folder", f"{job_id}-2-{int(job.created_at.timestamp())}")]


def test_a_turn_of_a_job_that_does_not_exist_is_not_found(svc: Services) -> None:
    with pytest.raises(NotFound):
        advance.advance(svc, "fj-" + "0" * 32)


def test_each_settled_file_says_which_lane_served_it_and_why(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    """The report's lane: batch when any page was batch-served, converter for a born-digital file, else on-demand; its
    reason: the file's own (priority, deadline), else the deployment's batch-lane rule for its pages."""
    job_id = listed_job(svc, fake_uow, buckets, ["batch.pdf", "few.pdf", "many.pdf", "notes.docx"])
    advance.advance(svc, job_id)
    end_conversion(fake_uow, svc, job_id, "in/batch.pdf", "completed", total_pages=5, pages_batch=1)
    end_conversion(fake_uow, svc, job_id, "in/few.pdf", "completed", total_pages=5, pages_batch=0)
    end_conversion(fake_uow, svc, job_id, "in/many.pdf", "completed", total_pages=svc.settings.batch_conversion_min_pages)
    end_conversion(fake_uow, svc, job_id, "in/notes.docx", "completed", total_pages=3, source_type="docx")
    advance.advance(svc, job_id)
    lanes = {f.source_key: (f.lane, f.lane_reason) for f in fake_uow.folder_jobs.list_files(job_id)}
    assert lanes == {
        "in/batch.pdf": ("batch", "bulk_opt_in"),
        "in/few.pdf": ("on_demand", "bulk_opt_in"),  # a priority normal folder opts every file in, however few its pages
        "in/many.pdf": ("on_demand", "large_job"),
        "in/notes.docx": ("converter", "born_digital"),
    }
    high = listed_job(svc, fake_uow, buckets, ["h.pdf"], folder="high", policy={"priority": "high"})
    advance.advance(svc, high)
    end_conversion(fake_uow, svc, high, "high/h.pdf", "completed", total_pages=5)
    advance.advance(svc, high)
    assert (file_of(fake_uow, high, "high/h.pdf").lane, file_of(fake_uow, high, "high/h.pdf").lane_reason) == ("on_demand", "priority_high")


def test_the_lane_rule_reads_a_priority_high_spec_without_the_bulk_opt_in(svc: Services) -> None:
    job = SimpleNamespace(spec={"policy": {"priority": "high"}, "options": {}})
    assert advance.lane_rule_reason(svc, job, 5) == "too_few_pages"  # type: ignore[arg-type]
    assert advance.lane_rule_reason(svc, SimpleNamespace(spec={"policy": {"priority": "low"}}), 5) == "bulk_opt_in"  # type: ignore[arg-type]
    assert advance.lane_rule_reason(svc, SimpleNamespace(spec={"options": {"highFidelity": False}}), 5) == "not_high_fidelity"  # type: ignore[arg-type]
    svc.settings = svc.settings.model_copy(update={"batch_conversion_enabled": False})  # type: ignore[misc]
    assert advance.lane_rule_reason(svc, job, 5000) == "lane_off"  # type: ignore[arg-type]


class Opening:
    """filejob.create_job as start_file calls it, answering as told: what each file was opened with."""

    def __init__(self, answer: BaseException | None = None) -> None:
        self.answer = answer
        self.calls: list[dict[str, Any]] = []

    def __call__(self, svc: Services, *, file_id: str, options: dict[str, Any], max_pages: int | None, on_demand: bool) -> Any:
        self.calls.append({"file_id": file_id, "options": options, "max_pages": max_pages, "on_demand": on_demand})
        if self.answer is not None:
            raise self.answer
        return SimpleNamespace(job_id=f"conv-{len(self.calls)}")


@pytest.mark.parametrize(
    ("answer", "status", "error_id"),
    [
        (LimitReached("cap full"), "queued", None),  # a race with the owner's other conversions: the next turn
        (StoreUnavailable("S3 blip"), "queued", None),
        (RuntimeError("throttled"), "queued", None),  # the intake could not start
        (InputError("Model x is not enabled.", error_id="MODEL_NOT_ALLOWED"), "failed", "MODEL_NOT_ALLOWED"),  # this file only
    ],
)
def test_a_file_whose_conversion_cannot_open_waits_for_the_next_turn_or_fails_alone(
    svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets, monkeypatch: pytest.MonkeyPatch, answer: BaseException, status: str, error_id: str | None
) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf"])
    monkeypatch.setattr(advance, "create_job", Opening(answer))
    advance.advance(svc, job_id)
    f = file_of(fake_uow, job_id, "in/a.pdf")
    assert (f.status, f.error_id, f.conversion_job_id) == (status, error_id, None)
    if error_id:
        assert f.error_message == "Model x is not enabled."


def test_a_file_opens_its_conversion_from_where_it_lies_with_the_folders_options(
    svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["sub/a.pdf"], options={"highFidelity": True}, policy={"maxPagesPerDocument": 40})
    opening = Opening()
    monkeypatch.setattr(advance, "create_job", opening)
    advance.advance(svc, job_id)
    (call,) = opening.calls
    assert (call["options"], call["max_pages"], call["on_demand"]) == ({"highFidelity": True, "batchLane": True}, 40, False)
    source = fake_uow.jobs.get_file(call["file_id"])
    assert source is not None
    assert (source.name, source.s3_key, source.source_bucket, source.size_bytes, source.owner_id) == (
        "a.pdf",
        "in/sub/a.pdf",
        "folders",
        len(b"%PDF-1.7 sub/a.pdf"),
        ALICE,
    )
    f = file_of(fake_uow, job_id, "in/sub/a.pdf")
    assert (f.status, f.conversion_job_id, f.file_id) == ("processing", "conv-1", call["file_id"])


def test_a_source_that_cannot_be_read_fails_alone_and_the_rest_go_on(
    svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf", "b.pdf"])
    opening = Opening()
    monkeypatch.setattr(advance, "create_job", opening)
    real_head = buckets.head

    def head(bucket: str, key: str) -> Any:
        if key == "in/a.pdf":
            raise ObjectUnreadable("s3://folders/in/a.pdf: AccessDenied (KMS)", error_id="OBJECT_UNREADABLE")
        return real_head(bucket, key)

    monkeypatch.setattr(buckets, "head", head)
    advance.advance(svc, job_id)
    a, b = file_of(fake_uow, job_id, "in/a.pdf"), file_of(fake_uow, job_id, "in/b.pdf")
    assert (a.status, a.error_id, a.error_message) == ("failed", "OBJECT_UNREADABLE", "s3://folders/in/a.pdf: AccessDenied (KMS)")
    assert b.status == "processing" and len(opening.calls) == 1


def test_files_start_within_the_folders_in_flight_cap_and_the_owners_live_job_cap(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf", "b.pdf", "c.pdf", "d.pdf", "e.pdf"])
    svc.settings = svc.settings.model_copy(update={"batchlane_folder_max_in_flight": 3})  # type: ignore[misc]
    assert advance.advance(svc, job_id)["processing"] == 3
    assert advance.advance(svc, job_id) == {"done": False, "handover": False, "processing": 3, "queued": 2}  # full: none more
    assert fake_uow.budgets.standing(ALICE).live_jobs == 3  # its three conversions are the owner's live jobs
    svc.settings = svc.settings.model_copy(update={"batchlane_folder_max_in_flight": 10, "batchlane_max_live_jobs": 4})  # type: ignore[misc]
    assert advance.advance(svc, job_id) == {"done": False, "handover": False, "processing": 4, "queued": 1}  # one place left under the cap
    svc.settings = svc.settings.model_copy(update={"batchlane_max_live_jobs": 0})  # type: ignore[misc]
    assert advance.advance(svc, job_id)["queued"] == 1  # no place left: it waits, never fails


NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
TURNAROUND_H, MARGIN_H = 30.0, 2.0  # the batch lane's turnaround and the margin its pages need after it


def _spec(priority: str = "normal", deadline: datetime | None = None) -> Any:
    policy: dict[str, Any] = {"priority": priority, **({"deadline": deadline.isoformat()} if deadline else {})}
    return parse_spec({"input": {"folder": "s3://folders/in/"}, "options": {"highFidelity": True}, "policy": policy})


@pytest.mark.parametrize(
    ("priority", "hours_left", "allowed", "reason", "options"),
    [
        ("normal", None, True, None, {"highFidelity": True, "batchLane": True}),
        ("low", TURNAROUND_H + MARGIN_H + 1, True, None, {"highFidelity": True, "batchLane": True, "deadline": "+"}),  # room: the pool
        ("normal", TURNAROUND_H + MARGIN_H / 2, True, "deadline", {"highFidelity": True, "batchLane": True, "deadline": "+"}),  # the margin does not fit
        ("normal", MARGIN_H + 1, True, "deadline", {"highFidelity": True, "batchLane": True, "deadline": "+"}),  # the turnaround does not fit
        ("normal", MARGIN_H + 1, False, "deadline_missed", {"highFidelity": True, "batchLane": True}),  # no rights: stays, loses the deadline
        ("high", None, True, "priority_high", {"highFidelity": True}),  # no bulk opt-in
        ("high", None, False, None, {"highFidelity": True}),
    ],
)
def test_a_starting_files_lane_and_options_follow_the_policy_and_the_rights_recorded_with_the_job(
    priority: str, hours_left: float | None, allowed: bool, reason: str | None, options: dict[str, Any]
) -> None:
    deadline = NOW + timedelta(hours=hours_left) if hours_left is not None else None
    spec = _spec(priority, deadline)
    got_reason, got_options = advance.file_lane(SimpleNamespace(priority_allowed=allowed), spec, NOW, TURNAROUND_H, MARGIN_H)  # type: ignore[arg-type]
    expected = {k: (deadline.isoformat() if v == "+" and deadline else v) for k, v in options.items()}
    assert (got_reason, got_options) == (reason, expected)
    assert (got_reason in advance.ON_DEMAND_REASONS) == (reason in ("deadline", "priority_high"))


def test_a_file_claimed_but_never_opened_is_started_again_after_fifteen_minutes(
    svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Lambda died between the claim and the conversion's start: the file is claimed again, not left processing."""
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf"])
    assert len(fake_uow.folder_jobs.claim_queued(job_id, 1)) == 1  # claimed by a turn whose Lambda then died
    opening = Opening()
    monkeypatch.setattr(advance, "create_job", opening)
    fake_uow.state.clock.at += timedelta(seconds=advance.STALLED_START_S)
    advance.advance(svc, job_id)
    assert opening.calls == []  # not yet: it may still be starting
    fake_uow.state.clock.at += timedelta(seconds=1)
    advance.advance(svc, job_id)
    assert len(opening.calls) == 1 and file_of(fake_uow, job_id, "in/a.pdf").conversion_job_id == "conv-1"


def test_an_output_already_there_when_a_file_starts_skips_or_fails_it_without_a_conversion(
    svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf", "b.pdf", "c.pdf"])
    buckets.put("folders", "out/a.md", b"# mine", owner=ALICE)  # written by an earlier job of alice's
    buckets.put("folders", "out/b.md", b"# theirs")  # not written by batchlane
    opening = Opening()
    monkeypatch.setattr(advance, "create_job", opening)
    advance.advance(svc, job_id)
    a, b = file_of(fake_uow, job_id, "in/a.pdf"), file_of(fake_uow, job_id, "in/b.pdf")
    assert (a.status, a.error_id, a.error_message) == ("skipped", "ALREADY_CONVERTED", "out/a.md exists (output.onExisting: skip).")
    assert (b.status, b.error_id) == ("failed", "OUTPUT_EXISTS") and len(opening.calls) == 1  # c.pdf only


def test_a_job_still_listing_is_not_done_though_nothing_is_queued(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    job, _ = usecases.submit(svc, ALICE, {"input": {"folder": "s3://folders/empty-yet/"}, "output": {"layout": "mirror", "folder": "s3://folders/o/"}})
    assert advance.advance(svc, job["id"]) == {"done": False, "handover": False, "processing": 0, "queued": 0}


def test_a_failure_without_an_error_id_fails_the_file_as_a_conversion_failure(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf"], policy={"maxRetries": 0})
    advance.advance(svc, job_id)
    end_conversion(fake_uow, svc, job_id, "in/a.pdf", "failed", error_id=None, error_message=None)
    advance.advance(svc, job_id)
    assert (file_of(fake_uow, job_id, "in/a.pdf").status, file_of(fake_uow, job_id, "in/a.pdf").error_id) == ("failed", "CONVERSION_FAILED")


def test_a_job_ended_in_error_skips_its_queued_files_and_lets_those_in_flight_finish(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets) -> None:
    job_id = listed_job(svc, fake_uow, buckets, ["a.pdf", "b.pdf"])
    svc.settings = svc.settings.model_copy(update={"batchlane_folder_max_in_flight": 1})  # type: ignore[misc]
    assert advance.advance(svc, job_id)["queued"] == 1
    finish.fail(fake_uow, svc.folder_buckets, svc.bus, job_id, error_id="FOLDER_JOB_FAILED", message="the loop broke")
    assert advance.advance(svc, job_id) == {"done": False, "handover": False, "processing": 1, "queued": 0}
    skipped = [f for f in fake_uow.folder_jobs.list_files(job_id) if f.status == "skipped"]
    assert [(f.error_id, f.error_message) for f in skipped] == [("CANCELLED", "The folder job was cancelled before this file started.")]
