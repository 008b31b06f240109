"""Collecting a lane, at its edges (no server): every kind of line Bedrock may leave counted once under its own name in the
bill's outcomes, the results each chunk gets, the retry batch it forms (or why not), and a retry lane's results merged."""

from __future__ import annotations

import dataclasses
import json
import threading
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from usecase_fakes import MODEL, MemoryStore, TypedStore, all_chunks, batch_jobs_of, lane_ledger, lane_row, new_job, parked_job, prepared_lane, set_lane

from batchlane import keys
from batchlane.batch import collect as collect_module
from batchlane.batch.abandon import abandon
from batchlane.batch.collect import CollectNotReady, LaneManifest, collect, collect_outputs
from batchlane.batch.submit import submit_batch_job
from batchlane.domain.cost import Usage
from batchlane.ports import Services
from batchlane.rows import LedgerRow


def _submitted(svc: Services, lane_id: str) -> str:
    return str(submit_batch_job(svc, lane_id)["jobArn"])


def _answer(text: str, stop: str = "end_turn", tokens_in: int = 10, tokens_out: int = 5) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "stop_reason": stop, "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out}}


def _ok(record_id: str, tokens_in: int = 10, tokens_out: int = 5) -> dict[str, Any]:
    return {"recordId": record_id, "modelOutput": _answer(f"# {record_id}", "end_turn", tokens_in, tokens_out)}


def _error(record_id: str, code: int, message: str) -> dict[str, Any]:
    return {"recordId": record_id, "error": {"errorCode": code, "errorMessage": message}}


def _bedrock_answers(svc: Services, lane_id: str, arn: str, lines: list[Any], *, status: str = "Completed") -> None:
    """What Bedrock leaves when the job ends: its output lines (a str is written as it is), and its terminal status."""
    row = lane_row(svc, lane_id)
    assert row.output_uri is not None
    prefix = row.output_uri.removeprefix(f"s3://{svc.store.bucket}/").rstrip("/") + "/" + arn.rsplit("/", 1)[-1] + "/"
    body = "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines)
    svc.store.put_bytes(prefix + "input-0.jsonl.out", body.encode())
    batch_jobs_of(svc).jobs[arn].status = status


def _bill(svc: Services, lane_id: str) -> LedgerRow:
    [bill] = lane_ledger(svc, lane_id, source="batch")
    return bill


def _results(svc: Services, job_id: str, chunk: int) -> dict[str, Any]:
    result: dict[str, Any] = svc.store.get_json(keys.batch_results_key(job_id, chunk))
    return result


def _with_input_shard(svc: Services, lane_id: str, *, mention_id_twice: bool = False) -> None:
    """The lane's input written as prepare writes it (one shard), so a retry batch can copy its records."""
    manifest_key = lane_row(svc, lane_id).manifest_key
    assert manifest_key is not None
    manifest = svc.store.get_json(manifest_key)
    lines = []
    for rid in manifest["promptHashes"]:
        body = {"page": rid, "note": f'"{rid}"'} if mention_id_twice else {"page": 1}
        lines.append(json.dumps({"recordId": rid, "modelInput": body}, separators=(",", ":")).encode())
    shard = b"\n".join(lines) + b"\n"
    shard_key = f"{keys.batch_input_prefix(lane_id)}shard-0.jsonl"
    svc.store.put_bytes(shard_key, shard, "application/jsonl")
    svc.store.put_json(manifest_key, {**manifest, "shards": [{"key": shard_key, "bytes": len(shard)}]})


def _min_records(svc: Services, n: int) -> Services:
    return dataclasses.replace(svc, settings=svc.settings.model_copy(update={"batch_conversion_min_records": n}))


# -- the tally ---------------------------------------------------------------------------------------
def test_every_kind_of_output_line_is_counted_under_its_own_name_in_the_bill(svc: Services) -> None:
    parked = parked_job(svc, records=3)  # chunk 0: m0c0p1-3, chunk 1: m0c1p51-53, chunk 2: m0c2p101-103
    job_id, lane_id = parked.job_id, parked.lane_id
    arn = _submitted(svc, lane_id)
    lines: list[Any] = [
        _ok("m0c0p1", 100, 20),
        _ok("m0c0p2", 200, 30),
        "not json at all",
        json.dumps({"noRecordId": True}),
        "",  # a blank line is no record
        _ok("m9c0p1"),  # not ours
        _ok("m0c0p1"),  # a duplicate
        {"recordId": "m0c0p3", "error": "ThrottlingException"},  # an error that is not an object
        _error("m0c1p51", 400, "ValidationException: the document block is not supported"),
        _error("m0c1p52", 400, "ValidationException: document too large"),
        {"recordId": "m0c1p53", "modelOutput": _answer("cut", "max_tokens", 300, 40)},
        {"recordId": "m0c2p101", "modelOutput": _answer("  ", "end_turn", 400, 50)},
        {"recordId": "m0c2p102", "modelOutput": _answer("", "end_turn", 500, 60)},
    ]  # m0c2p103 never came back
    _bedrock_answers(svc, lane_id, arn, lines, status="PartiallyCompleted")

    summary = collect(svc, lane_id)

    billed = Usage(100 + 200 + 300 + 400 + 500, 20 + 30 + 40 + 50 + 60)  # every answer with output, used or not
    assert (summary["accepted"], summary["fallback"]) == (2, 7)
    bill = _bill(svc, lane_id)
    assert (bill.input_tokens, bill.output_tokens, bill.cost_usd) == (billed.input_tokens, billed.output_tokens, svc.prices.cost(MODEL, billed, batch=True))
    meta = bill.metadata
    assert (meta["endState"], meta["records"], meta["accepted"], meta["fallback"]) == ("PartiallyCompleted", 9, 2, 7)
    assert meta["outcomes"] == {
        "accepted": 2,
        "malformed": 2,
        "unknown_or_duplicate": 2,
        "error_record": 3,
        "rejected:stop_reason=max_tokens": 1,
        "rejected:empty_text": 2,
        "missing": 1,
    }
    assert meta["retryBatch"] == "too_few_to_retry", "2 curable records, fewer than the least a retry batch takes"
    assert _results(svc, job_id, 0) == {
        "jobId": job_id,
        "chunkIndex": 0,
        "results": [
            {
                "recordId": "c0-p1",
                "modelId": MODEL,
                "promptHash": "hash-c0-p1",
                "text": "# m0c0p1",
                "stopReason": "end_turn",
                "inputTokens": 100,
                "outputTokens": 20,
            },
            {
                "recordId": "c0-p2",
                "modelId": MODEL,
                "promptHash": "hash-c0-p2",
                "text": "# m0c0p2",
                "stopReason": "end_turn",
                "inputTokens": 200,
                "outputTokens": 30,
            },
        ],
    }
    assert _results(svc, job_id, 1) == {"jobId": job_id, "chunkIndex": 1, "results": []}
    assert {(m.chunk_index, m.accepted) for m in svc.uow().lanes.members(lane_row(svc, lane_id).id)} == {(0, 2), (1, 0), (2, 0)}
    assert svc.uow().page_forms.get(MODEL) is None, "two errors that say 'document' are no evidence against a form (issue 42.1)"


def test_a_lane_with_no_page_form_refusal_records_no_page_form(svc: Services) -> None:
    parked = parked_job(svc)
    arn = _submitted(svc, parked.lane_id)
    _bedrock_answers(svc, parked.lane_id, arn, [_ok("m0c0p1"), _error("m0c1p51", 400, "ValidationException: bad body")])

    collect(svc, parked.lane_id)

    assert svc.uow().page_forms.get(MODEL) is None
    assert _bill(svc, parked.lane_id).metadata["outcomes"]["error_record"] == 1


def test_a_collected_lane_deletes_its_page_inputs_and_reports_its_numbers(svc: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    parked = parked_job(svc, records=2)
    arn = _submitted(svc, parked.lane_id)
    svc.store.put_bytes(f"{keys.batch_input_prefix(parked.lane_id)}shard-0.jsonl", b"{}", "application/jsonl")
    other = f"{keys.batch_input_prefix(str(uuid.uuid4()))}shard-0.jsonl"
    svc.store.put_bytes(other, b"{}", "application/jsonl")
    emitted: list[tuple[str, str, float]] = []
    monkeypatch.setattr(collect_module.metrics, "add_metric", lambda *, name, unit, value: emitted.append((name, unit, value)))
    _bedrock_answers(svc, parked.lane_id, arn, [_ok("m0c0p1")])

    collect(svc, parked.lane_id)

    assert svc.store.list_keys(keys.batch_input_prefix(parked.lane_id)) == []
    assert svc.store.list_keys(other) == [other], "another lane's inputs stay"
    assert emitted == [("BatchRecordsAccepted", "Count", 1), ("BatchRecordsFallback", "Count", 5), ("BatchFallbackShare", "Percent", 83.33)]


def test_a_lane_of_an_old_manifest_with_one_job_and_no_members_collects_for_that_job(svc: Services) -> None:
    parked = parked_job(svc)
    manifest_key = lane_row(svc, parked.lane_id).manifest_key
    assert manifest_key is not None
    manifest = svc.store.get_json(manifest_key)
    old = {"jobId": parked.job_id, "modelId": MODEL, "chunks": manifest["chunks"]["m0"], "promptHashes": manifest["promptHashes"]}
    svc.store.put_json(manifest_key, old)
    arn = _submitted(svc, parked.lane_id)
    _bedrock_answers(svc, parked.lane_id, arn, [_ok("m0c0p1")])

    assert collect(svc, parked.lane_id)["accepted"] == 1
    assert [r["recordId"] for r in _results(svc, parked.job_id, 0)["results"]] == ["c0-p1"]
    assert LaneManifest.of(old) == LaneManifest(MODEL, {"m0": parked.job_id}, {"m0": manifest["chunks"]["m0"]}, manifest["promptHashes"], [])
    assert LaneManifest.of({**old, "shards": [{"key": "k", "bytes": 1}]}).shards == [{"key": "k", "bytes": 1}]


def test_a_lane_prepared_before_its_manifest_key_was_recorded_is_collected_from_the_lane_s_own_manifest(svc: Services) -> None:
    parked = parked_job(svc)
    row = lane_row(svc, parked.lane_id)
    assert row.manifest_key == keys.batch_manifest_key(parked.lane_id)
    set_lane(svc, parked.lane_id, manifest_key=None)  # as a lane prepared before the column
    arn = _submitted(svc, parked.lane_id)
    _bedrock_answers(svc, parked.lane_id, arn, [_ok("m0c0p1")])

    assert collect(svc, parked.lane_id)["accepted"] == 1
    assert [r["recordId"] for r in _results(svc, parked.job_id, 0)["results"]] == ["c0-p1"]


# -- before the end ---------------------------------------------------------------------------------------
def test_a_lane_still_running_is_not_collected_and_its_status_is_recorded(svc: Services) -> None:
    parked = parked_job(svc)
    arn = _submitted(svc, parked.lane_id)
    batch_jobs_of(svc).jobs[arn].status = "InProgress"

    with pytest.raises(CollectNotReady):
        collect(svc, parked.lane_id)

    row = lane_row(svc, parked.lane_id)
    assert (row.state, row.bedrock_status) == ("submitted", "InProgress")
    assert batch_jobs_of(svc).stops == []


def test_a_running_lane_nobody_waits_on_any_more_is_stopped_as_members_left(svc: Services) -> None:
    parked = parked_job(svc)
    arn = _submitted(svc, parked.lane_id)
    batch_jobs_of(svc).jobs[arn].status = "InProgress"
    svc.uow().lanes.leave_lanes(parked.job_id)

    with pytest.raises(CollectNotReady):
        collect(svc, parked.lane_id)

    assert batch_jobs_of(svc).stops == [arn]
    assert lane_row(svc, parked.lane_id).reason == "members_left"


def test_collecting_a_stopping_lane_bills_it_at_its_terminal_status(svc: Services) -> None:
    parked = parked_job(svc)
    arn = _submitted(svc, parked.lane_id)
    batch_jobs_of(svc).jobs[arn].status = "InProgress"
    assert abandon(svc, parked.lane_id, reason="overdue")["stopping"] is True
    _bedrock_answers(svc, parked.lane_id, arn, [_ok("m0c0p1")], status="Stopped")

    summary = collect(svc, parked.lane_id)

    assert (summary["closed"], summary["won"], summary["endState"]) == (True, True, "Stopped")
    assert lane_row(svc, parked.lane_id).state == "closed"


# -- the retry batch ---------------------------------------------------------------------------------------
def _throttled_lane(svc: Services, *, mention_id_twice: bool = False) -> tuple[str, str, str]:
    """A lane of one job, 3 records per chunk, whose Bedrock job answered chunk 0 and m0c1p51, and left three records a
    second batch may cure (m0c1p52 throttled, m0c2p101 unavailable, m0c2p102 empty) and two it may not (m0c1p53 cut off,
    m0c2p103 refused). Returns (job, lane, arn)."""
    parked = parked_job(svc, records=3)
    _with_input_shard(svc, parked.lane_id, mention_id_twice=mention_id_twice)
    arn = _submitted(svc, parked.lane_id)
    lines = [_ok("m0c0p1"), _ok("m0c0p2"), _ok("m0c0p3"), _ok("m0c1p51")]
    lines.append({"recordId": "m0c1p52", "error": {"errorCode": "n/a", "errorMessage": "ThrottlingException: slow down"}})  # known by its name
    lines.append({"recordId": "m0c1p53", "modelOutput": _answer("cut", "max_tokens")})
    lines += [_error("m0c2p101", 503, "busy"), {"recordId": "m0c2p102", "modelOutput": _answer("", "end_turn")}]
    lines.append(_error("m0c2p103", 400, "ValidationException: bad"))
    _bedrock_answers(svc, parked.lane_id, arn, lines, status="PartiallyCompleted")
    return parked.job_id, parked.lane_id, arn


def test_curable_records_form_a_retry_lane_whose_manifest_maps_them_back(svc: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    svc = _min_records(svc, 2)
    job_id, lane_id, _ = _throttled_lane(svc, mention_id_twice=True)
    lanes_started: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(svc.workflows, "start_batch_lane", lambda lane, members: lanes_started.append((lane, members)) or "arn")

    collect(svc, lane_id)

    retry_id = str(uuid.uuid5(uuid.UUID(lane_id), "r1"))
    assert _bill(svc, lane_id).metadata["retryBatch"] == retry_id
    assert lanes_started == [(retry_id, [job_id])]
    retry = lane_row(svc, retry_id)
    assert retry.manifest_key == keys.batch_manifest_key(retry_id)
    manifest = svc.store.get_json(retry.manifest_key)
    [shard] = manifest.pop("shards")
    assert shard["key"].startswith(f"{keys.batch_input_prefix(retry_id)}retry")
    assert manifest == {
        "laneId": retry_id,
        "retryOf": lane_id,
        "modelId": MODEL,
        "members": {"m0": job_id},
        "recordCount": 3,
        "inputBytes": shard["bytes"],
        "chunks": {"m0": {"1": ["c1-p52"], "2": ["c2-p101", "c2-p102"]}},
        "promptHashes": {"m0c1p52r1": "hash-c1-p52", "m0c2p101r1": "hash-c2-p101", "m0c2p102r1": "hash-c2-p102"},
    }
    copied = [json.loads(line) for line in svc.store.iter_lines(shard["key"])]
    assert [c["recordId"] for c in copied] == ["m0c1p52r1", "m0c2p101r1", "m0c2p102r1"]
    assert [c["modelInput"]["page"] for c in copied] == ["m0c1p52", "m0c2p101", "m0c2p102"], "only the record id is renamed, not the page's text"
    assert sorted((m.job_id, m.chunk_index, m.member_tag, m.records) for m in svc.uow().lanes.members(retry.id)) == [
        (job_id, 1, "m0", 1),
        (job_id, 2, "m0", 2),
    ]
    assert (retry.input_bytes, retry.record_count, retry.model_id) == (shard["bytes"], 3, MODEL)
    assert retry.deadline is not None and retry.deadline - retry.created_at == timedelta(hours=svc.settings.batch_deadline_hours)


def test_a_retry_lane_is_formed_but_not_started_when_the_caller_leaves_that_to_the_packer(svc: Services) -> None:
    svc = _min_records(svc, 2)
    _, lane_id, _ = _throttled_lane(svc)

    collect(svc, lane_id, start_retry=False)

    assert svc.uow().lanes.get_row(str(uuid.uuid5(uuid.UUID(lane_id), "r1"))) is not None
    assert svc.workflows.started == []  # type: ignore[attr-defined]


def test_a_retry_lanes_answers_are_merged_into_what_the_first_lane_brought(svc: Services) -> None:
    svc = _min_records(svc, 2)
    job_id, lane_id, _ = _throttled_lane(svc)
    collect(svc, lane_id)
    retry_id = str(uuid.uuid5(uuid.UUID(lane_id), "r1"))
    arn = _submitted(svc, retry_id)
    _bedrock_answers(svc, retry_id, arn, [_ok("m0c1p52r1", 7, 3), _error("m0c2p101r1", 429, "ThrottlingException"), _ok("m0c1p52r1", 1, 1), _ok("m0c2p102r1")])

    summary = collect(svc, retry_id)

    assert (summary["accepted"], summary["fallback"]) == (2, 1)
    chunk_1 = _results(svc, job_id, 1)
    assert (chunk_1["jobId"], chunk_1["chunkIndex"]) == (job_id, 1)
    assert [(r["recordId"], r["promptHash"]) for r in chunk_1["results"]] == [("c1-p51", "hash-c1-p51"), ("c1-p52", "hash-c1-p52")]
    assert [r["recordId"] for r in _results(svc, job_id, 2)["results"]] == ["c2-p102"]
    assert [r["recordId"] for r in _results(svc, job_id, 0)["results"]] == ["c0-p1", "c0-p2", "c0-p3"], "a chunk the retry did not carry is untouched"
    assert _bill(svc, retry_id).metadata["retryBatch"] == "retried_once"
    assert svc.uow().lanes.get_row(str(uuid.uuid5(uuid.UUID(retry_id), "r1"))) is None, "what fails twice goes on-demand"


def test_a_merge_with_no_earlier_results_writes_the_retry_lanes_alone(tmp_path: Path) -> None:
    store = MemoryStore()
    manifest = LaneManifest(MODEL, {"m0": "job-1"}, {"m0": {"3": ["c3-p1"]}}, {"m0c3p1r1": "h"})
    store.put_bytes("out/a.jsonl.out", json.dumps(_ok("m0c3p1r1")).encode())

    collect_outputs(store, ["out/a.jsonl.out"], manifest=manifest, targets=[("m0", "job-1", 3)], spool_dir=tmp_path, merge=True)

    written = store.get_json(keys.batch_results_key("job-1", 3))
    assert (written["jobId"], written["chunkIndex"], [r["recordId"] for r in written["results"]]) == ("job-1", 3, ["c3-p1"])


def _deadline_in(svc: Services, job_id: str, left: timedelta) -> None:
    jobs = svc.uow().jobs
    job = jobs.get_job(job_id)
    assert job is not None
    jobs.put_job(dataclasses.replace(job, options={**job.options, "deadline": (datetime.now(UTC) + left).isoformat()}))


@pytest.mark.parametrize(
    ("beyond_turnaround", "retry_batch"),
    [
        (timedelta(hours=-1), "deadline"),  # less than a batch turnaround and its margin: straight to on-demand
        (timedelta(seconds=10), "formed"),
    ],
)
def test_a_retry_batch_is_formed_only_when_every_members_deadline_leaves_a_turnaround(svc: Services, beyond_turnaround: timedelta, retry_batch: str) -> None:
    svc = _min_records(svc, 2)
    job_id, lane_id, _ = _throttled_lane(svc)
    turnaround = timedelta(hours=svc.settings.batch_deadline_hours, seconds=svc.settings.batch_deadline_margin_s)
    _deadline_in(svc, job_id, turnaround + beyond_turnaround)

    collect(svc, lane_id)

    formed = svc.uow().lanes.get_row(str(uuid.uuid5(uuid.UUID(lane_id), "r1")))
    assert (formed is not None) == (retry_batch == "formed")
    if retry_batch == "deadline":
        assert _bill(svc, lane_id).metadata["retryBatch"] == "deadline"


def test_a_lane_with_no_curable_record_says_nothing_about_a_retry_batch(svc: Services) -> None:
    parked = parked_job(svc)
    arn = _submitted(svc, parked.lane_id)
    _bedrock_answers(svc, parked.lane_id, arn, [_ok("m0c0p1"), _error("m0c1p51", 400, "ValidationException: bad")])

    collect(svc, parked.lane_id)

    assert _bill(svc, parked.lane_id).metadata["retryBatch"] is None


def test_records_of_a_member_that_left_are_not_retried_for_it(svc: Services) -> None:
    svc = _min_records(svc, 2)
    a, b = new_job(svc, pages=60), new_job(svc, pages=60, owner="owner-2")  # 2 chunks each
    lane_id = prepared_lane(svc, [*all_chunks(svc, a), *all_chunks(svc, b)])
    _with_input_shard(svc, lane_id)
    arn = _submitted(svc, lane_id)
    throttled = [_error(rid, 429, "ThrottlingException") for rid in ("m0c0p1", "m0c1p51", "m1c0p1", "m1c1p51")]
    _bedrock_answers(svc, lane_id, arn, throttled)
    svc.uow().lanes.leave_lanes(b)

    collect(svc, lane_id)

    retry = lane_row(svc, str(uuid.uuid5(uuid.UUID(lane_id), "r1")))
    assert {m.job_id for m in svc.uow().lanes.members(retry.id)} == {a}
    assert retry.manifest_key is not None
    assert svc.store.get_json(retry.manifest_key)["members"] == {"m0": a}
    assert svc.store.list_keys(f"batch/{b}/") == [], "no results written for the member that left"


# -- writing results ------------------------------------------------------------------------------------
def test_a_lane_with_more_chunks_than_result_writers_writes_every_chunks_results(tmp_path: Path) -> None:
    store = MemoryStore()
    chunks = 3 * collect_module.RESULT_WRITERS
    manifest = LaneManifest(
        MODEL, {"m0": "job-1"}, {"m0": {str(c): [f"c{c}-p{c + 1}"] for c in range(chunks)}}, {f"m0c{c}p{c + 1}": "h" for c in range(chunks)}
    )
    store.put_bytes("out/a.jsonl.out", "\n".join(json.dumps(_ok(f"m0c{c}p{c + 1}")) for c in range(chunks)).encode())
    done = threading.Event()

    def run() -> None:
        collect_outputs(store, ["out/a.jsonl.out"], manifest=manifest, targets=[("m0", "job-1", c) for c in range(chunks)], spool_dir=tmp_path)
        done.set()

    threading.Thread(target=run, daemon=True).start()

    assert done.wait(timeout=10), "the writers never freed their slots"
    assert all(len(store.get_json(keys.batch_results_key("job-1", c))["results"]) == 1 for c in range(chunks))


def test_each_member_pays_for_its_own_tokens_not_for_its_share_of_the_records(svc: Services) -> None:
    a, b = new_job(svc, pages=60), new_job(svc, pages=10, owner="owner-2")  # a sends 2 records, b 1
    lane_id = prepared_lane(svc, [*all_chunks(svc, a), *all_chunks(svc, b)])
    arn = _submitted(svc, lane_id)
    _bedrock_answers(svc, lane_id, arn, [_ok("m0c0p1", 1000, 100), _ok("m0c1p51", 3000, 300), _ok("m1c0p1", 10, 1)])

    collect(svc, lane_id)

    shares = {str(r.job_id): r for r in lane_ledger(svc, lane_id, source="batch_share")}
    assert {j: (r.input_tokens, r.output_tokens) for j, r in shares.items()} == {a: (4000, 400), b: (10, 1)}


@pytest.mark.parametrize("merge", [False, True])
def test_a_chunks_results_are_stored_as_json(tmp_path: Path, merge: bool) -> None:
    store = TypedStore()
    manifest = LaneManifest(MODEL, {"m0": "job-1"}, {"m0": {"0": ["c0-p1"]}}, {"m0c0p1": "h"})
    store.put_bytes("out/a.jsonl.out", json.dumps(_ok("m0c0p1")).encode())

    collect_outputs(store, ["out/a.jsonl.out"], manifest=manifest, targets=[("m0", "job-1", 0)], spool_dir=tmp_path, merge=merge)

    assert store.content_types[keys.batch_results_key("job-1", 0)] == "application/json"


def test_answers_wait_in_memory_until_past_the_limit_then_every_open_chunk_goes_to_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collect_module, "SPOOL_MEMORY_BYTES", 10)
    spools = collect_module._Spools(tmp_path)

    spools.add(("m0", 0), b"12345")
    spools.add(("m0", 1), b"67890")
    assert (spools.held_bytes, spools.on_disk) == (10, set()), "at the limit, not past it: still in memory"
    spools.add(("m0", 0), b"x")
    assert (spools.held_bytes, spools.held, spools.on_disk) == (0, {}, {("m0", 0), ("m0", 1)})
    assert spools.take(("m0", 0)) == [b"12345", b"x"]

    spools.add(("m0", 2), b"abc")
    spools.add(("m0", 3), b"d")
    assert spools.take(("m0", 2)) == [b"abc"]
    assert spools.held_bytes == 1
