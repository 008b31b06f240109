"""Prepare's steps at their edges (no server): what each step answers the state machine, how the member chunks are split
into children, when a lane is skipped (at each limit, exactly), a retry lane passed through, and how shards are cut."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest
from usecase_fakes import MODEL, TypedStore, all_chunks, lane_row, new_job, packed_lane

from batchlane import keys
from batchlane.batch import prepare as prepare_module
from batchlane.batch.prepare import ShardWriter, finish_prepare, plan_prepare, prepare_chunk, prepare_group
from batchlane.filejob.source import store_chunk_sources
from batchlane.pdf import open_pdf, plan_chunks
from batchlane.ports import Services
from batchlane_dev.local.pdfgen import make_pdf

OTHER_MODEL = "us.anthropic.claude-haiku-4-5-20251001-v1:0"


def _tuned(svc: Services, **update: object) -> Services:
    return dataclasses.replace(svc, settings=svc.settings.model_copy(update=update))


def _summaries(svc: Services, lane_id: str, *, records: int, shard_bytes: int, model: str = MODEL) -> None:
    """What prepare_chunk leaves for every member chunk of the lane: ``records`` records in one shard of ``shard_bytes``."""
    row = lane_row(svc, lane_id)
    for m in svc.uow().lanes.members(row.id):
        ids = [f"c{m.chunk_index}-p{n}" for n in range(1, records + 1)]
        shard = {"key": f"{keys.batch_input_prefix(lane_id)}{m.member_tag}-chunk-{m.chunk_index:05d}-0.jsonl", "records": records, "bytes": shard_bytes}
        summary = {"modelId": model, "records": [{"recordId": i, "promptHash": f"h-{i}"} for i in ids], "shards": [shard]}
        svc.store.put_json(f"{keys.BATCH_PREFIX}{lane_id}/prepare/{m.member_tag}-chunk-{m.chunk_index}.json", summary)


# -- planning -----------------------------------------------------------------------------------------
def test_a_lane_that_is_not_there_or_not_preparing_is_neither_planned_nor_finished(svc: Services) -> None:
    job_id = new_job(svc)
    lane_id = packed_lane(svc, all_chunks(svc, job_id))
    _summaries(svc, lane_id, records=1, shard_bytes=10)
    svc.uow().lanes.record_prepared(lane_id, record_count=3, input_bytes=30, manifest_key=keys.batch_manifest_key(lane_id))
    svc.uow().lanes.mark_submitted(lane_id, arn="arn:1", name="n", output_uri="s3://b/o/", deadline_hours=26)

    for lane in (str(uuid.uuid4()), lane_id):
        assert plan_prepare(svc, lane) == {"proceed": False, "chunks": [], "why": "not_preparing"}
        assert finish_prepare(svc, lane) == {"action": "skip", "reason": "not_preparing", "records": 0}


def test_a_lane_every_member_left_unannounced_closes_as_members_left(svc: Services) -> None:
    job_id = new_job(svc)
    lane_id = packed_lane(svc, all_chunks(svc, job_id))
    svc.uow().lanes.leave_lanes(job_id)

    assert finish_prepare(svc, lane_id) == {"action": "skip", "reason": "members_left", "records": 0}
    assert plan_prepare(svc, lane_id) == {"proceed": False, "chunks": [], "why": "members_left"}

    row = lane_row(svc, lane_id)
    assert (row.state, row.end_state, row.reason) == ("closed", "skipped", "members_left")


def test_member_chunks_are_split_into_at_most_the_most_children_a_lane_may_have(svc: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prepare_module, "MAX_PREPARE_GROUPS", 2)
    a, b = new_job(svc, pages=150), new_job(svc, pages=100, owner="owner-2")  # 3 + 2 member chunks
    lane_id = packed_lane(svc, [*all_chunks(svc, a), *all_chunks(svc, b)])
    prepared: list[tuple[str, int, str]] = []

    def fake_chunk(svc: Services, lane_id: str, job_id: str, chunk_index: int, tag: str) -> dict[str, Any]:
        prepared.append((job_id, chunk_index, tag))
        return {"chunkIndex": chunk_index, "records": 10 + chunk_index, "shards": 1}

    monkeypatch.setattr(prepare_module, "prepare_chunk", fake_chunk)

    plan = plan_prepare(svc, lane_id)

    assert plan == {"proceed": True, "chunks": [0, 1], "modelId": MODEL, "members": 2}, "5 member chunks, 3 per child"
    assert prepare_group(svc, lane_id, 0) == {"group": 0, "records": 10 + 11 + 12}
    assert prepare_group(svc, lane_id, 1) == {"group": 1, "records": 10 + 11}
    assert prepared == [(a, 0, "m0"), (a, 1, "m0"), (a, 2, "m0"), (b, 0, "m1"), (b, 1, "m1")], "each member chunk once"


def test_a_retry_lane_is_prepared_already_and_goes_to_submit_as_it_is(svc: Services) -> None:
    job_id = new_job(svc)
    first = packed_lane(svc, [(job_id, 0)])
    svc.uow().lanes.leave_lanes(job_id)
    retry_id = str(uuid.uuid4())
    svc.uow().lanes.insert_retry_lane(
        lane_id=retry_id, retry_of=lane_row(svc, first).id, model_id=MODEL, deadline_hours=26, manifest_key="k", input_bytes=5,
        members=[(job_id, 1, "m0", 3), (job_id, 2, "m0", 4)],
    )  # fmt: skip

    assert plan_prepare(svc, retry_id) == {"proceed": True, "chunks": [0], "modelId": MODEL, "members": 1}
    assert prepare_group(svc, retry_id, 0) == {"group": 0, "records": 0}
    assert finish_prepare(svc, retry_id) == {"action": "submit", "reason": None, "records": 7}
    assert svc.store.list_keys(f"{keys.BATCH_PREFIX}{retry_id}/") == []


# -- finishing --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("records", "shard_bytes", "decision"),
    [
        (3, 100, ("submit", None)),  # 6 records: exactly the minimum, exactly the maximum
        (2, 100, ("skip", "too_few_records")),
        (4, 100, ("skip", "too_many_records")),
        (3, 500_000, ("submit", None)),  # exactly one MB (10**6 bytes, as AWS counts), the largest Bedrock job here
        (3, 500_000 + 1, ("skip", "job_too_large")),
    ],
)
def test_a_lane_is_skipped_only_past_its_limits(svc: Services, records: int, shard_bytes: int, decision: tuple[str, str | None]) -> None:
    svc = _tuned(svc, batch_conversion_min_records=6, batch_conversion_max_records=6, batch_conversion_max_job_mb=1)
    job_id = new_job(svc, pages=100)  # 2 chunks
    lane_id = packed_lane(svc, all_chunks(svc, job_id))
    _summaries(svc, lane_id, records=records, shard_bytes=shard_bytes)

    assert finish_prepare(svc, lane_id) == {"action": decision[0], "reason": decision[1], "records": 2 * records}

    manifest = svc.store.get_json(keys.batch_manifest_key(lane_id))
    assert (manifest["modelId"], manifest["inputBytes"], manifest["recordCount"]) == (MODEL, 2 * shard_bytes, 2 * records)
    row = lane_row(svc, lane_id)
    assert (row.manifest_key, row.record_count, row.input_bytes) == (keys.batch_manifest_key(lane_id), 2 * records, 2 * shard_bytes)


def test_a_member_whose_records_were_written_for_another_model_skips_the_lane(svc: Services) -> None:
    svc = _tuned(svc, batch_conversion_min_records=1)
    job_id = new_job(svc, pages=40)  # one chunk
    lane_id = packed_lane(svc, all_chunks(svc, job_id))
    _summaries(svc, lane_id, records=1, shard_bytes=10, model=OTHER_MODEL)

    assert finish_prepare(svc, lane_id) == {"action": "skip", "reason": "mixed_models", "records": 1}


# -- one chunk's records ----------------------------------------------------------------------------------
def test_a_chunks_summary_names_its_job_chunk_tag_model_records_blank_pages_and_shards(svc: Services) -> None:
    job_id = new_job(svc, pages=6, pages_per_chunk=5)
    job = svc.uow().jobs.get_job(job_id)
    assert job is not None
    svc.uow().jobs.put_job(dataclasses.replace(job, options={"modelId": OTHER_MODEL}))  # the job chose its model
    store_chunk_sources(svc.store, job_id, open_pdf(make_pdf(6, blank_every=2), max_pages=100), plan_chunks(6, 5))
    lane_id = packed_lane(svc, all_chunks(svc, job_id))

    answer = prepare_chunk(svc, lane_id, job_id, 0, "m3")

    assert answer == {"chunkIndex": 0, "records": 3, "shards": 1}
    summary = svc.store.get_json(f"{keys.BATCH_PREFIX}{lane_id}/prepare/m3-chunk-0.json")
    assert (summary["jobId"], summary["chunkIndex"], summary["tag"], summary["modelId"], summary["blankPages"]) == (job_id, 0, "m3", OTHER_MODEL, 2)
    assert [r["recordId"] for r in summary["records"]] == ["c0-p1", "c0-p3", "c0-p5"]
    [shard] = summary["shards"]
    assert shard["key"] == f"{keys.batch_input_prefix(lane_id)}m3-chunk-00000-0.jsonl" and shard["records"] == 3
    with pytest.raises(LookupError):
        prepare_chunk(svc, lane_id, job_id, 7, "m3")


# -- shards --------------------------------------------------------------------------------------------------


def test_a_shard_holds_lines_up_to_its_byte_limit_exactly_and_a_line_over_it_is_refused(svc: Services) -> None:
    store = TypedStore()
    writer = ShardWriter(dataclasses.replace(svc, store=store), "p/x", 10)

    writer.flush()  # nothing yet: no empty shard
    writer.add(b"abcd")
    writer.add_parts([b"ef", b"gh"])  # 10 bytes with the newlines: still one shard
    writer.add(b"i")
    writer.add(b"jklmnop")  # 2 + 8 = 10
    writer.add(b"xxxxxxxxx")  # 9 + 1 = 10: alone, at the limit
    writer.flush()
    with pytest.raises(ValueError, match="over the 10-byte file limit"):
        writer.add(b"y" * 10)

    assert writer.shards == [
        {"key": "p/x-0.jsonl", "records": 2, "bytes": 10},
        {"key": "p/x-1.jsonl", "records": 2, "bytes": 10},
        {"key": "p/x-2.jsonl", "records": 1, "bytes": 10},
    ]
    assert [store.objects[s["key"]] for s in writer.shards] == [b"abcd\nefgh\n", b"i\njklmnop\n", b"xxxxxxxxx\n"]
    assert set(store.content_types.values()) == {"application/jsonl"}
