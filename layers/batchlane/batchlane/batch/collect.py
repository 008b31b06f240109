"""batch_collect: stream Bedrock's output, accept what the on-demand path would, bill once.

* Every ``.jsonl.out`` under ``<outputUri>/<bedrockJobId>/`` is streamed line by line;
  accepted answers are spooled to disk per chunk, so memory stays bounded however big
  the job (on disk, a 50,000-record lane at the answer cap takes up to 2.4 GB: infra sizes
  /tmp from quotas.maxRecords, domain/limits.collect_ephemeral_mb).
* Records are joined on recordId against OUR manifest: a record Bedrock did not return,
  returned as an error, returned malformed, or answered in a way ``judge`` rejects, is a
  fallback (the chunk processor converts it on-demand).
* Tokens are billed for every record Bedrock returned with output, used or not, at the
  batch price (:mod:`batchlane.batch.billing`).
"""

from __future__ import annotations

import re
import tempfile
import threading
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson

from batchlane import keys
from batchlane.batch.billing import close_and_bill, ledger_metadata, output_prefix, settle_stopping, summary
from batchlane.batch.prepare import ShardWriter
from batchlane.batch.stop import stop_batch_job
from batchlane.batch.submit import bedrock_status
from batchlane.claude import ConverterConfig, PrimedResult
from batchlane.claude.transports import answer_from_messages
from batchlane.domain.acceptance import judge
from batchlane.domain.cost import Usage
from batchlane.domain.errors import NotFound
from batchlane.domain.folder_policy import parse_deadline
from batchlane.domain.limits import quota_bytes
from batchlane.domain.page_form import IMAGE, PDF, FormTally, form_of_body, invalid_input
from batchlane.domain.pool import RETRYABLE_REJECTIONS, retry_batch_allowed, retryable_error
from batchlane.domain.records import RETRY_SUFFIX, parse_record_id, split_pooled_record_id
from batchlane.domain.savings import ServedAnswer
from batchlane.domain.status import TERMINAL_BEDROCK_STATUSES
from batchlane.filejob import page_form_choice
from batchlane.filejob.savings import batch_answers_at_on_demand
from batchlane.observability import logger, metrics
from batchlane.ports import ObjectStore, Services, UnitOfWork
from batchlane.rows import Lane

RESULT_WRITERS = 16  # PUTs are latency-bound on S3 (and moto answers 16 in parallel ~1.5x faster than 8)


class CollectNotReady(Exception):
    """The Bedrock job has not reached a terminal status yet (e.g. still Stopping)."""


def collect(svc: Services, lane_id: str, *, start_retry: bool = True) -> dict[str, Any]:
    """``start_retry``: start the execution of a retry batch it forms (the sweeper, which may not start
    lanes, leaves that to the packer's next run: it restarts every preparing lane's execution)."""
    lanes = svc.uow().lanes
    row = lanes.get_row(lane_id)
    if row is None:
        raise NotFound(f"no lane {lane_id}")
    if row.state == "closed":
        return summary(row, won=False)
    if row.state == "stopping":
        return settle_stopping(svc, row)
    if row.state != "submitted":
        raise CollectNotReady(f"lane is {row.state}")
    status = bedrock_status(svc.batch_jobs, row.arn)
    lanes.record_status(row.arn, status)
    if status not in TERMINAL_BEDROCK_STATUSES:
        if not lanes.has_packed_members(row.id):
            stop_batch_job(svc, lane_id, reason=row.reason or "members_left")  # nobody waits on it any more
        raise CollectNotReady(f"Bedrock job is {status}")

    lanes.stamp(lane_id, "collect_started_at")
    manifest = LaneManifest.of(svc.store.get_json(row.manifest_key or keys.batch_manifest_key(lane_id)))
    waiting = {(m.job_id, m.chunk_index) for m in lanes.members(row.id, state="packed")}
    expected = manifest.prompt_hashes
    with tempfile.TemporaryDirectory(prefix="collect-") as spool_dir:
        # A lost job (Bedrock no longer knows it) is collected the same way: whatever it left.
        output_keys = sorted(k for k in svc.store.list_keys(output_prefix(row, svc.store.bucket)) if k.endswith(".jsonl.out"))
        targets = [(tag, job, int(c)) for tag, job in manifest.members.items() for c in manifest.chunks.get(tag, {}) if (job, int(c)) in waiting]
        tally = collect_outputs(svc.store, output_keys, manifest=manifest, targets=targets, spool_dir=Path(spool_dir), merge=row.retry_of is not None)
    counts, billed = tally.counts, tally.billed
    pdf = tally.forms.get(PDF)
    if pdf is not None and pdf.refused() and page_form_choice.auto(svc.settings):  # both lanes send images from now on (domain/page_form.py)
        detail = f"{pdf.failed} pdf-form batch records of lane {lane_id} failed as invalid input, none succeeded"
        svc.uow().page_forms.record_form(manifest.model_id, IMAGE, source="refusal", detail=detail)
    accepted = counts["accepted"]
    fallback = len(expected) - accepted
    counts["missing"] = len(expected) - tally.seen
    model_id = manifest.model_id
    cost = svc.prices.cost(model_id, billed, batch=True)
    metadata = ledger_metadata(row, status, records=len(expected), accepted=accepted, fallback=fallback, outcomes=dict(counts))
    by_chunk = {(manifest.members[tag], chunk): n for (tag, chunk), n in tally.accepted_by_chunk.items()}
    retry = plan_retry_batch(svc, row, manifest, tally.retryable, waiting)
    metadata["retryBatch"] = retry.lane_id or retry.why
    served = served_at_on_demand(svc, manifest, tally, waiting)
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
        then=retry.insert if retry.lane_id else None,
        usage_by_job=_usage_by_job(manifest, tally.billed_by_tag),
        prices=svc.prices,
        served_at_on_demand=served,
    )
    if won:
        # Bedrock has read them and a retry batch has copied what it needs: the page images of every member
        # go now, not at the bucket's 14-day expiry (a member's file may have been deleted meanwhile).
        svc.store.delete_keys(svc.store.list_keys(keys.batch_input_prefix(lane_id)))
    if won and retry.lane_id and start_retry:
        svc.workflows.start_batch_lane(retry.lane_id, sorted({m[0] for m in retry.members}))
        logger.info("retry batch formed", lane_id=lane_id, retry_lane_id=retry.lane_id, records=sum(m[3] for m in retry.members))
    share = fallback / len(expected) if expected else 0.0
    metrics.add_metric(name="BatchRecordsAccepted", unit="Count", value=accepted)
    metrics.add_metric(name="BatchRecordsFallback", unit="Count", value=fallback)
    metrics.add_metric(name="BatchFallbackShare", unit="Percent", value=round(share * 100, 2))
    if share > svc.settings.batch_conversion_fallback_warn_share:
        logger.warning("batch fallback share high", lane_id=lane_id, fallback=fallback, records=len(expected), share=round(share, 3), outcomes=dict(counts))
    logger.info("batch job collected", lane_id=lane_id, end_state=status, accepted=accepted, fallback=fallback, cost_usd=str(cost), won=won)
    final = lanes.get_row(lane_id)
    assert final is not None
    return summary(final, won=won)


def served_at_on_demand(svc: Services, manifest: LaneManifest, tally: Tally, waiting: set[tuple[str, int]]) -> dict[str, Decimal]:
    """Each member job's accepted answers as the on-demand engine would bill them (domain/savings.py), chunk by chunk:
    what its share's ledger row carries into ``allOnDemandCostUsd``."""
    config = ConverterConfig.from_settings(svc.settings, {"modelId": manifest.model_id})
    out: dict[str, Decimal] = {}
    for (tag, chunk), answers in tally.served.items():
        job_id = manifest.members[tag]
        if (job_id, chunk) in waiting:
            out[job_id] = out.get(job_id, Decimal(0)) + batch_answers_at_on_demand(answers, config=config, settings=svc.settings, prices=svc.prices)
    return out


@dataclass
class RetryBatch:
    """The retry batch a lane's collect forms from its failed records, or why it does not."""

    lane_id: str | None = None
    why: str | None = None
    retry_of: int = 0
    model_id: str = ""
    manifest_key: str = ""
    input_bytes: int = 0
    members: list[tuple[str, int, str, int]] = field(default_factory=list)  # (job, chunk, tag, records)
    deadline_hours: float = 0.0

    def insert(self, uow: UnitOfWork) -> None:
        """Inside the close's transaction: the retry lane and its members (the originals are collected by then)."""
        assert self.lane_id is not None
        uow.lanes.insert_retry_lane(
            lane_id=self.lane_id,
            retry_of=self.retry_of,
            model_id=self.model_id,
            deadline_hours=self.deadline_hours,
            manifest_key=self.manifest_key,
            input_bytes=self.input_bytes,
            members=self.members,
        )


_RECORD_ID_AT_START = re.compile(rb'^\{"recordId":"([^"]+)"')


def plan_retry_batch(svc: Services, row: Lane, manifest: LaneManifest, failed: list[str], waiting: set[tuple[str, int]]) -> RetryBatch:
    """Failed records a retry can cure, of members still waiting on this lane, go to a retry batch when there are
    at least MIN_RECORDS of them, this lane is not itself a retry, and every affected member's deadline leaves
    room for one more batch turnaround (domain/pool.retry_batch_allowed); else they go on-demand as before.
    The records are copied from this lane's input with new ids (``…r1``) under the retry lane's prefix."""
    settings = svc.settings
    picked = [rid for rid in failed if (manifest.members.get(split_pooled_record_id(rid)[0]), parse_record_id(split_pooled_record_id(rid)[1])[0]) in waiting]
    jobs = sorted({manifest.members[split_pooled_record_id(rid)[0]] for rid in picked})
    now = datetime.now(UTC)
    deadlines: list[float | None] = []
    for value in svc.uow().lanes.job_deadlines(jobs).values():
        moment = parse_deadline(value)
        deadlines.append((moment - now).total_seconds() if moment else None)
    turnaround_s = settings.batch_deadline_hours * 3600 + settings.batch_deadline_margin_s
    why = retry_batch_allowed(
        len(picked),
        min_records=settings.batch_conversion_min_records,
        already_a_retry=row.retry_of is not None,
        deadlines_s=deadlines,
        turnaround_s=turnaround_s,
    )
    if why:
        return RetryBatch(why=why if picked else None)
    lane_id = str(uuid.uuid5(uuid.UUID(row.lane_id), RETRY_SUFFIX))  # the same retry lane whoever collects
    wanted = set(picked)
    writer = ShardWriter(svc, f"{keys.batch_input_prefix(lane_id)}retry", quota_bytes(settings.batch_conversion_max_file_mb))
    for shard in manifest.shards:
        for line in svc.store.iter_lines(shard["key"]):
            match = _RECORD_ID_AT_START.match(line)
            if match and match.group(1).decode() in wanted:
                old = match.group(1)
                writer.add(line.replace(b'"' + old + b'"', b'"' + old + RETRY_SUFFIX.encode() + b'"', 1).rstrip(b"\n"))
    writer.flush()
    members: Counter[tuple[str, int, str]] = Counter()
    chunks: dict[str, dict[str, list[str]]] = {}
    for rid in picked:
        tag, job_rid = split_pooled_record_id(rid)
        chunk = parse_record_id(job_rid)[0]
        members[(manifest.members[tag], chunk, tag)] += 1
        chunks.setdefault(tag, {}).setdefault(str(chunk), []).append(job_rid)
    manifest_key = keys.batch_manifest_key(lane_id)
    svc.store.put_json(
        manifest_key,
        {
            "laneId": lane_id,
            "retryOf": row.lane_id,
            "modelId": manifest.model_id,
            "members": {tag: job for tag, job in manifest.members.items() if tag in chunks},
            "recordCount": len(picked),
            "inputBytes": sum(s["bytes"] for s in writer.shards),
            "shards": writer.shards,
            "chunks": chunks,
            "promptHashes": {rid + RETRY_SUFFIX: manifest.prompt_hashes[rid] for rid in picked},
        },
    )
    return RetryBatch(
        lane_id=lane_id,
        retry_of=row.id,
        model_id=row.model_id,
        manifest_key=manifest_key,
        input_bytes=sum(s["bytes"] for s in writer.shards),
        members=[(job, chunk, tag, n) for (job, chunk, tag), n in sorted(members.items())],
        deadline_hours=settings.batch_deadline_hours,
    )


@dataclass(frozen=True)
class LaneManifest:
    """What prepare wrote: the members (tag → job), each member's chunks' record ids, the prompt hashes
    by the record id Bedrock sees. A manifest from before the pool (one job) reads as member m0."""

    model_id: str
    members: dict[str, str]
    chunks: dict[str, dict[str, list[str]]]
    prompt_hashes: dict[str, str]
    shards: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, data: dict[str, Any]) -> LaneManifest:
        shards = list(data.get("shards", []))
        if "members" in data:
            return cls(data["modelId"], dict(data["members"]), dict(data["chunks"]), dict(data["promptHashes"]), shards)
        return cls(data["modelId"], {"m0": data["jobId"]}, {"m0": dict(data["chunks"])}, dict(data["promptHashes"]), shards)


def _usage_by_job(manifest: LaneManifest, by_tag: dict[str, Usage]) -> dict[str, Usage]:
    """Each member job's own tokens, from its tag's records."""
    out: dict[str, Usage] = {}
    for tag, usage in by_tag.items():
        job_id = manifest.members[tag]
        out[job_id] = out.get(job_id, Usage()) + usage
    return out


@dataclass
class Tally:
    counts: Counter[str] = field(default_factory=Counter)
    billed: Usage = field(default_factory=Usage)
    billed_by_tag: dict[str, Usage] = field(default_factory=dict)  # each member's own tokens (its share of the bill)
    seen: int = 0
    accepted_by_chunk: Counter[tuple[str, int]] = field(default_factory=Counter)  # (member tag, chunk)
    served: dict[tuple[str, int], list[ServedAnswer]] = field(default_factory=dict)  # accepted answers' pages and tokens, by (tag, chunk)
    retryable: list[str] = field(default_factory=list)  # record ids a retry batch may cure (domain/pool.py)
    forms: dict[str, FormTally] = field(default_factory=dict)  # per page form of the record's modelInput: answered vs refused as invalid input


SPOOL_MEMORY_BYTES = 64 * 1024 * 1024  # accepted answers held in memory before the open chunks spill to disk


class _Spools:
    """Accepted answers per (tag, chunk): in memory while few chunks are open (Bedrock writes records mostly in
    chunk order, so a chunk completes soon after it starts), spilled to ``<dir>/<tag>-<chunk>.jsonl`` past
    SPOOL_MEMORY_BYTES, so memory stays bounded however big the answers. Disk on this path cost collect as much
    as the parse (docs/benchmarks.md "collect near a bare parse")."""

    def __init__(self, spool_dir: Path) -> None:
        self.dir = spool_dir
        self.held: dict[tuple[str, int], list[bytes]] = {}
        self.held_bytes = 0
        self.on_disk: set[tuple[str, int]] = set()

    def add(self, spool: tuple[str, int], line: bytes) -> None:
        self.held.setdefault(spool, []).append(line)
        self.held_bytes += len(line)
        if self.held_bytes > SPOOL_MEMORY_BYTES:
            self.spill()

    def spill(self) -> None:
        for spool, lines in self.held.items():
            with self.path(spool).open("ab") as handle:
                handle.write(b"\n".join(lines) + b"\n")
            self.on_disk.add(spool)
        self.held.clear()
        self.held_bytes = 0

    def take(self, spool: tuple[str, int]) -> list[bytes]:
        lines = self.path(spool).read_bytes().splitlines() if spool in self.on_disk else []
        held = self.held.pop(spool, [])
        self.held_bytes -= sum(map(len, held))
        return lines + held

    def path(self, spool: tuple[str, int]) -> Path:
        return self.dir / f"{spool[0]}-{spool[1]}.jsonl"


def tally_outputs(
    store: ObjectStore,
    output_keys: list[str],
    *,
    manifest: LaneManifest,
    spool_dir: Path,
    on_chunk_done: Callable[[str, int, list[bytes]], None] | None = None,
) -> Tally:
    """Stream every output line once; spool accepted answers (results' JSON lines) per chunk.

    Memory holds one line at a time, the set of record ids seen (for duplicates) and at most
    SPOOL_MEMORY_BYTES of answers: 50,000 records stay far under Lambda's limits whatever their size.
    orjson parses and writes the lines. ``on_chunk_done(tag, chunk, lines)`` takes a chunk's answers
    once every record the manifest lists for it has been seen, so its results are written while the
    rest is read; what is left at the end is in ``spool_dir/<tag>-<chunk>.jsonl`` (collect_outputs writes each chunk's results from it).
    """
    tally = Tally()
    seen: set[str] = set()
    spools = _Spools(spool_dir)
    expected, model_id = manifest.prompt_hashes, manifest.model_id
    left = {(tag, int(chunk)): len(ids) for tag, chunks in manifest.chunks.items() for chunk, ids in chunks.items()}
    input_tokens = output_tokens = 0

    def seen_one(spool: tuple[str, int]) -> None:
        left[spool] = left.get(spool, 0) - 1
        if left[spool] == 0 and on_chunk_done is not None:
            on_chunk_done(spool[0], spool[1], spools.take(spool))

    for key in output_keys:
        for line in store.iter_lines(key):
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
                record_id = record["recordId"]
            except (ValueError, KeyError, TypeError):
                tally.counts["malformed"] += 1
                continue
            if not isinstance(record_id, str) or record_id not in expected or record_id in seen:
                tally.counts["unknown_or_duplicate"] += 1
                continue
            seen.add(record_id)
            tag, job_record_id = split_pooled_record_id(record_id)
            spool = (tag, parse_record_id(job_record_id)[0])
            output = record.get("modelOutput")
            # Bedrock echoes each record's modelInput beside its output or error ("View the results of a batch
            # inference job"): the form a record was sent in is read there, and judged by what succeeded.
            form = form_of_body(record.get("modelInput"))
            if not isinstance(output, dict):
                tally.counts["error_record"] += 1
                error = record.get("error") if isinstance(record.get("error"), dict) else {}
                if retryable_error(error.get("errorCode"), error.get("errorMessage")):
                    tally.retryable.append(record_id)
                elif form is not None and invalid_input(error.get("errorCode")):
                    tally.forms.setdefault(form, FormTally()).failed += 1
                seen_one(spool)
                continue
            if form is not None:
                tally.forms.setdefault(form, FormTally()).succeeded += 1
            answer = answer_from_messages(output, served_by="batch")
            input_tokens += answer.usage.input_tokens
            output_tokens += answer.usage.output_tokens
            tally.billed_by_tag[tag] = tally.billed_by_tag.get(tag, Usage()) + answer.usage  # each member pays its own tokens
            verdict = judge(answer.text, answer.stop_reason)
            if not verdict.accepted:
                tally.counts[f"rejected:{verdict.reason}"] += 1
                if verdict.reason in RETRYABLE_REJECTIONS:
                    tally.retryable.append(record_id)
                seen_one(spool)
                continue
            primed = PrimedResult(
                job_record_id, model_id, expected[record_id], answer.text, answer.stop_reason, answer.usage.input_tokens, answer.usage.output_tokens
            )
            spools.add(spool, orjson.dumps(primed.to_json()))
            tally.counts["accepted"] += 1
            tally.accepted_by_chunk[spool] += 1
            tally.served.setdefault(spool, []).append(ServedAnswer(parse_record_id(job_record_id)[1], answer.usage))
            seen_one(spool)
    spools.spill()
    tally.billed = Usage(input_tokens, output_tokens)
    tally.seen = len(seen)
    return tally


def collect_outputs(
    store: ObjectStore, output_keys: list[str], *, manifest: LaneManifest, targets: list[tuple[str, str, int]], spool_dir: Path, merge: bool = False
) -> Tally:
    """Tally the outputs and write results/chunk-N.json for every target chunk — (tag, job id, chunk) —, each
    chunk's as soon as all its records are in (the PUTs overlap the parse), the rest at the end."""
    by_chunk = {(tag, chunk): (tag, job, chunk) for tag, job, chunk in targets}
    written: set[tuple[str, int]] = set()
    room = threading.BoundedSemaphore(2 * RESULT_WRITERS)  # results waiting for a writer: memory stays bounded when S3 is slow
    pending: list[Future[None]] = []
    with ThreadPoolExecutor(max_workers=RESULT_WRITERS, thread_name_prefix="results") as pool:

        def write(target: tuple[str, str, int], lines: list[bytes]) -> None:
            room.acquire()
            future = pool.submit(_write_result, store, target, lines, merge)
            future.add_done_callback(lambda _: room.release())
            pending.append(future)

        def chunk_done(tag: str, chunk: int, lines: list[bytes]) -> None:
            target = by_chunk.get((tag, chunk))
            if target is not None:
                written.add((tag, chunk))
                write(target, lines)

        tally = tally_outputs(store, output_keys, manifest=manifest, spool_dir=spool_dir, on_chunk_done=chunk_done)
        for key, target in by_chunk.items():
            if key not in written:
                write(target, _spooled(spool_dir, target))
        for future in pending:
            future.result()  # re-raise the first failure
    return tally


def _spooled(spool_dir: Path, target: tuple[str, str, int]) -> list[bytes]:
    path = spool_dir / f"{target[0]}-{target[2]}.jsonl"
    return path.read_bytes().splitlines() if path.exists() else []


def _write_result(store: ObjectStore, target: tuple[str, str, int], lines: list[bytes], merge: bool) -> None:
    """The spooled lines are already the results' JSON (one record id each: tally_outputs drops duplicates),
    so a first collect joins them as they are; only a retry batch's merge parses them."""
    _, job_id, chunk_index = target
    key = keys.batch_results_key(job_id, chunk_index)
    if not merge:
        head = orjson.dumps({"jobId": job_id, "chunkIndex": chunk_index})[:-1]
        store.put_bytes(key, head + b',"results":[' + b",".join(lines) + b"]}", "application/json")
        return
    try:  # a retry batch adds to what the first lane brought (by record id: a repeat collect changes nothing)
        earlier = store.get_json(key).get("results", [])
    except NotFound:
        earlier = []
    results = list({item["recordId"]: item for item in [*earlier, *map(orjson.loads, lines)]}.values())
    store.put_bytes(key, orjson.dumps({"jobId": job_id, "chunkIndex": chunk_index, "results": results}), "application/json")
