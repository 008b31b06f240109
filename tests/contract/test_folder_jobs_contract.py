"""FolderJobRepository's contract, on the fake and on PostgreSQL: a job is added once, every status move of a job and
its files is one of the table's moves guarded on the current status, files are found, claimed, finished, reported,
requeued and counted as the folder loop relies on."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest

from batchlane.domain import status as st
from batchlane.rows import NewFolderFile


def _job(uow: Any, owner: str | None = None) -> str:
    job_id = "fj-" + uuid.uuid4().hex[:24]
    added = uow.folder_jobs.add(
        job_id=job_id, owner_id=owner or f"u-{uuid.uuid4().hex[:8]}", name="reports", spec={"input": {"folder": "s3://in/a/"}},
        source=("in", "a/"), target=("out", "md/"),
    )  # fmt: skip
    assert added is not None
    return job_id


def _files(uow: Any, job_id: str, *keys: str) -> None:
    uow.folder_jobs.add_files(job_id, [NewFolderFile(k, 10, f"md/{k}.md") for k in keys])


def test_a_job_is_added_once_enumerating_and_read_back(uow: Any) -> None:
    job_id = _job(uow, "u-owner")
    again = uow.folder_jobs.add(job_id=job_id, owner_id="u-owner", name=None, spec={}, source=("x", ""), target=("y", ""))
    job = uow.folder_jobs.get(job_id)
    assert again is None
    assert (job.status, job.owner_id, job.name, job.spec, job.run, job.turns, job.enumeration_done) == (
        "enumerating", "u-owner", "reports", {"input": {"folder": "s3://in/a/"}}, 1, 0, False,
    )  # fmt: skip
    assert (job.input_bucket, job.input_prefix, job.output_bucket, job.output_prefix, job.finished_at) == ("in", "a/", "out", "md/", None)
    assert uow.folder_jobs.get("fj-" + "0" * 24) is None


def test_job_moves_follow_the_table_and_set_finished_at_for_an_end(uow: Any) -> None:
    job_id = _job(uow)
    assert uow.folder_jobs.move(job_id, st.folder_job("reopen")) is None  # not ended: no reopen
    listed = uow.folder_jobs.move(job_id, st.folder_job("enumerated"))
    assert (listed.status, listed.finished_at) == ("processing", None)
    cancelled = uow.folder_jobs.move(job_id, st.folder_job("cancel"), ended=False)
    assert (cancelled.status, cancelled.finished_at) == ("cancelled", None)  # its files in flight still finish
    ended = uow.folder_jobs.move(job_id, st.folder_job("end_cancelled"))
    assert ended.finished_at is not None
    assert uow.folder_jobs.move(job_id, st.folder_job("complete")) is None  # an ended job does not complete
    failed_id = _job(uow)
    failed = uow.folder_jobs.move(failed_id, st.folder_job("fail"), error_id="FOLDER_EMPTY", error_message="The folder holds no objects.")
    assert (failed.status, failed.error_id, failed.error_message) == ("error", "FOLDER_EMPTY", "The folder holds no objects.")


def test_reopen_runs_an_ended_job_again_where_its_listing_stood(uow: Any) -> None:
    unlisted, listed = _job(uow), _job(uow)
    uow.folder_jobs.save_checkpoint(listed, token=None, listed=3, excluded=1, done=True)
    uow.folder_jobs.move(unlisted, st.folder_job("cancel"))
    uow.folder_jobs.move(listed, st.folder_job("complete_with_failures"))
    again, resumed = uow.folder_jobs.reopen(unlisted, priority_allowed=False), uow.folder_jobs.reopen(listed, priority_allowed=True)
    assert (again.status, again.run, again.error_id, again.finished_at, again.priority_allowed) == ("enumerating", 2, None, None, False)
    assert (resumed.status, resumed.run, resumed.objects_listed, resumed.excluded_count, resumed.priority_allowed) == ("processing", 2, 3, 1, True)
    assert uow.folder_jobs.reopen(listed, priority_allowed=False) is None  # running again: not ended
    assert uow.folder_jobs.get(listed).priority_allowed is True  # ... and its rights not touched
    broken = _job(uow)
    uow.folder_jobs.move(broken, st.folder_job("fail"), error_id="BOOM", error_message="x")
    assert uow.folder_jobs.reopen(broken, priority_allowed=True) is None  # a job that could not run is not run again


def test_a_jobs_lane_rights_are_what_its_submit_recorded(uow: Any) -> None:
    """Issue 40.3: decided once, at submit, from the owner's groups then; none unless granted."""
    member = uow.folder_jobs.add(
        job_id="fj-" + uuid.uuid4().hex[:24], owner_id="u-rights", name=None, spec={}, source=("in", "a/"), target=("out", "b/"), priority_allowed=True
    )
    plain = uow.folder_jobs.add(job_id="fj-" + uuid.uuid4().hex[:24], owner_id="u-rights", name=None, spec={}, source=("in", "a/"), target=("out", "b/"))
    assert (uow.folder_jobs.get(member.id).priority_allowed, uow.folder_jobs.get(plain.id).priority_allowed) == (True, False)


def test_relist_lists_a_job_that_could_not_run_afresh_and_nothing_else(uow: Any) -> None:
    """Issue 41.5: an empty folder's job runs again once the folder holds files (its listing from the start)."""
    empty = _job(uow)
    uow.folder_jobs.save_checkpoint(empty, token=None, listed=0, excluded=2, done=True)
    uow.folder_jobs.move(empty, st.folder_job("fail"), error_id="FOLDER_NO_PDF", error_message="x")
    again = uow.folder_jobs.relist(empty, priority_allowed=True)  # the lane rights decided again (issue 40.3)
    assert (again.status, again.run, again.error_id, again.finished_at, again.priority_allowed) == ("enumerating", 2, None, None, True)
    assert (again.enumeration_done, again.objects_listed, again.excluded_count, again.continuation_token) == (False, 0, 0, None)
    assert uow.folder_jobs.relist(empty, priority_allowed=False) is None  # listing: not in error
    done = _job(uow)
    uow.folder_jobs.move(done, st.folder_job("complete"))
    assert uow.folder_jobs.relist(done, priority_allowed=False) is None  # an ended job is reopened, not relisted


def test_checkpoints_add_up_and_turns_hand_over_once(uow: Any) -> None:
    job_id = _job(uow)
    uow.folder_jobs.save_checkpoint(job_id, token="t1", listed=1000, excluded=5, done=False)
    uow.folder_jobs.save_checkpoint(job_id, token=None, listed=7, excluded=0, done=True)
    job = uow.folder_jobs.get(job_id)
    assert (job.continuation_token, job.objects_listed, job.excluded_count, job.enumeration_done) == (None, 1007, 5, True)
    assert job.enumerated_at is not None
    assert [uow.folder_jobs.count_turn(job_id) for _ in range(3)] == [1, 2, 3]
    following = uow.folder_jobs.next_run(job_id, run=1)
    assert (following.run, following.turns) == (2, 0)
    assert uow.folder_jobs.next_run(job_id, run=1) is None  # another turn already handed over
    assert [uow.folder_jobs.next_report_part(job_id) for _ in range(2)] == [1, 2]


def test_a_relisted_page_adds_nothing_and_collisions_claim_no_output(uow: Any) -> None:
    job_id = _job(uow)
    page = [
        NewFolderFile("a/x.pdf", 5, "md/x.md"),
        NewFolderFile("a/y.txt", 1, "md/y.md", "failed", "NOT_PDF", "Only PDF files are converted."),
        NewFolderFile("a/z/x.pdf", 5, "md/x.md", "failed", "OUTPUT_COLLISION", "Its output md/x.md is already a/x.pdf's."),
    ]
    assert uow.folder_jobs.add_files(job_id, page) == 3
    assert uow.folder_jobs.add_files(job_id, page) == 0
    assert uow.folder_jobs.taken_outputs(job_id, ["md/x.md", "md/none.md"]) == {"md/x.md": "a/x.pdf"}
    failed = uow.folder_jobs.list_files(job_id, status="failed")
    assert [(f.source_key, f.error_id) for f in failed] == [("a/y.txt", "NOT_PDF"), ("a/z/x.pdf", "OUTPUT_COLLISION")]
    assert all(f.finished_at is not None for f in failed) and uow.folder_jobs.list_files(job_id, status="queued")[0].finished_at is None


def test_claims_go_in_key_order_up_to_the_limit_and_respect_waiting_pages(uow: Any) -> None:
    job_id = _job(uow)
    _files(uow, job_id, "c.pdf", "a.pdf", "b.pdf")
    assert uow.folder_jobs.claim_queued(job_id, 0) == []
    first = uow.folder_jobs.claim_queued(job_id, 2)
    assert [(f.source_key, f.status, f.attempts) for f in first] == [("a.pdf", "processing", 1), ("b.pdf", "processing", 1)]
    assert first[0].started_at is not None
    uow.folder_jobs.retry_conversion("fj-" + "0" * 24, "a.pdf")  # another job: nothing
    waiting = uow.folder_jobs.retry_conversion(job_id, "a.pdf", waits_for_pages=50)
    assert (waiting.status, waiting.waits_for_pages, waiting.conversion_job_id) == ("queued", 50, None)
    assert [f.source_key for f in uow.folder_jobs.claim_queued(job_id, 5, free_pages=10)] == ["c.pdf"]  # a.pdf waits for 50 pages
    assert [(f.source_key, f.attempts) for f in uow.folder_jobs.claim_queued(job_id, 5, free_pages=50)] == [("a.pdf", 2)]


def test_a_release_requeues_only_a_file_whose_conversion_never_opened(uow: Any) -> None:
    job_id = _job(uow)
    _files(uow, job_id, "a.pdf")
    uow.folder_jobs.claim_queued(job_id, 1)
    uow.folder_jobs.release(job_id, "a.pdf")
    assert uow.folder_jobs.list_files(job_id)[0].status == "queued"
    assert uow.folder_jobs.retry_conversion(job_id, "a.pdf") is None  # not processing


def test_finish_files_once_with_their_outcome_and_report_each_once(uow: Any) -> None:
    job_id = _job(uow)
    _files(uow, job_id, "a.pdf", "b.pdf", "c.pdf")
    uow.folder_jobs.claim_queued(job_id, 2)
    done = uow.folder_jobs.finish_file(
        job_id, "a.pdf", status="completed", pages=10, pages_failed=2, cost_usd=Decimal("0.1234567"), lane="batch", lane_reason="bulk_opt_in"
    )
    assert (done.status, done.pages, done.pages_failed, done.cost_usd, done.lane, done.lane_reason) == (
        "completed", 10, 2, Decimal("0.123457"), "batch", "bulk_opt_in",
    )  # fmt: skip
    failed = uow.folder_jobs.finish_file(job_id, "b.pdf", status="failed", error_id="PDF_ENCRYPTED", error_message="locked", pages=4)
    assert (failed.status, failed.error_id, failed.error_message) == ("failed", "PDF_ENCRYPTED", "locked")
    assert uow.folder_jobs.finish_file(job_id, "a.pdf", status="failed", error_id="LATE") is None  # ended once
    assert [f.source_key for f in uow.folder_jobs.unreported(job_id)] == ["a.pdf", "b.pdf"]
    uow.folder_jobs.mark_reported(job_id, ["a.pdf"])
    assert [f.source_key for f in uow.folder_jobs.unreported(job_id)] == ["b.pdf"]
    counts = uow.folder_jobs.counts(job_id)
    assert (counts.discovered, counts.queued, counts.processing, counts.completed, counts.failed, counts.skipped) == (3, 1, 0, 1, 1, 0)
    assert (counts.pages_completed, counts.pages_failed, counts.cost_usd) == (8, 2 + 4, pytest.approx(0.123457))


def test_a_cancel_skips_what_has_not_started_and_a_retry_requeues_by_error(uow: Any) -> None:
    job_id = _job(uow)
    _files(uow, job_id, "a.pdf", "b.pdf", "c.pdf")
    uow.folder_jobs.add_files(job_id, [NewFolderFile("d.txt", 1, "md/d.md", "failed", "NOT_PDF", "not a PDF")])
    uow.folder_jobs.claim_queued(job_id, 1)  # a.pdf in flight
    assert uow.folder_jobs.skip_queued(job_id, error_id="CANCELLED", message="cancelled before it started") == 2
    assert [(f.source_key, f.status) for f in uow.folder_jobs.list_files(job_id)] == [
        ("a.pdf", "processing"), ("b.pdf", "skipped"), ("c.pdf", "skipped"), ("d.txt", "failed"),
    ]  # fmt: skip
    uow.folder_jobs.finish_file(job_id, "a.pdf", status="failed", error_id="THROTTLED")
    assert uow.folder_jobs.requeue(job_id, statuses=["failed"], error_ids=["OTHER"]) == 0
    assert uow.folder_jobs.requeue(job_id, statuses=["failed", "skipped"]) == 3  # never the NOT_PDF one
    queued = uow.folder_jobs.list_files(job_id, status="queued")
    assert [(f.source_key, f.error_id, f.finished_at, f.reported) for f in queued] == [(k, None, None, False) for k in ("a.pdf", "b.pdf", "c.pdf")]
    with pytest.raises(AssertionError):
        uow.folder_jobs.requeue(job_id, statuses=["processing"])  # not a move the table has


def test_files_page_in_key_order_and_jobs_list_by_owner(uow: Any) -> None:
    owner = f"u-{uuid.uuid4().hex[:8]}"
    job_id = _job(uow, owner)
    _files(uow, job_id, *(f"k{i}.pdf" for i in range(5)))
    assert [f.source_key for f in uow.folder_jobs.list_files(job_id, limit=2, after="k1.pdf")] == ["k2.pdf", "k3.pdf"]
    assert uow.folder_jobs.owner_job_ids(owner, limit=10) == [job_id]
    assert uow.folder_jobs.owner_job_ids(f"u-{uuid.uuid4().hex[:8]}", limit=10) == []


def test_a_raising_block_leaves_the_job_and_its_files_as_they_were(uow: Any) -> None:
    job_id = _job(uow)
    _files(uow, job_id, "a.pdf")
    with pytest.raises(RuntimeError), uow:
        uow.folder_jobs.claim_queued(job_id, 1)
        uow.folder_jobs.move(job_id, st.folder_job("fail"), error_id="X", error_message="x")
        raise RuntimeError("the turn died")
    assert (uow.folder_jobs.get(job_id).status, uow.folder_jobs.list_files(job_id)[0].status) == ("enumerating", "queued")


def test_the_ended_files_are_read_in_key_order_page_by_page(uow: Any) -> None:
    job_id = _job(uow)
    _files(uow, job_id, *(f"k{i}.pdf" for i in range(7)))
    for key in ("k0.pdf", "k2.pdf", "k3.pdf", "k5.pdf", "k6.pdf"):
        uow.folder_jobs.finish_file(job_id, key, status="skipped", error_id="ALREADY_CONVERTED")
    assert [f.source_key for f in uow.folder_jobs.iter_ended_files(job_id, page=2)] == ["k0.pdf", "k2.pdf", "k3.pdf", "k5.pdf", "k6.pdf"]
    assert [f.source_key for f in uow.folder_jobs.iter_ended_files(job_id, after="k3.pdf", page=1)] == ["k5.pdf", "k6.pdf"]


def test_a_claim_whose_conversion_never_opened_is_queued_again_only_once_stalled(uow: Any) -> None:
    # (a file whose conversion is attached is never requeued: that needs a conversion job row, the jobs aggregate's)
    job_id = _job(uow)
    _files(uow, job_id, "a.pdf", "b.pdf")
    uow.folder_jobs.claim_queued(job_id, 1)
    assert uow.folder_jobs.requeue_stalled_starts(job_id, older_than_s=3600) == 0  # just claimed: not stalled
    assert uow.folder_jobs.requeue_stalled_starts(job_id, older_than_s=-1) == 1
    assert [(f.source_key, f.status, f.attempts) for f in uow.folder_jobs.list_files(job_id)] == [("a.pdf", "queued", 1), ("b.pdf", "queued", 0)]


def test_a_turns_live_counts_are_the_queued_and_processing_files_each_up_to_the_cap(uow: Any) -> None:
    job_id = _job(uow)
    _files(uow, job_id, *(f"k{i:02d}.pdf" for i in range(7)))
    assert uow.folder_jobs.live_counts(job_id, cap=100) == (7, 0)
    claimed = uow.folder_jobs.claim_queued(job_id, 4)
    uow.folder_jobs.finish_file(job_id, claimed[0].source_key, status="completed")
    assert uow.folder_jobs.live_counts(job_id, cap=100) == (3, 3)
    assert uow.folder_jobs.live_counts(job_id, cap=2) == (2, 2), "counted up to the cap only"
    counts = uow.folder_jobs.counts(job_id)
    assert (counts.queued, counts.processing) == (3, 3), "the status read model keeps the exact numbers"


# -- what joins the conversion jobs (a turn's reads) --------------------------------------------------------------------
def _conversion(uow: Any, owner: str, *, status: str = st.JobStatus.PENDING) -> tuple[str, str]:
    """A conversion job (pending, 4 pages) of a folder file read where it lies: (file id, job id)."""
    from batchlane.pdf.split import plan_chunks

    source = uow.folder_jobs.insert_source_file(owner_id=owner, name="a.pdf", bucket="in", key=f"a/{uuid.uuid4().hex}.pdf", size_bytes=10)
    job = uow.jobs.insert_job(
        file_id=source.id, owner_id=owner, status=status, options={}, model_id="model-a", total_pages=4, pages_per_chunk=2, chunks=plan_chunks(4, 2)
    )
    return source.id, job.id


def _started(uow: Any, job_id: str, key: str, owner: str, *, status: str = st.JobStatus.PENDING, lane_reason: str | None = None) -> str:
    """``key`` claimed and its conversion opened (in ``status``); the conversion job's id."""
    _files(uow, job_id, key)
    assert [f.source_key for f in uow.folder_jobs.claim_queued(job_id, 10)] == [key]
    file_id, conversion = _conversion(uow, owner, status=status)
    uow.folder_jobs.attach_conversion(job_id, key, file_id=file_id, conversion_job_id=conversion, lane_reason=lane_reason)
    return conversion


def test_a_folder_file_is_a_files_row_read_where_it_lies(uow: Any) -> None:
    row = uow.folder_jobs.insert_source_file(owner_id="u-src", name="a.pdf", bucket="their-bucket", key="in/a.pdf", size_bytes=42)
    assert (row.owner_id, row.name, row.s3_key, row.size_bytes, row.source_bucket, row.status, row.deleted_at) == (
        "u-src", "a.pdf", "in/a.pdf", 42, "their-bucket", "uploaded", None,
    )  # fmt: skip
    assert uow.jobs.get_file(row.id) == row


def test_ended_conversions_are_the_processing_files_whose_job_ended_in_key_order(uow: Any) -> None:
    owner = f"u-{uuid.uuid4().hex[:8]}"
    job_id = _job(uow, owner)
    running = _started(uow, job_id, "c.pdf", owner)
    done = _started(uow, job_id, "b.pdf", owner, lane_reason="priority_high")
    failed = _started(uow, job_id, "a.pdf", owner)
    assert uow.jobs.move_job(done, st.start()) is not None
    assert uow.jobs.move_job(done, st.assemble()) is not None
    assert uow.jobs.move_job(done, st.settle(), total_cost_usd=Decimal("0.25"), pages_batch=3, markdown_key="jobs/x/result.md") is not None
    assert uow.jobs.move_job(failed, st.fail(), error_id="PDF_ENCRYPTED", error_message="locked") is not None
    ended = uow.folder_jobs.ended_conversions(job_id)
    assert [(e.source_key, e.conversion_job_id, e.job_status) for e in ended] == [("a.pdf", failed, "failed"), ("b.pdf", done, "completed")]
    a, b = ended
    assert (a.job_error_id, a.job_error_message, a.attempts, a.lane_reason, a.output_key) == ("PDF_ENCRYPTED", "locked", 1, None, "md/a.pdf.md")
    assert (b.total_pages, b.pages_batch, b.total_cost_usd, b.markdown_key, b.lane_reason, b.pool_reason) == (
        4, 3, Decimal("0.25"), "jobs/x/result.md", "priority_high", None,
    )  # fmt: skip
    assert running not in {e.conversion_job_id for e in ended}
    uow.folder_jobs.finish_file(job_id, "a.pdf", status="failed", error_id="PDF_ENCRYPTED")
    assert [e.source_key for e in uow.folder_jobs.ended_conversions(job_id)] == ["b.pdf"]  # a settled file is no longer processing


def test_files_parked_for_the_batch_lane_hold_no_in_flight_place(uow: Any) -> None:
    owner = f"u-{uuid.uuid4().hex[:8]}"
    job_id = _job(uow, owner)
    parked = _started(uow, job_id, "a.pdf", owner, status=st.JobStatus.WAITING_BATCH)
    _started(uow, job_id, "b.pdf", owner)
    _files(uow, job_id, "c.pdf")
    assert [f.source_key for f in uow.folder_jobs.claim_queued(job_id, 10)] == ["c.pdf"]  # claimed, its conversion not opened yet
    _files(uow, job_id, "d.pdf")  # queued: not in flight
    assert uow.folder_jobs.parked_conversions(job_id) == [parked]
    assert uow.folder_jobs.count_processing(job_id) == 2  # b.pdf converting, c.pdf starting; a.pdf waits in the pool
    assert uow.folder_jobs.live_counts(job_id, cap=100) == (1, 3)  # the job's own status still counts a.pdf as processing
    assert uow.folder_jobs.parked_conversions(_job(uow, owner)) == []


def test_live_folder_jobs_unchanged_for_long_are_swept_and_ended_ones_never(uow: Any) -> None:
    live, ended = _job(uow), _job(uow)
    uow.folder_jobs.move(ended, st.folder_job("fail"), error_id="FOLDER_EMPTY", error_message="empty")
    swept = {j.id for j in uow.folder_jobs.live_unchanged(unchanged_for_s=0, limit=100_000)}
    assert live in swept and ended not in swept
    assert live not in {j.id for j in uow.folder_jobs.live_unchanged(unchanged_for_s=3600, limit=100_000)}
    assert len(uow.folder_jobs.live_unchanged(unchanged_for_s=0, limit=1)) == 1
