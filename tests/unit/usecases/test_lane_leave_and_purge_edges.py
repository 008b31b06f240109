"""Leaving the batch lane early (process now) and removing a deleted member's files from its lane, at their edges
(no server): what the user is told, what the lane and the job keep, and that no other member is touched."""

from __future__ import annotations

import json
from typing import Any

import pytest
from usecase_fakes import MODEL, all_chunks, batch_jobs_of, lane_row, new_job, parked_job, prepared_lane

from batchlane import keys
from batchlane.batch.collect import collect
from batchlane.batch.process_now import ProcessNowOutcome, process_now
from batchlane.batch.purge import member_keys, purge_deleted_members, purge_members
from batchlane.batch.resume import resume_job
from batchlane.batch.submit import submit_batch_job
from batchlane.domain.errors import Conflict, NotFound
from batchlane.pdf import plan_chunks
from batchlane.ports import Services


def _submitted(svc: Services, lane_id: str) -> str:
    return str(submit_batch_job(svc, lane_id)["jobArn"])


def _answered(svc: Services, lane_id: str, arn: str, record_ids: list[str]) -> None:
    row = lane_row(svc, lane_id)
    assert row.output_uri is not None
    prefix = row.output_uri.removeprefix(f"s3://{svc.store.bucket}/").rstrip("/") + "/" + arn.rsplit("/", 1)[-1] + "/"
    answer: dict[str, Any] = {"content": [{"type": "text", "text": "# page"}], "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}
    svc.store.put_bytes(prefix + "input-0.jsonl.out", "\n".join(json.dumps({"recordId": r, "modelOutput": answer}) for r in record_ids).encode())
    batch_jobs_of(svc).jobs[arn].status = "Completed"


# -- process now ---------------------------------------------------------------------------------
def test_process_now_answers_as_the_api_shows_it() -> None:
    resumed = ProcessNowOutcome("job-1", "file-1", "submitted", "left_batch_lane", resumed=True, batch_stop_requested=True)
    assert resumed.to_json() == {
        "jobId": "job-1",
        "fileId": "file-1",
        "laneState": "submitted",
        "action": "left_batch_lane",
        "resumed": True,
        "status": "pending",
        "batchStopRequested": True,
    }
    assert ProcessNowOutcome("job-1", "file-1", "closed", "left_to_recovery", resumed=False).to_json()["status"] == "waiting_batch"
    assert ProcessNowOutcome("job-1", "file-1", None, "flagged_while_splitting", resumed=False, status="splitting").to_json()["status"] == "splitting"


def test_process_now_of_a_job_still_splitting_flags_it_for_when_the_split_ends(svc: Services) -> None:
    with svc.uow() as uow:
        file_id = uow.jobs.insert_file(owner_id="owner-1", name="a.pdf", s3_key="uploads/owner-1/a.pdf", size_bytes=10).id
        job = uow.jobs.insert_job(
            file_id=file_id, owner_id="owner-1", status="splitting", options={}, model_id=MODEL, total_pages=10, pages_per_chunk=50,
            chunks=plan_chunks(10, 50),
        )  # fmt: skip

    outcome = process_now(svc, job.id)

    assert outcome.to_json() == {
        "jobId": job.id,
        "fileId": file_id,
        "laneState": None,
        "action": "flagged_while_splitting",
        "resumed": False,
        "status": "splitting",
        "batchStopRequested": False,
    }
    flagged = svc.uow().jobs.get_job(job.id)
    assert flagged is not None and (flagged.process_now, flagged.status) == (True, "splitting")
    assert svc.workflows.started == []  # type: ignore[attr-defined]


def test_process_now_of_an_unknown_job_or_one_not_waiting_is_refused(svc: Services) -> None:
    with pytest.raises(NotFound) as missing:
        process_now(svc, "00000000-0000-0000-0000-000000000000")
    assert missing.value.error_id == "JOB_NOT_FOUND"
    parked = parked_job(svc)
    process_now(svc, parked.job_id)
    with pytest.raises(Conflict) as refused:
        process_now(svc, parked.job_id)
    assert refused.value.error_id == "NOT_BATCH_WAITING"


def test_process_now_between_the_last_lanes_close_and_the_resume_leaves_the_job_to_that_resume(svc: Services) -> None:
    parked = parked_job(svc)
    arn = _submitted(svc, parked.lane_id)
    _answered(svc, parked.lane_id, arn, ["m0c0p1"])
    collect(svc, parked.lane_id)
    job = svc.uow().jobs.get_job(parked.job_id)
    assert job is not None

    outcome = process_now(svc, parked.job_id)

    assert outcome == ProcessNowOutcome(parked.job_id, job.file_id, "closed", "left_to_recovery", resumed=False)
    assert svc.workflows.started == []  # type: ignore[attr-defined]


def test_process_now_of_one_member_leaves_a_shared_lane_running_without_a_reason(svc: Services) -> None:
    a, b = new_job(svc), new_job(svc, pages=40, owner="owner-2")
    lane_id = prepared_lane(svc, [*all_chunks(svc, a), *all_chunks(svc, b)])
    arn = _submitted(svc, lane_id)
    batch_jobs_of(svc).jobs[arn].status = "InProgress"
    job = svc.uow().jobs.get_job(a)
    assert job is not None

    outcome = process_now(svc, a)

    assert outcome == ProcessNowOutcome(a, job.file_id, "submitted", "left_batch_lane", resumed=True, batch_stop_requested=False)
    assert (lane_row(svc, lane_id).reason, batch_jobs_of(svc).stops) == (None, [])


def test_a_job_whose_earlier_lane_brought_answers_leaves_primed_and_the_stopped_lane_says_why(svc: Services) -> None:
    job_id = new_job(svc)  # chunks 0, 1, 2
    first = prepared_lane(svc, [(job_id, 0)])
    first_arn = _submitted(svc, first)
    _answered(svc, first, first_arn, ["m0c0p1"])
    collect(svc, first)
    second = prepared_lane(svc, [(job_id, 1), (job_id, 2)])
    second_arn = _submitted(svc, second)
    batch_jobs_of(svc).jobs[second_arn].status = "InProgress"

    outcome = process_now(svc, job_id, reason="deadline")

    # the running lane carries this job alone: stopped, and the job waits for what it processed (issue 38.2)
    assert (outcome.action, outcome.resumed, outcome.batch_stop_requested) == ("stopping_batch_job", False, True)
    assert lane_row(svc, second).reason == "deadline" and batch_jobs_of(svc).stops == [second_arn]
    assert svc.uow().jobs.get_job(job_id).status == "waiting_batch"
    _answered(svc, second, second_arn, ["m0c1p51"])  # Bedrock stopped after one record
    batch_jobs_of(svc).jobs[second_arn].status = "Stopped"
    collect(svc, second)
    assert resume_job(svc, job_id)["resumed"] is True
    job = svc.uow().jobs.get_job(job_id)
    assert job is not None and (job.status, job.batch_primed) == ("pending", True), "both lanes' answers are used"
    assert svc.store.get_json(f"batch/{job_id}/results/chunk-1.json")["results"][0]["recordId"] == "c1-p51"


# -- purging a deleted member's files ---------------------------------------------------------------------
def _lane_files(svc: Services, lane_id: str) -> list[str]:
    base = f"{keys.BATCH_PREFIX}{lane_id}/"
    names = [
        "input/m0-chunk-00000.jsonl",
        "input/m1-chunk-00000.jsonl",
        "prepare/m0-pages.json",
        "prepare/m1-pages.json",
        "output/job123/m0-chunk-00000.jsonl.out",
        "output/job123/m1-chunk-00000.jsonl.out",
        "output/job123/manifest.json.out",
        "manifest.json.extra",
    ]
    for name in names:
        svc.store.put_bytes(base + name, b"x")
    return [base + n for n in names]


def test_a_members_files_are_its_inputs_prepared_pages_and_answers_and_nothing_of_another(svc: Services) -> None:
    lane_id = "lane-1"
    files = _lane_files(svc, lane_id)
    svc.store.put_bytes(f"{keys.BATCH_PREFIX}lane-2/input/m0-chunk-00000.jsonl", b"x")

    assert sorted(member_keys(svc.store, lane_id, "m0")) == sorted([files[0], files[2], files[4]])


def test_the_files_of_deleted_members_leave_a_closed_lane_once_and_the_others_stay(svc: Services) -> None:
    a, b, c = new_job(svc, pages=40), new_job(svc, pages=40, owner="owner-2"), new_job(svc, pages=40, owner="owner-3")
    lane_id = prepared_lane(svc, [(a, 0), (b, 0), (c, 0)])  # tags m0, m1, m2
    arn = _submitted(svc, lane_id)
    _answered(svc, lane_id, arn, ["m0c0p1", "m1c0p1", "m2c0p1"])
    collect(svc, lane_id)
    files = _lane_files(svc, lane_id)
    base = f"{keys.BATCH_PREFIX}{lane_id}/"
    svc.store.put_bytes(base + "input/m2-chunk-00000.jsonl", b"x")
    for job_id in (a, b):
        job = svc.uow().jobs.get_job(job_id)
        assert job is not None
        svc.uow().jobs.mark_file_deleted(job.file_id)

    assert purge_deleted_members(svc) == 2

    left = set(svc.store.list_keys(base))
    assert left.isdisjoint(files[:6]), "both deleted members' pages and answers are gone"
    assert {files[6], files[7], base + "input/m2-chunk-00000.jsonl"} <= left
    assert purge_deleted_members(svc) == 0, "a member is purged once"


def test_purging_members_counts_every_object_deleted(svc: Services) -> None:
    a, b = new_job(svc, pages=40), new_job(svc, pages=40, owner="owner-2")
    lane_id = prepared_lane(svc, [(a, 0), (b, 0)])
    arn = _submitted(svc, lane_id)
    _answered(svc, lane_id, arn, ["m0c0p1", "m1c0p1"])
    collect(svc, lane_id)
    _lane_files(svc, lane_id)
    targets = svc.uow().lanes.members_to_purge(job_ids=[a, b])
    assert [t.member_tag for t in targets] == ["m0", "m1"]

    assert purge_members(svc, targets) == 6
    assert svc.uow().lanes.members_to_purge(job_ids=[a, b]) == []
