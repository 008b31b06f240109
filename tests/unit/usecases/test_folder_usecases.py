"""The folder use cases on the in-memory unit of work and buckets (no server): listing page by page, what an output
already there means (``onExisting: skip`` trusts only this owner's output at this file's output key), the report
parts, and the end of a job (record written, status moved by the table, event published)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from folder_fakes import MemoryBuckets
from usecase_fakes import FakeBus

from batchlane.config import Settings
from batchlane.contract import FOLDER_JOB_STATE_CHANGE_DETAIL_TYPE
from batchlane.domain import status as st
from batchlane.domain.errors import NotFound, ObjectUnreadable
from batchlane.folders import finish, layout
from batchlane.folders.advance import output_refusal, write_report_part
from batchlane.folders.enumerate import earlier_report_sources, enumerate_step
from batchlane.folders.spec import FolderJobSpec, folder_job_id, parse_spec
from batchlane.ports import ObjectHead
from batchlane.rows import FolderFile, FolderJob, NewFolderFile
from fakes import FakeUnitOfWork

ALICE, BOB = "alice", "bob"
SETTINGS = Settings(batchlane_folder_list_page_size=2, batchlane_folder_list_pages_per_step=1)


def _submit(uow: FakeUnitOfWork, body: dict[str, Any], owner: str = ALICE) -> tuple[FolderJob, FolderJobSpec]:
    spec = parse_spec(body)
    job = uow.folder_jobs.add(
        job_id=folder_job_id(spec, owner), owner_id=owner, name=spec.name, spec=spec.model_dump(mode="json"),
        source=(spec.input_uri.bucket, spec.input_uri.key), target=(spec.output_uri.bucket, spec.output_uri.key),
    )  # fmt: skip
    assert job is not None
    return job, spec


MIRROR = {"input": {"folder": "s3://in/docs/"}, "output": {"folder": "s3://out/md/", "layout": "mirror"}}


def _list_all(uow: FakeUnitOfWork, buckets: MemoryBuckets, bus: FakeBus, job_id: str) -> int:
    steps = 0
    while not enumerate_step(uow, lambda owner: buckets, bus, SETTINGS, job_id)["enumerationDone"]:
        steps += 1
    return steps + 1


def _claimed(uow: FakeUnitOfWork, job: FolderJob, key: str) -> FolderFile:
    uow.folder_jobs.add_files(
        job.id, [NewFolderFile(key, 8, layout.output_key(key, input_prefix="docs/", output_prefix="md/", layout="mirror", is_input=lambda k: False))]
    )
    (claimed,) = [f for f in uow.folder_jobs.claim_queued(job.id, 10) if f.source_key == key]
    return claimed


# -- onExisting: skip (planted bug: the check read the wrong key) ---------------------------------------------------
def test_skip_trusts_only_this_owners_output_at_this_files_own_output_key() -> None:
    uow, buckets = FakeUnitOfWork(), MemoryBuckets()
    job, spec = _submit(uow, MIRROR)
    a, b = _claimed(uow, job, "docs/a.pdf"), _claimed(uow, job, "docs/b.pdf")
    assert (a.output_key, b.output_key) == ("md/a.md", "md/b.md")
    buckets.put("in", "docs/a.pdf")  # the sources themselves (no owner stamp)
    buckets.put("in", "docs/b.pdf")
    buckets.put("out", "md/b.md", b"# B", owner=ALICE)  # another file's output, alice's
    buckets.put("in", "md/a.md", b"# A", owner=ALICE)  # a.pdf's output key, but in the input bucket
    # Nothing at a.pdf's own output key: it converts; b.pdf's own output is alice's: skipped
    assert output_refusal(buckets, job, spec, a) is None
    assert output_refusal(buckets, job, spec, b) == ("skipped", "ALREADY_CONVERTED", "md/b.md exists (output.onExisting: skip).")


def test_skip_never_trusts_an_output_without_this_owners_stamp() -> None:
    uow, buckets = FakeUnitOfWork(), MemoryBuckets()
    job, spec = _submit(uow, MIRROR)
    a = _claimed(uow, job, "docs/a.pdf")
    buckets.put("out", "md/a.md", b"# the user's own notes")  # not written by batchlane
    assert output_refusal(buckets, job, spec, a)[:2] == ("failed", "OUTPUT_EXISTS")  # type: ignore[index]
    buckets.put("out", "md/a.md", b"# bob's", owner=BOB)
    assert output_refusal(buckets, job, spec, a)[:2] == ("failed", "OUTPUT_NOT_YOURS")  # type: ignore[index]
    replacing, replace_spec = _submit(uow, {**MIRROR, "output": {**MIRROR["output"], "onExisting": "replace"}})
    replaced = _claimed(uow, replacing, "docs/a.pdf")
    assert output_refusal(buckets, replacing, replace_spec, replaced)[:2] == ("failed", "OUTPUT_NOT_YOURS")  # type: ignore[index]
    buckets.put("out", "md/a.md", b"# alice's", owner=ALICE)
    assert output_refusal(buckets, replacing, replace_spec, replaced) is None  # replace: written again


def test_a_resubmission_skips_only_what_this_owners_own_report_says_was_converted() -> None:
    uow, buckets, bus = FakeUnitOfWork(), MemoryBuckets(), FakeBus()
    for key in ("docs/a.pdf", "docs/b.pdf", "docs/c.pdf"):
        buckets.put("in", key)
    job, _ = _submit(uow, MIRROR)
    report = layout.report_key("md/", job.id)
    buckets.put("out", report, b'{"key": "docs/a.pdf", "status": "completed"}\n{"key": "docs/b.pdf", "status": "failed"}\n', owner=ALICE)
    buckets.put("out", layout.record_prefix("md/", job.id) + "report/part-1.jsonl", b'{"key": "docs/c.pdf", "status": "completed"}\n', owner=BOB)
    _list_all(uow, buckets, bus, job.id)
    by_key = {f.source_key: (f.status, f.error_id) for f in uow.folder_jobs.list_files(job.id)}
    assert by_key == {"docs/a.pdf": ("skipped", "ALREADY_CONVERTED"), "docs/b.pdf": ("queued", None), "docs/c.pdf": ("queued", None)}


# -- listing ----------------------------------------------------------------------------------------------------------
def test_a_folder_is_listed_page_by_page_from_its_checkpoint_and_the_job_then_converts() -> None:
    uow, buckets, bus = FakeUnitOfWork(), MemoryBuckets(), FakeBus()
    for key in ("docs/a.pdf", "docs/b.pdf", "docs/notes.txt", "docs/sub/c.pdf", "docs/d.PDF"):
        buckets.put("in", key)
    job, _ = _submit(uow, MIRROR)
    first = enumerate_step(uow, lambda owner: buckets, bus, SETTINGS, job.id)
    assert first == {"enumerationDone": False}
    listed = uow.folder_jobs.get(job.id)
    assert (listed.objects_listed, listed.continuation_token, listed.status) == (2, "docs/b.pdf", "enumerating")
    assert _list_all(uow, buckets, bus, job.id) == 2  # two more pages of two and one
    files = {f.source_key: (f.status, f.output_key, f.error_id) for f in uow.folder_jobs.list_files(job.id)}
    assert files == {
        "docs/a.pdf": ("queued", "md/a.md", None), "docs/b.pdf": ("queued", "md/b.md", None), "docs/d.PDF": ("queued", "md/d.md", None),
        "docs/sub/c.pdf": ("queued", "md/sub/c.md", None),
    }  # fmt: skip
    ended = uow.folder_jobs.get(job.id)
    assert (ended.status, ended.enumeration_done, ended.objects_listed, ended.excluded_count) == ("processing", True, 5, 1)  # notes.txt: not matched
    assert [(t, d["status"], d["files"]["discovered"]) for t, d in bus.events] == [(FOLDER_JOB_STATE_CHANGE_DETAIL_TYPE, "processing", 4)]
    assert enumerate_step(uow, lambda owner: buckets, bus, SETTINGS, job.id) == {"enumerationDone": True}  # listing over: nothing more


def test_two_sources_with_one_flat_output_collide_and_only_the_first_keeps_it() -> None:
    uow, buckets, bus = FakeUnitOfWork(), MemoryBuckets(), FakeBus()
    for key in ("docs/x/report.pdf", "docs/y/report.pdf"):
        buckets.put("in", key)
    job, _ = _submit(uow, {**MIRROR, "output": {"folder": "s3://out/md/", "layout": "flat"}})
    _list_all(uow, buckets, bus, job.id)
    (first, second) = uow.folder_jobs.list_files(job.id)
    assert (first.source_key, first.status, first.output_key) == ("docs/x/report.pdf", "queued", "md/report/report.md")
    assert (second.status, second.error_id) == ("failed", "OUTPUT_COLLISION")


@pytest.mark.parametrize(
    ("objects", "error_id", "message"),
    [
        ((), "FOLDER_EMPTY", "The folder holds no objects."),
        (("docs/readme.txt", "docs/x.docx"), "FOLDER_NO_PDF", "None of the folder's 2 objects is a file the include/exclude globs select."),
    ],
)
def test_a_folder_with_nothing_to_convert_is_the_jobs_own_error(objects: tuple[str, ...], error_id: str, message: str) -> None:
    uow, buckets, bus = FakeUnitOfWork(), MemoryBuckets(), FakeBus()
    for key in objects:
        buckets.put("in", key)
    job, _ = _submit(uow, {**MIRROR, "input": {"folder": "s3://in/docs/", "include": ["*.pdf"]}})
    _list_all(uow, buckets, bus, job.id)
    ended = uow.folder_jobs.get(job.id)
    assert (ended.status, ended.error_id, ended.error_message, ended.finished_at is not None) == ("error", error_id, message, True)
    assert [d["error"] for _, d in bus.events] == [{"code": error_id, "message": message}]


# -- report and end ---------------------------------------------------------------------------------------------------
def test_report_parts_carry_each_finished_file_once() -> None:
    uow, buckets = FakeUnitOfWork(), MemoryBuckets()
    job, _ = _submit(uow, MIRROR)
    _claimed(uow, job, "docs/a.pdf")
    uow.folder_jobs.finish_file(job.id, "docs/a.pdf", status="completed", pages=3, cost_usd="0.5", lane="on_demand")
    assert write_report_part(uow.folder_jobs, buckets, job) == 1
    assert write_report_part(uow.folder_jobs, buckets, job) == 0  # nothing new: no empty part
    body, owner = buckets.objects[("out", layout.report_part_key("md/", job.id, 1))]
    line = json.loads(body)
    assert (owner, line["key"], line["status"], line["pages"], line["costUsd"], line["outputUris"]) == (
        ALICE, "docs/a.pdf", "completed", 3, "0.500000", ["s3://out/md/a.md"],
    )  # fmt: skip


def test_finish_writes_the_record_before_ending_the_job_with_failures_and_tells_the_bus() -> None:
    uow, buckets, bus = FakeUnitOfWork(), MemoryBuckets(), FakeBus()
    job, _ = _submit(uow, MIRROR)
    uow.folder_jobs.move(job.id, st.folder_job("enumerated"))
    for key in ("docs/a.pdf", "docs/b.pdf"):
        _claimed(uow, job, key)
    uow.folder_jobs.finish_file(job.id, "docs/a.pdf", status="completed", pages=2)
    uow.folder_jobs.finish_file(job.id, "docs/b.pdf", status="failed", error_id="PDF_ENCRYPTED", error_message="locked")
    assert finish.finish(uow, lambda owner: buckets, bus, job.id) == {"jobId": job.id, "status": "completed_with_failures"}
    ended = uow.folder_jobs.get(job.id)
    assert ended.status == "completed_with_failures" and ended.finished_at is not None
    manifest = json.loads(buckets.objects[("out", layout.manifest_key("md/", job.id))][0])
    assert (manifest["status"], manifest["files"]["completed"], manifest["files"]["failed"]) == ("completed_with_failures", 1, 1)
    report = [json.loads(x) for x in buckets.objects[("out", layout.report_key("md/", job.id))][0].splitlines()]
    assert [(r["key"], r["status"]) for r in report] == [("docs/a.pdf", "completed"), ("docs/b.pdf", "failed")]
    assert [d["status"] for _, d in bus.events] == ["completed_with_failures"]
    assert finish.finish(uow, lambda owner: buckets, bus, job.id)["status"] == "completed_with_failures"  # a retried Finish: same end
    assert len(bus.events) == 1


def test_a_broken_loop_ends_the_job_in_error_and_still_writes_its_record() -> None:
    uow, buckets, bus = FakeUnitOfWork(), MemoryBuckets(), FakeBus()
    job, _ = _submit(uow, MIRROR)
    error_id, message = finish.loop_failure({"Error": "States.Timeout", "Cause": "secret host db.internal"})
    assert finish.fail(uow, lambda owner: buckets, bus, job.id, error_id=error_id, message=message) == {"jobId": job.id, "status": "error"}
    manifest = json.loads(buckets.objects[("out", layout.manifest_key("md/", job.id))][0])
    assert manifest["status"] == "error" and "db.internal" not in json.dumps(manifest)
    assert [d["error"]["code"] for _, d in bus.events] == ["FOLDER_JOB_TIMED_OUT"]


def test_a_folder_not_listed_recursively_takes_only_its_own_files() -> None:
    uow, buckets, bus = FakeUnitOfWork(), MemoryBuckets(), FakeBus()
    for key in ("docs/a.pdf", "docs/sub/b.pdf"):
        buckets.put("in", key)
    job, _ = _submit(uow, {**MIRROR, "input": {"folder": "s3://in/docs/", "recursive": False}})
    _list_all(uow, buckets, bus, job.id)
    assert [f.source_key for f in uow.folder_jobs.list_files(job.id)] == ["docs/a.pdf"]


def test_a_step_lists_as_many_pages_as_it_is_asked_for() -> None:
    uow, buckets, bus = FakeUnitOfWork(), MemoryBuckets(), FakeBus()
    for i in range(5):
        buckets.put("in", f"docs/{i}.pdf")
    job, _ = _submit(uow, MIRROR)
    assert enumerate_step(uow, lambda owner: buckets, bus, SETTINGS, job.id, pages=2) == {"enumerationDone": False}  # 2 pages of 2
    assert uow.folder_jobs.get(job.id).objects_listed == 4  # type: ignore[union-attr]
    assert enumerate_step(uow, lambda owner: buckets, bus, SETTINGS, job.id, pages=2) == {"enumerationDone": True}


def test_an_earlier_report_that_cannot_be_read_or_is_gone_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    """A resubmission reads this owner's earlier report and its parts; one it may not read (KMS) or that vanished
    between the listing and the read is skipped, the others still count."""
    buckets = MemoryBuckets()
    prefix = layout.record_prefix("md/", "fj-1")
    buckets.put("out", layout.report_key("md/", "fj-1"), b'{"key": "docs/a.pdf", "status": "completed"}\n', owner=ALICE)
    buckets.put("out", prefix + "report/part-000001.jsonl", b'{"key": "docs/b.pdf", "status": "completed"}\n', owner=ALICE)
    buckets.put("out", prefix + "report/part-000002.jsonl", b'{"key": "docs/c.pdf", "status": "completed"}\n', owner=ALICE)
    buckets.put("out", prefix + "report/part-000003.jsonl", b'{"key": "docs/e.pdf", "status": "completed"}\n', owner=BOB)  # forged
    buckets.put("out", prefix + "report/part-000004.jsonl", b'{"key": "docs/d.pdf", "status": "completed"}\n', owner=ALICE)
    real_head, real_lines = buckets.head, buckets.iter_lines

    def head(bucket: str, key: str) -> ObjectHead | None:
        if key.endswith("part-000001.jsonl"):
            raise ObjectUnreadable("AccessDenied", error_id="OBJECT_UNREADABLE")
        return real_head(bucket, key)

    def iter_lines(bucket: str, key: str) -> Iterator[bytes]:
        if key.endswith("part-000002.jsonl"):
            raise NotFound(key)
        return real_lines(bucket, key)

    monkeypatch.setattr(buckets, "head", head)
    monkeypatch.setattr(buckets, "iter_lines", iter_lines)
    assert earlier_report_sources(buckets, "out", "md/", "fj-1", owner_id=ALICE) == {"docs/a.pdf", "docs/d.pdf"}  # each skipped alone
