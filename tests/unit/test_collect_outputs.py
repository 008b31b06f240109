"""collect's read of Bedrock's output (issue 27, point 1): each chunk's results are written as soon as its
records are all in, the rest at the end, and the results are the same whether the answers stayed in memory
or spilled to disk."""

from __future__ import annotations

import json

import pytest

from batchlane import keys
from batchlane.batch import collect
from batchlane.batch.collect import LaneManifest, collect_outputs
from batchlane.claude import PrimedResult
from tests.unit.usecases.usecase_fakes import MemoryStore

JOB = "00000000-0000-0000-0000-0000000000aa"


def _line(record_id: str, text: str = "", *, stop: str = "end_turn", error: bool = False) -> str:
    if error:
        return json.dumps({"recordId": record_id, "modelInput": {}, "error": {"errorCode": 500, "errorMessage": "internal"}})
    body = {"content": [{"type": "text", "text": text}], "stop_reason": stop, "usage": {"input_tokens": 10, "output_tokens": 3}}
    return json.dumps({"recordId": record_id, "modelInput": {}, "modelOutput": body})


class WatchedStore(MemoryStore):
    """Records the order of reads and writes, to see a chunk's results leave before the next file is read."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[str] = []

    def iter_lines(self, key):  # type: ignore[no-untyped-def]
        self.events.append(f"read {key.rsplit('/', 1)[-1]}")
        yield from super().iter_lines(key)

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        self.events.append(f"put {key.rsplit('/', 1)[-1]}")
        super().put_bytes(key, data, content_type)


def _lane(store: MemoryStore) -> tuple[LaneManifest, list[str]]:
    ids = {0: ["c0-p1", "c0-p2", "c0-p3"], 1: ["c1-p4", "c1-p5", "c1-p6"]}
    manifest = LaneManifest.of({"jobId": JOB, "modelId": "m", "chunks": ids, "promptHashes": {rid: f"h-{rid}" for c in ids.values() for rid in c}})
    first = [_line("c0-p1", "one"), _line("c0-p2", "", stop="end_turn"), _line("c0-p3", "three"), _line("c0-p3", "again")]
    second = [_line("c1-p4", "four"), "{not json", _line("c1-p5", error=True)]  # c1-p6 never comes back
    store.put_bytes("out/a.jsonl.out", "\n".join(first).encode())
    store.put_bytes("out/b.jsonl.out", "\n".join(second).encode())
    return manifest, ["out/a.jsonl.out", "out/b.jsonl.out"]


def _results(store: MemoryStore, chunk: int) -> list[PrimedResult]:
    return [PrimedResult.from_json(item) for item in store.get_json(keys.batch_results_key(JOB, chunk))["results"]]


@pytest.mark.parametrize("spill", [False, True], ids=["in-memory", "spilled-to-disk"])
def test_each_chunk_gets_exactly_its_accepted_answers(tmp_path, monkeypatch, spill):
    if spill:
        monkeypatch.setattr(collect, "SPOOL_MEMORY_BYTES", 1)  # every answer goes to disk at once
    store = WatchedStore()
    manifest, output_keys = _lane(store)
    tally = collect_outputs(store, output_keys, manifest=manifest, targets=[("m0", JOB, 0), ("m0", JOB, 1)], spool_dir=tmp_path)
    assert [(r.record_id, r.text, r.prompt_hash) for r in _results(store, 0)] == [("c0-p1", "one", "h-c0-p1"), ("c0-p3", "three", "h-c0-p3")]
    assert [(r.record_id, r.text) for r in _results(store, 1)] == [("c1-p4", "four")]
    assert tally.counts["accepted"] == 3 and tally.counts["unknown_or_duplicate"] == 1 and tally.counts["malformed"] == 1
    assert tally.counts["error_record"] == 1 and tally.counts["rejected:empty_text"] == 1
    assert tally.seen == 5 and (tally.billed.input_tokens, tally.billed.output_tokens) == (40, 12)  # rejected answers are billed too
    # chunk 0 was complete within the first file: its results left before the second file was read
    assert store.events.index("put chunk-0.json") < store.events.index("read b.jsonl.out")


def test_a_chunk_no_longer_waiting_gets_no_results_object(tmp_path):
    store = MemoryStore()
    manifest, output_keys = _lane(store)
    collect_outputs(store, output_keys, manifest=manifest, targets=[("m0", JOB, 1)], spool_dir=tmp_path)
    assert keys.batch_results_key(JOB, 0) not in store.objects
    assert [r.record_id for r in _results(store, 1)] == ["c1-p4"]
