"""batch_collect: stream Bedrock's output, accept what the on-demand path would, bill once.

* Every ``.jsonl.out`` under ``<outputUri>/<bedrockJobId>/`` is streamed line by line;
  accepted answers are spooled to disk per chunk, so memory stays bounded however big
  the job (a Lambda has /tmp; 50,000 records fit in a few hundred MB of disk).
* Records are joined on recordId against OUR manifest: a record Bedrock did not return,
  returned as an error, returned malformed, or answered in a way ``judge`` rejects, is a
  fallback (the chunk processor converts it on-demand).
* Tokens are billed for every record Bedrock returned with output, used or not, at the
  batch price (:mod:`batchlane.batch.billing`).
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from batchlane import keys
from batchlane.batch.billing import close_and_bill, ledger_metadata, output_prefix, settle_stopping, summary
from batchlane.batch.stop import stop_batch_job
from batchlane.batch.submit import bedrock_status
from batchlane.converter import PrimedResult
from batchlane.converter.transports import answer_from_messages
from batchlane.db import batch_rows as rows
from batchlane.domain.acceptance import judge
from batchlane.domain.cost import Usage
from batchlane.domain.errors import NotFound
from batchlane.domain.records import parse_record_id, split_pooled_record_id
from batchlane.observability import logger, metrics
from batchlane.ports import ObjectStore
from batchlane.runtime import Services

RESULT_WRITERS = 8


class CollectNotReady(Exception):
    """The Bedrock job has not reached a terminal status yet (e.g. still Stopping)."""


def collect(svc: Services, lane_id: str) -> dict[str, Any]:
    row = rows.get_row(svc.db, lane_id)
    if row is None:
        raise NotFound(f"no lane {lane_id}")
    if row.state == "closed":
        return summary(row, won=False)
    if row.state == "stopping":
        return settle_stopping(svc, row)
    if row.state != "submitted":
        raise CollectNotReady(f"batch row is {row.state}")
    status = bedrock_status(svc.batch_jobs, row.arn)
    rows.record_status(svc.db, row.arn, status)
    if status not in rows.TERMINAL_BEDROCK_STATUSES:
        if not rows.has_packed_members(svc.db, row.id):
            stop_batch_job(svc, lane_id, reason=row.reason or "members_left")  # nobody waits on it any more
        raise CollectNotReady(f"Bedrock job is {status}")

    rows.stamp(svc.db, lane_id, "collect_started_at")
    manifest = LaneManifest.of(svc.store.get_json(row.manifest_key or keys.batch_manifest_key(lane_id)))
    waiting = {(m.job_id, m.chunk_index) for m in rows.members(svc.db, row.id, state="packed")}
    expected = manifest.prompt_hashes
    with tempfile.TemporaryDirectory(prefix="collect-") as spool_dir:
        # A lost job (Bedrock no longer knows it) is collected the same way: whatever it left.
        output_keys = sorted(k for k in svc.store.list_keys(output_prefix(row, svc.store.bucket)) if k.endswith(".jsonl.out"))
        tally = tally_outputs(svc.store, output_keys, manifest=manifest, spool_dir=Path(spool_dir))
        targets = [(tag, job, int(c)) for tag, job in manifest.members.items() for c in manifest.chunks.get(tag, {}) if (job, int(c)) in waiting]
        write_results(svc.store, targets, spool_dir=Path(spool_dir))
    counts, billed = tally.counts, tally.billed
    accepted = counts["accepted"]
    fallback = len(expected) - accepted
    counts["missing"] = len(expected) - tally.seen
    model_id = manifest.model_id
    cost = svc.prices.cost(model_id, billed, batch=True)
    metadata = ledger_metadata(row, status, records=len(expected), accepted=accepted, fallback=fallback, outcomes=dict(counts))
    by_chunk = {(manifest.members[tag], chunk): n for (tag, chunk), n in tally.accepted_by_chunk.items()}
    won = close_and_bill(
        svc,
        row,
        end_state=status,
        accepted=accepted,
        fallback=fallback,
        usage=billed,
        cost=cost,
        model_id=model_id,
        metadata=metadata,
        accepted_by_chunk=by_chunk,
    )
    share = fallback / len(expected) if expected else 0.0
    metrics.add_metric(name="BatchRecordsAccepted", unit="Count", value=accepted)
    metrics.add_metric(name="BatchRecordsFallback", unit="Count", value=fallback)
    metrics.add_metric(name="BatchFallbackShare", unit="Percent", value=round(share * 100, 2))
    if share > svc.settings.batch_conversion_fallback_warn_share:
        logger.warning("batch fallback share high", lane_id=lane_id, fallback=fallback, records=len(expected), share=round(share, 3), outcomes=dict(counts))
    logger.info("batch job collected", lane_id=lane_id, end_state=status, accepted=accepted, fallback=fallback, cost_usd=str(cost), won=won)
    final = rows.get_row(svc.db, lane_id)
    assert final is not None
    return summary(final, won=won)


@dataclass(frozen=True)
class LaneManifest:
    """What prepare wrote: the members (tag → job), each member's chunks' record ids, the prompt hashes
    by the record id Bedrock sees. A manifest from before the pool (one job) reads as member m0."""

    model_id: str
    members: dict[str, str]
    chunks: dict[str, dict[str, list[str]]]
    prompt_hashes: dict[str, str]

    @classmethod
    def of(cls, data: dict[str, Any]) -> LaneManifest:
        if "members" in data:
            return cls(data["modelId"], dict(data["members"]), dict(data["chunks"]), dict(data["promptHashes"]))
        return cls(data["modelId"], {"m0": data["jobId"]}, {"m0": dict(data["chunks"])}, dict(data["promptHashes"]))


@dataclass
class Tally:
    counts: Counter[str] = field(default_factory=Counter)
    billed: Usage = field(default_factory=Usage)
    seen: int = 0
    accepted_by_chunk: Counter[tuple[str, int]] = field(default_factory=Counter)  # (member tag, chunk)


def tally_outputs(store: ObjectStore, output_keys: list[str], *, manifest: LaneManifest, spool_dir: Path) -> Tally:
    """Stream every output line once; spool accepted answers to ``spool_dir/<tag>-<chunk>.jsonl``.

    Memory holds one line at a time plus the set of record ids seen (for duplicates):
    50,000 records stay far under Lambda's limits whatever their size.
    """
    tally = Tally()
    seen: set[str] = set()
    spools: dict[tuple[str, int], IO[str]] = {}
    expected, model_id = manifest.prompt_hashes, manifest.model_id
    try:
        for key in output_keys:
            for line in store.iter_lines(key):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    record_id = record["recordId"]
                except (ValueError, KeyError, TypeError):
                    tally.counts["malformed"] += 1
                    continue
                if record_id not in expected or record_id in seen:
                    tally.counts["unknown_or_duplicate"] += 1
                    continue
                seen.add(record_id)
                output = record.get("modelOutput")
                if not isinstance(output, dict):
                    tally.counts["error_record"] += 1
                    continue
                answer = answer_from_messages(output, served_by="batch")
                tally.billed = tally.billed + answer.usage
                verdict = judge(answer.text, answer.stop_reason)
                if not verdict.accepted:
                    tally.counts[f"rejected:{verdict.reason}"] += 1
                    continue
                tag, job_record_id = split_pooled_record_id(record_id)
                chunk_index, _ = parse_record_id(job_record_id)
                spool = (tag, chunk_index)
                if spool not in spools:
                    spools[spool] = (spool_dir / f"{tag}-{chunk_index}.jsonl").open("w")
                primed = PrimedResult(
                    job_record_id, model_id, expected[record_id], answer.text, answer.stop_reason, answer.usage.input_tokens, answer.usage.output_tokens
                )
                spools[spool].write(json.dumps(primed.to_json()) + "\n")
                tally.counts["accepted"] += 1
                tally.accepted_by_chunk[spool] += 1
    finally:
        for handle in spools.values():
            handle.close()
    tally.seen = len(seen)
    return tally


def write_results(store: ObjectStore, targets: list[tuple[str, str, int]], *, spool_dir: Path) -> None:
    """results/chunk-N.json for every member chunk still waiting on the lane — (tag, job id, chunk) —,
    empty when none of its pages was accepted.

    One object per chunk, written by a small pool: a 5,000-page lane has 100 chunks or more, and
    S3 PUTs one after another would spend most of collect waiting on round trips.
    """

    def write(target: tuple[str, str, int]) -> None:
        tag, job_id, chunk_index = target
        path = spool_dir / f"{tag}-{chunk_index}.jsonl"
        results = [json.loads(line) for line in path.open()] if path.exists() else []
        store.put_json(keys.batch_results_key(job_id, chunk_index), {"jobId": job_id, "chunkIndex": chunk_index, "results": results})

    with ThreadPoolExecutor(max_workers=RESULT_WRITERS, thread_name_prefix="results") as pool:
        list(pool.map(write, targets))  # list(): re-raise the first failure
