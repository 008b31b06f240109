"""Prepare on fakes (no server): one record per non-blank page, exactly the on-demand request; too few records skip the lane."""

from __future__ import annotations

import dataclasses
import json

from usecase_fakes import all_chunks, lane_row, new_job, packed_lane

from batchlane import keys
from batchlane.batch.abandon import abandon
from batchlane.batch.prepare import finish_prepare, plan_prepare, prepare_group
from batchlane.batch.resume import resume_members
from batchlane.claude import ConverterConfig, build_page_request
from batchlane.filejob.source import store_chunk_sources
from batchlane.operations.cancel import cancel_job
from batchlane.pdf import open_chunk, open_pdf, plan_chunks
from batchlane.ports import Services
from batchlane_dev.local.pdfgen import make_pdf

PAGES, PER_CHUNK, BLANK_EVERY = 12, 5, 4  # pages 4, 8 and 12 are blank


def _parked_with_sources(svc: Services, *, owner: str = "owner-1") -> str:
    """A job parked in the pool whose chunk sources are in the store (as create_job leaves them)."""
    job_id = new_job(svc, pages=PAGES, pages_per_chunk=PER_CHUNK, owner=owner)
    store_chunk_sources(svc.store, job_id, open_pdf(make_pdf(PAGES, blank_every=BLANK_EVERY), max_pages=100), plan_chunks(PAGES, PER_CHUNK))
    return job_id


def _prepare(svc: Services, lane_id: str) -> dict:
    """The lane's prepare as the state machine runs it: plan, one child per group of member chunks, finish."""
    plan = plan_prepare(svc, lane_id)
    assert plan["proceed"] is True
    for group in plan["chunks"]:
        prepare_group(svc, lane_id, group)
    return finish_prepare(svc, lane_id)


def _min_records(svc: Services, n: int) -> Services:
    return dataclasses.replace(svc, settings=svc.settings.model_copy(update={"batch_conversion_min_records": n}))


def test_prepare_writes_one_record_per_non_blank_page_exactly_as_on_demand_would_send_it(svc: Services) -> None:
    svc = _min_records(svc, 1)
    job_id = _parked_with_sources(svc)
    lane_id = packed_lane(svc, all_chunks(svc, job_id))
    assert plan_prepare(svc, lane_id)["chunks"] == [0, 1, 2]  # one child per member chunk

    assert _prepare(svc, lane_id) == {"action": "submit", "reason": None, "records": 9}

    manifest = svc.store.get_json(keys.batch_manifest_key(lane_id))
    non_blank = [n for n in range(1, PAGES + 1) if n % BLANK_EVERY]
    own_ids = {f"c{(n - 1) // PER_CHUNK}-p{n}" for n in non_blank}
    expected_ids = {f"m0{i.replace('-', '')}" for i in own_ids}  # what Bedrock sees: the job's ids under its tag, alphanumeric
    assert manifest["members"] == {"m0": job_id} and manifest["laneId"] == lane_id
    assert set(manifest["promptHashes"]) == expected_ids and manifest["recordCount"] == 9
    assert {i for ids in manifest["chunks"]["m0"].values() for i in ids} == own_ids
    records = [json.loads(line) for shard in manifest["shards"] for line in svc.store.get_bytes(shard["key"]).splitlines()]
    assert {r["recordId"] for r in records} == expected_ids
    assert all(shard["key"].startswith(f"batch/{lane_id}/input/m0-chunk-") for shard in manifest["shards"])
    # the record for page 5 is the request the chunk processor would send for it, byte for byte:
    # the chunk processor cuts its pages from the stored chunk PDF (filejob.source.chunk_pages)
    page_5 = next(r for r in records if r["recordId"] == "m0c0p5")
    chunk_0 = plan_chunks(PAGES, PER_CHUNK)[0]
    pdf_5 = next(p for p in open_chunk(svc.store.get_bytes(keys.chunk_source_key(job_id, 0)), chunk_0).pages(chunk_0) if p.number == 5)
    request = build_page_request(chunk_index=0, page_number=5, pdf_bytes=pdf_5.pdf_bytes, config=ConverterConfig.from_settings(svc.settings, {}))
    assert page_5["modelInput"] == request.model_input()
    assert manifest["promptHashes"]["m0c0p5"] == request.prompt_hash
    row = lane_row(svc, lane_id)
    assert (row.state, row.record_count) == ("preparing", 9)
    assert [(m.chunk_index, m.records) for m in svc.uow().lanes.members(row.id)] == [(0, 4), (1, 4), (2, 1)]


def test_two_jobs_in_one_lane_keep_their_records_apart_by_tag(svc: Services) -> None:
    svc = _min_records(svc, 1)
    a, b = _parked_with_sources(svc), _parked_with_sources(svc, owner="owner-2")
    lane_id = packed_lane(svc, [(a, 0), (b, 0), (b, 1)])

    assert _prepare(svc, lane_id) == {"action": "submit", "reason": None, "records": 4 + 4 + 4}

    manifest = svc.store.get_json(keys.batch_manifest_key(lane_id))
    assert manifest["members"] == {"m0": a, "m1": b}
    assert set(manifest["chunks"]["m0"]) == {"0"} and set(manifest["chunks"]["m1"]) == {"0", "1"}
    assert {i.split("c", 1)[0] for i in manifest["promptHashes"]} == {"m0", "m1"}
    assert manifest["promptHashes"]["m0c0p1"] == manifest["promptHashes"]["m1c0p1"], "same page, same request: only the tag tells them apart"


def test_a_member_that_left_during_prepare_is_dropped_and_its_records_deleted(svc: Services) -> None:
    svc = _min_records(svc, 1)
    a, b = _parked_with_sources(svc), _parked_with_sources(svc, owner="owner-2")
    lane_id = packed_lane(svc, [*all_chunks(svc, a), *all_chunks(svc, b)])
    plan = plan_prepare(svc, lane_id)
    for group in plan["chunks"]:
        prepare_group(svc, lane_id, group)
    left_shards = svc.store.list_keys(f"batch/{lane_id}/input/m0-")
    assert left_shards
    svc.uow().lanes.leave_lanes(a)  # a is cancelled while its records were being written

    assert finish_prepare(svc, lane_id) == {"action": "submit", "reason": None, "records": 9}

    manifest = svc.store.get_json(keys.batch_manifest_key(lane_id))
    assert manifest["members"] == {"m1": b} and all(i.startswith("m1c") for i in manifest["promptHashes"])
    assert svc.store.list_keys(f"batch/{lane_id}/input/m0-") == [], "Bedrock never runs (or bills) the pages of a member that left"
    assert {m.job_id: m.records for m in svc.uow().lanes.members(lane_row(svc, lane_id).id) if m.chunk_index == 0} == {a: 0, b: 4}


def test_too_few_records_skip_the_lane_with_the_reason_on_the_row(svc: Services) -> None:
    job_id = _parked_with_sources(svc)  # 9 records, under the default minimum of 100
    lane_id = packed_lane(svc, all_chunks(svc, job_id))
    decision = _prepare(svc, lane_id)
    assert decision == {"action": "skip", "reason": "too_few_records", "records": 9}
    assert abandon(svc, lane_id, reason=decision["reason"]) == {"closed": True, "endState": "skipped"}
    row = lane_row(svc, lane_id)
    assert (row.state, row.end_state, row.reason) == ("closed", "skipped", "too_few_records")
    assert resume_members(svc, lane_id) == {"resumed": 1, "members": 1}, "its job goes on-demand"


def test_a_lane_whose_only_member_was_cancelled_before_prepare_closes_and_prepares_nothing(svc: Services) -> None:
    job_id = _parked_with_sources(svc)
    lane_id = packed_lane(svc, all_chunks(svc, job_id))
    cancel_job(svc, job_id)
    assert plan_prepare(svc, lane_id) == {"proceed": False, "chunks": [], "why": "members_left"}
    row = lane_row(svc, lane_id)
    assert (row.state, row.end_state, row.reason) == ("closed", "skipped", "cancelled")
    assert svc.store.list_keys(f"batch/{lane_id}/") == []
