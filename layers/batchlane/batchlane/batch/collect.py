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
from batchlane.db import jobs as job_repo
from batchlane.domain.acceptance import judge
from batchlane.domain.cost import Usage
from batchlane.domain.errors import NotFound
from batchlane.domain.records import parse_record_id
from batchlane.domain.status import JobStatus
from batchlane.observability import logger, metrics
from batchlane.ports import ObjectStore
from batchlane.runtime import Services

RESULT_WRITERS = 8


class CollectNotReady(Exception):
    """The Bedrock job has not reached a terminal status yet (e.g. still Stopping)."""


def collect(svc: Services, job_id: str) -> dict[str, Any]:
    row = rows.get_row(svc.db, job_id)
    if row is None:
        raise NotFound(f"no batch row for job {job_id}")
    if row.state == "closed":
        return summary(row, won=False)
    if row.state == "stopping":
        return settle_stopping(svc, row)
    if row.state != "submitted":
        raise CollectNotReady(f"batch row is {row.state}")
    status = bedrock_status(svc.batch_jobs, row.arn)
    rows.record_status(svc.db, row.arn, status)
    if status not in rows.TERMINAL_BEDROCK_STATUSES:
        job = job_repo.get_job(svc.db, job_id)
        if job and job.status == JobStatus.CANCELLED:
            stop_batch_job(svc, job_id, reason="cancelled")
        raise CollectNotReady(f"Bedrock job is {status}")

    rows.stamp(svc.db, job_id, "collect_started_at")
    manifest = svc.store.get_json(row.manifest_key or keys.batch_manifest_key(job_id))
    expected: dict[str, str] = manifest["promptHashes"]
    model_id = manifest["modelId"]
    with tempfile.TemporaryDirectory(prefix="collect-") as spool_dir:
        # A lost job (Bedrock no longer knows it) is collected the same way: whatever it left.
        output_keys = sorted(k for k in svc.store.list_keys(output_prefix(row, svc.store.bucket)) if k.endswith(".jsonl.out"))
        tally = tally_outputs(svc.store, output_keys, expected=expected, model_id=model_id, spool_dir=Path(spool_dir))
        write_results(svc.store, job_id, [int(c) for c in manifest["chunks"]], spool_dir=Path(spool_dir))
    counts, billed = tally.counts, tally.billed
    accepted = counts["accepted"]
    fallback = len(expected) - accepted
    counts["missing"] = len(expected) - tally.seen
    cost = svc.prices.cost(model_id, billed, batch=True)
    metadata = ledger_metadata(row, status, records=len(expected), accepted=accepted, fallback=fallback, outcomes=dict(counts))
    won = close_and_bill(
        svc, job_id, row, end_state=status, accepted=accepted, fallback=fallback, usage=billed, cost=cost, model_id=model_id, metadata=metadata
    )
    share = fallback / len(expected) if expected else 0.0
    metrics.add_metric(name="BatchRecordsAccepted", unit="Count", value=accepted)
    metrics.add_metric(name="BatchRecordsFallback", unit="Count", value=fallback)
    metrics.add_metric(name="BatchFallbackShare", unit="Percent", value=round(share * 100, 2))
    if share > svc.settings.batch_conversion_fallback_warn_share:
        logger.warning("batch fallback share high", job_id=job_id, fallback=fallback, records=len(expected), share=round(share, 3), outcomes=dict(counts))
    logger.info("batch job collected", job_id=job_id, end_state=status, accepted=accepted, fallback=fallback, cost_usd=str(cost), won=won)
    final = rows.get_row(svc.db, job_id)
    assert final is not None
    return summary(final, won=won)


@dataclass
class Tally:
    counts: Counter[str] = field(default_factory=Counter)
    billed: Usage = field(default_factory=Usage)
    seen: int = 0


def tally_outputs(store: ObjectStore, output_keys: list[str], *, expected: dict[str, str], model_id: str, spool_dir: Path) -> Tally:
    """Stream every output line once; spool accepted answers to ``spool_dir/<chunk>.jsonl``.

    Memory holds one line at a time plus the set of record ids seen (for duplicates):
    50,000 records stay far under Lambda's limits whatever their size.
    """
    tally = Tally()
    seen: set[str] = set()
    spools: dict[int, IO[str]] = {}
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
                chunk_index, _ = parse_record_id(record_id)
                if chunk_index not in spools:
                    spools[chunk_index] = (spool_dir / f"{chunk_index}.jsonl").open("w")
                primed = PrimedResult(
                    record_id, model_id, expected[record_id], answer.text, answer.stop_reason, answer.usage.input_tokens, answer.usage.output_tokens
                )
                spools[chunk_index].write(json.dumps(primed.to_json()) + "\n")
                tally.counts["accepted"] += 1
    finally:
        for handle in spools.values():
            handle.close()
    tally.seen = len(seen)
    return tally


def write_results(store: ObjectStore, job_id: str, chunk_indexes: list[int], *, spool_dir: Path) -> None:
    """results/chunk-N.json for every chunk (empty when none of its pages was accepted).

    One object per chunk, written by a small pool: a 5,000-page job has 100 chunks, and
    S3 PUTs one after another would spend most of collect waiting on round trips.
    """

    def write(chunk_index: int) -> None:
        path = spool_dir / f"{chunk_index}.jsonl"
        results = [json.loads(line) for line in path.open()] if path.exists() else []
        store.put_json(keys.batch_results_key(job_id, chunk_index), {"jobId": job_id, "chunkIndex": chunk_index, "results": results})

    with ThreadPoolExecutor(max_workers=RESULT_WRITERS, thread_name_prefix="results") as pool:
        list(pool.map(write, chunk_indexes))  # list(): re-raise the first failure
