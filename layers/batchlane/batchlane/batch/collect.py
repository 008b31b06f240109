"""Collect: stream Bedrock's output, accept what the on-demand path would, bill once.

* Every ``.jsonl.out`` under ``<outputUri>/<bedrockJobId>/`` is streamed line by line;
  accepted answers are spooled to disk per chunk, so memory stays bounded however big
  the job (a Lambda has /tmp; 50,000 records fit in a few hundred MB of disk).
* Records are joined on recordId against OUR manifest: a record Bedrock did not return,
  returned as an error, returned malformed, or answered in a way ``judge`` rejects, is a
  fallback (the chunk processor converts it on-demand).
* Tokens are billed for every record Bedrock returned with output, used or not, at the
  batch price. The cost_ledger row is written in the same transaction as the guarded
  submitted → closed move, so of any number of racing collectors exactly one writes it.
* A lane that gives up while its Bedrock job still runs (:func:`abandon`) stops the job
  and leaves the row ``stopping``: Bedrock writes manifest.json.out only at the terminal
  status, so the bill is written then (:func:`settle_stopping`, from the event callback
  or the sweeper), never as $0 from a manifest that does not exist yet.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

from botocore.exceptions import ClientError

from batchlane import keys
from batchlane.aws.s3 import ObjectStore
from batchlane.batch.names import bedrock_job_name, job_id_from_arn
from batchlane.batch.submit import bedrock_status, find_job_by_name, output_uri_for, stop_batch_job
from batchlane.converter import PrimedResult
from batchlane.converter.transports import answer_from_messages
from batchlane.db import batch_rows as rows
from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.domain import status as st
from batchlane.domain.acceptance import judge
from batchlane.domain.cost import BATCH_PRICE_MULTIPLIER, Usage
from batchlane.domain.errors import NotFound
from batchlane.domain.records import parse_record_id
from batchlane.domain.status import JobStatus, Transition
from batchlane.observability import logger, metrics
from batchlane.runtime import Services

RESULT_WRITERS = 8
SKIP_REASONS = frozenset({"too_few_records", "too_many_records", "job_too_large", "mixed_models", "not_preparing"})


class CollectNotReady(Exception):
    """The Bedrock job has not reached a terminal status yet (e.g. still Stopping)."""


def _output_prefix(row: dict[str, Any], bucket: str) -> str:
    uri = row["output_uri"] or ""
    prefix = uri.removeprefix(f"s3://{bucket}/")
    if not prefix.endswith("/"):
        prefix += "/"
    return f"{prefix}{job_id_from_arn(row['bedrock_job_arn'])}/"


def _summary(row: dict[str, Any], *, won: bool) -> dict[str, Any]:
    return {
        "closed": True,
        "won": won,
        "endState": row["end_state"],
        "accepted": row["accepted_count"] or 0,
        "fallback": row["fallback_count"] or 0,
        "costUsd": str(row["cost_usd"] or 0),
    }


def collect(svc: Services, job_id: str) -> dict[str, Any]:
    row = rows.get_row(svc.db, job_id)
    if row is None:
        raise NotFound(f"no batch row for job {job_id}")
    if row["state"] == "closed":
        return _summary(row, won=False)
    if row["state"] == "stopping":
        return settle_stopping(svc, row)
    if row["state"] != "submitted":
        raise CollectNotReady(f"batch row is {row['state']}")
    status = bedrock_status(svc.bedrock(), row["bedrock_job_arn"])
    rows.record_status(svc.db, row["bedrock_job_arn"], status)
    if status not in rows.TERMINAL_BEDROCK_STATUSES:
        job = job_repo.get_job(svc.db, job_id)
        if job and job["status"] == JobStatus.CANCELLED:
            stop_batch_job(svc, job_id, reason="cancelled")
        raise CollectNotReady(f"Bedrock job is {status}")

    rows.stamp(svc.db, job_id, "collect_started_at")
    manifest = svc.store.get_json(row["manifest_key"])
    expected: dict[str, str] = manifest["promptHashes"]
    model_id = manifest["modelId"]
    with tempfile.TemporaryDirectory(prefix="collect-") as spool_dir:
        # A lost job (Bedrock no longer knows it) is collected the same way: whatever it left.
        output_keys = sorted(k for k in svc.store.list_keys(_output_prefix(row, svc.store.bucket)) if k.endswith(".jsonl.out"))
        tally = tally_outputs(svc.store, output_keys, expected=expected, model_id=model_id, spool_dir=Path(spool_dir))
        write_results(svc.store, job_id, [int(c) for c in manifest["chunks"]], spool_dir=Path(spool_dir))
    counts, billed = tally.counts, tally.billed
    accepted = counts["accepted"]
    fallback = len(expected) - accepted
    counts["missing"] = len(expected) - tally.seen
    cost = svc.prices.cost(model_id, billed, batch=True)
    metadata = _ledger_metadata(row, status, records=len(expected), accepted=accepted, fallback=fallback, outcomes=dict(counts))
    won = _close_and_bill(
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
    return _summary(final, won=won)


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


def _ledger_metadata(row: dict[str, Any], end_state: str, **counts: Any) -> dict[str, Any]:
    """What the one batch ledger row says about its batch job."""
    return {"batch": True, "batchMultiplier": float(BATCH_PRICE_MULTIPLIER), "jobArn": row["bedrock_job_arn"], "endState": end_state, **counts}


def _close_and_bill(
    svc: Services,
    job_id: str,
    row: dict[str, Any],
    *,
    end_state: str,
    accepted: int,
    fallback: int,
    usage: Usage,
    cost: Decimal,
    model_id: str,
    metadata: dict[str, Any],
    reason: str | None = None,
    move: Transition | None = None,
) -> bool:
    move = move or st.close()
    with svc.db.transaction() as tx:
        closed = rows.close(tx, job_id, move, end_state=end_state, reason=reason, accepted=accepted, fallback=fallback, cost_usd=cost)
        if closed is None:
            return False
        ledger.add_batch_cost(
            tx,
            job_id=job_id,
            batch_row_id=int(closed["id"]),
            model_id=model_id,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=cost,
            metadata=metadata,
        )
        ledger.carry_late_batch_cost(tx, job_id, cost)
        return True


def abandon(svc: Services, job_id: str, *, reason: str, error: dict[str, Any] | None = None) -> dict[str, Any]:
    """Leave the lane without results: skip, prepare error, or collect failing for good.

    A submitted Bedrock job is stopped. Once it has ended it is billed at once from its
    own manifest.json.out; while it is still running (or Stopping) the row becomes
    ``stopping`` and the job resumes on-demand now: the bill follows at the terminal
    status (:func:`settle_stopping`). A submit that failed after Bedrock created the job
    adopts that job first, so it is stopped and billed too.
    """
    row = rows.get_row(svc.db, job_id)
    if row is None:
        return {"closed": False}
    detail = (error or {}).get("Error")
    if row["state"] == "preparing" and reason == "submit_failed":
        row = adopt_created_job(svc, job_id) or row
    if row["state"] == "preparing":
        left_lane = reason in SKIP_REASONS or reason.startswith("job_")  # job_cancelled, job_pending: the user moved it
        end_state = "skipped" if left_lane else "prepare_failed"
        closed = rows.close(svc.db, job_id, st.leave_before_submit(), end_state=end_state, reason=f"{reason}: {detail}" if detail else reason)
        logger.info("batch lane left before submit", job_id=job_id, reason=reason, error=detail)
        return {"closed": closed is not None, "endState": end_state}
    if row["state"] == "submitted":
        stop_batch_job(svc, job_id, reason=reason)
        status = bedrock_status(svc.bedrock(), row["bedrock_job_arn"])
        rows.record_status(svc.db, row["bedrock_job_arn"], status)
        if status not in rows.TERMINAL_BEDROCK_STATUSES:
            rows.mark_stopping(svc.db, job_id, reason=reason)
            logger.warning(
                "batch lane left while its Bedrock job stops; billed at its terminal status", job_id=job_id, reason=reason, status=status, error=detail
            )
            return {"closed": False, "stopping": True, "endState": "stopping"}
        usage = _billed_from_bedrock_manifest(svc, row)
        model_id = row["model_id"]
        cost = svc.prices.cost(model_id, usage, batch=True)
        metadata = _ledger_metadata(row, reason, records=row["record_count"] or 0, accepted=0, fallback=row["record_count"] or 0, partial=True, error=detail)
        won = _close_and_bill(
            svc,
            job_id,
            row,
            end_state=reason,
            accepted=0,
            fallback=row["record_count"] or 0,
            usage=usage,
            cost=cost,
            model_id=model_id,
            metadata=metadata,
            reason=reason,
        )
        logger.warning("batch lane abandoned after submit", job_id=job_id, reason=reason, error=detail, cost_usd=str(cost), won=won)
        return {"closed": True, "won": won, "endState": reason}
    return {"closed": True, "won": False, "endState": row["end_state"]}


def settle_stopping(svc: Services, row: dict[str, Any]) -> dict[str, Any]:
    """Bill a ``stopping`` row once its Bedrock job has ended: manifest.json.out exists now.

    Called by the state-change callback, the sweeper, and collect; the guarded
    stopping → closed move lets exactly one of them write the ledger row.
    """
    job_id, arn = str(row["job_id"]), row["bedrock_job_arn"]
    status = row["bedrock_status"]
    if status not in rows.TERMINAL_BEDROCK_STATUSES:
        status = bedrock_status(svc.bedrock(), arn)
        row = rows.record_status(svc.db, arn, status) or row
    if status not in rows.TERMINAL_BEDROCK_STATUSES:
        return {"closed": False, "won": False, "endState": "stopping", "accepted": 0, "fallback": row["fallback_count"] or 0, "costUsd": "0"}
    usage = _billed_from_bedrock_manifest(svc, row)
    model_id = row["model_id"]
    cost = svc.prices.cost(model_id, usage, batch=True)
    records = row["record_count"] or 0
    metadata = _ledger_metadata(row, status, records=records, accepted=0, fallback=records, partial=True, leftLane=row["reason"])
    won = _close_and_bill(
        svc,
        job_id,
        row,
        end_state=status,
        accepted=0,
        fallback=records,
        usage=usage,
        cost=cost,
        model_id=model_id,
        metadata=metadata,
        move=st.settle_stopping(),
    )
    if won:
        logger.info("stopped batch job billed", job_id=job_id, end_state=status, reason=row["reason"], cost_usd=str(cost))
    final = rows.get_row(svc.db, job_id)
    assert final is not None
    return _summary(final, won=won)


def adopt_created_job(svc: Services, job_id: str, bedrock: Any | None = None) -> dict[str, Any] | None:
    """A Bedrock job created under this job's name (a submit that failed after creating it, or a prepare
    stuck past its create): it bills, so the row adopts it, to be collected or stopped. None if there is none."""
    existing = find_job_by_name(bedrock or svc.bedrock(), bedrock_job_name(job_id))
    if not existing:
        return None
    logger.warning("a Bedrock job created for this job was adopted", job_id=job_id, bedrock_job_arn=existing["jobArn"])
    return rows.mark_submitted(
        svc.db,
        job_id,
        arn=existing["jobArn"],
        name=existing["jobName"],
        output_uri=output_uri_for(svc, job_id),
        deadline_hours=svc.settings.batch_deadline_hours,
    )


def _billed_from_bedrock_manifest(svc: Services, row: dict[str, Any]) -> Usage:
    try:
        data = svc.store.get_json(_output_prefix(row, svc.store.bucket) + "manifest.json.out")
        return Usage(int(data.get("inputTokenCount", 0)), int(data.get("outputTokenCount", 0)))
    except (NotFound, ClientError, ValueError, KeyError, OSError):
        return Usage()
