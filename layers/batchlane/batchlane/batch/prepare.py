"""Prepare: the REAL page converter, run with a capture transport, writes the batch records.

Each record is ``{"recordId", "modelInput"}`` with modelInput the Anthropic Messages body the
on-demand path sends to InvokeModel (the job is submitted as modelInvocationType InvokeModel).

A lane carries chunks of several jobs (the pool): each job has a tag ``m<k>`` in the lane and
its records go out as ``m<k>-c<chunk>-p<page>``. The page split is the chunk processor's (same
``filejob.source.chunk_pages``), so once the tag is stripped the record ids and prompt
hashes are exactly what a primed chunk will look up later. Work fans out one child per member
chunk (``prepare_chunk``); ``finish_prepare`` writes the manifest and decides whether the lane
goes to Bedrock at all.
"""

from __future__ import annotations

import json
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from batchlane import keys
from batchlane.claude import CaptureTransport, convert_page
from batchlane.domain import status as st
from batchlane.domain.errors import NotFound
from batchlane.domain.limits import MB, quota_bytes
from batchlane.domain.records import pooled_record_id
from batchlane.filejob import describe, page_form_choice
from batchlane.filejob.source import chunk_pages
from batchlane.observability import logger
from batchlane.ports import Services


def _summary_key(lane_id: str, tag: str, chunk_index: int) -> str:
    return f"{keys.BATCH_PREFIX}{lane_id}/prepare/{tag}-chunk-{chunk_index}.json"


def plan_prepare(svc: Services, lane_id: str) -> dict[str, Any]:
    """Which member chunks to prepare (``{"job", "chunk", "tag"}`` items); ``proceed`` False when every
    member left the lane (cancelled, processed now) before anything was submitted."""
    lanes = svc.uow().lanes
    row = lanes.get_row(lane_id)
    if row is None or row.state != "preparing":
        return {"proceed": False, "chunks": [], "why": "not_preparing"}
    everyone = lanes.members(row.id)
    packed = [m for m in everyone if m.state == "packed"]
    if not packed:
        # Every member left before anything was submitted: close the row now so it stops counting
        # against the concurrent-job quota.
        lanes.close(lane_id, st.leave_before_submit(), end_state="skipped", reason="members_left")
        return {"proceed": False, "chunks": [], "why": "members_left"}
    lanes.stamp(lane_id, "prepare_started_at")
    if row.retry_of is not None:  # a retry batch: its collect-born records are ready; one child that does nothing
        return {"proceed": True, "chunks": [0], "modelId": row.model_id, "members": len({m.job_id for m in packed})}
    groups = math.ceil(len(everyone) / group_size(len(everyone)))
    return {"proceed": True, "chunks": list(range(groups)), "modelId": row.model_id, "members": len({m.job_id for m in packed})}


MAX_PREPARE_GROUPS = 1_000  # Map items per lane: the list stays a few KB in the execution's state (256 KB cap)


def group_size(member_chunks: int) -> int:
    """Member chunks per prepare child: one each up to 1,000, then as many as keep 1,000 children."""
    return max(1, math.ceil(member_chunks / MAX_PREPARE_GROUPS))


def prepare_group(svc: Services, lane_id: str, group: int) -> dict[str, Any]:
    """Prepare the ``group``-th slice of the lane's member chunks (members that left are passed over)."""
    lanes = svc.uow().lanes
    row = lanes.get_row(lane_id)
    if row is None:
        raise LookupError(f"no lane {lane_id}")
    if row.retry_of is not None:
        return {"group": group, "records": 0}  # prepared by the collect that formed it
    everyone = lanes.members(row.id)
    size = group_size(len(everyone))
    records = 0
    for m in everyone[group * size : (group + 1) * size]:
        if m.state == "packed":
            records += prepare_chunk(svc, lane_id, m.job_id, m.chunk_index, m.member_tag)["records"]
    return {"group": group, "records": records}


@dataclass
class ShardWriter:
    """Appends JSONL lines to shard objects of at most ``max_bytes`` each.

    A line is kept as the pieces it was given and a shard is joined once, when it is written: a real book's
    record is ~200 KB, and every copy of it is a copy of the lane's whole input (261 MB for 1,321 pages)."""

    svc: Services
    prefix: str  # batch/<laneId>/input/<tag>-chunk-<NNNNN>
    max_bytes: int
    shards: list[dict[str, Any]] = field(default_factory=list)
    _parts: list[bytes] = field(default_factory=list)
    _size: int = 0
    _records: int = 0

    def add(self, line: bytes) -> None:
        self.add_parts([line])

    def add_parts(self, parts: list[bytes]) -> None:
        """One line made of ``parts`` (joined, without its newline)."""
        length = sum(map(len, parts))
        if length + 1 > self.max_bytes:
            raise ValueError(f"one record is {length} bytes, over the {self.max_bytes}-byte file limit")
        if self._size + length + 1 > self.max_bytes:
            self.flush()
        self._parts += parts
        self._parts.append(b"\n")
        self._size += length + 1
        self._records += 1

    def flush(self) -> None:
        if not self._records:
            return
        key = f"{self.prefix}-{len(self.shards)}.jsonl"
        data = b"".join(self._parts)
        self._parts = []
        self.svc.store.put_bytes(key, data, "application/jsonl")
        self.shards.append({"key": key, "records": self._records, "bytes": len(data)})
        self._size = 0
        self._records = 0


def prepare_chunk(svc: Services, lane_id: str, job_id: str, chunk_index: int, tag: str) -> dict[str, Any]:
    """One member chunk's records, as ``<tag>-c<chunk>-p<page>`` (the tag keeps members apart in the lane)."""
    jobs = svc.uow().jobs
    job = jobs.get_job(job_id)
    chunk = jobs.get_chunk(job_id, chunk_index)
    if job is None or chunk is None:
        raise LookupError(f"no chunk {chunk_index} of job {job_id}")
    settings = svc.settings
    config = page_form_choice.converter_config(svc.uow().page_forms, settings, job.options, source_type=job.source_type)  # the form the on-demand path would send now
    capture = CaptureTransport()
    blank = 0
    if describe.wanted(job):  # a born-digital chunk: a record per picture to describe (filejob/describe.py)
        describe.capture_figures(svc.store, job_id, chunk, config, capture, svc.prices)
    else:
        for page in chunk_pages(svc.store, job_id, chunk, render=settings.batchlane_page_render):
            if convert_page(page, config, capture, svc.prices).status == "blank":
                blank += 1
    prefix = f"{keys.batch_input_prefix(lane_id)}{tag}-chunk-{chunk_index:05d}"
    writer = ShardWriter(svc, prefix, quota_bytes(settings.batch_conversion_max_file_mb))
    for request in capture.requests:
        # json.dumps({"recordId": ..., "modelInput": request.model_input()}, separators=(",", ":")), byte for byte
        writer.add_parts([b'{"recordId":%s,"modelInput":' % json.dumps(pooled_record_id(tag, request.record_id)).encode(), *request.body_json_parts(), b"}"])
    writer.flush()
    summary = {
        "jobId": job_id,
        "chunkIndex": chunk_index,
        "tag": tag,
        "modelId": config.model_id,
        "records": [{"recordId": r.record_id, "promptHash": r.prompt_hash} for r in capture.requests],
        "blankPages": blank,
        "shards": writer.shards,
    }
    svc.store.put_json(_summary_key(lane_id, tag, chunk_index), summary)
    return {"chunkIndex": chunk_index, "records": len(capture.requests), "shards": len(writer.shards)}


SUMMARY_READERS = 8  # summaries read at once by finish: one GET each, a few ms here, tens of ms on S3


def _read_summaries(svc: Services, lane_id: str, members: list[Any]) -> dict[tuple[str, int], dict[str, Any] | None]:
    """Every member chunk's prepare summary (None where there is none), read concurrently: a lane of 1,000
    member chunks is 1,000 GETs, ~20 s one after another on S3."""

    def read(key: tuple[str, int]) -> dict[str, Any] | None:
        try:
            return svc.store.get_json(_summary_key(lane_id, *key))  # type: ignore[no-any-return]
        except NotFound:
            return None

    wanted = list(dict.fromkeys((m.member_tag, m.chunk_index) for m in members))
    if len(wanted) <= 1:
        return {key: read(key) for key in wanted}
    with ThreadPoolExecutor(min(SUMMARY_READERS, len(wanted))) as pool:
        return dict(zip(wanted, pool.map(read, wanted), strict=True))


def finish_prepare(svc: Services, lane_id: str) -> dict[str, Any]:
    """Write the lane's manifest; decide submit or skip (with the reason recorded on the row).

    A member that left while its records were written (cancel, process now) is dropped here: its
    shards are deleted, so the Bedrock job never runs (or bills) its pages.
    """
    settings = svc.settings
    lanes = svc.uow().lanes
    row = lanes.get_row(lane_id)
    if row is None or row.state != "preparing":
        return {"action": "skip", "reason": "not_preparing", "records": 0}
    all_members = lanes.members(row.id)
    packed = [m for m in all_members if m.state == "packed"]
    if not packed:
        return {"action": "skip", "reason": "members_left", "records": 0}
    if row.retry_of is not None:  # a retry batch: records and manifest written when it was formed
        return {"action": "submit", "reason": None, "records": row.record_count or 0}
    members: dict[str, str] = {}
    chunks: dict[str, dict[str, list[str]]] = {}
    hashes: dict[str, str] = {}
    shards: list[dict[str, Any]] = []
    models: set[str] = set()
    counts: dict[tuple[str, int], int] = {}
    dropped: list[str] = []
    summaries = _read_summaries(svc, lane_id, all_members)
    for m in all_members:
        summary = summaries[(m.member_tag, m.chunk_index)]
        if m.state != "packed":
            if summary is not None:  # None: it left before its records were written
                dropped.extend(s["key"] for s in summary["shards"])
            counts[(m.job_id, m.chunk_index)] = 0
            continue
        if summary is None:
            raise NotFound(f"no prepare summary of chunk {m.chunk_index} ({m.member_tag}) in lane {lane_id}")
        members[m.member_tag] = m.job_id
        models.add(summary["modelId"])
        chunks.setdefault(m.member_tag, {})[str(m.chunk_index)] = [r["recordId"] for r in summary["records"]]
        hashes.update({pooled_record_id(m.member_tag, r["recordId"]): r["promptHash"] for r in summary["records"]})
        shards.extend(summary["shards"])
        counts[(m.job_id, m.chunk_index)] = len(summary["records"])
    if dropped:
        svc.store.delete_keys(dropped)
    record_count = len(hashes)
    input_bytes = sum(s["bytes"] for s in shards)
    manifest = {
        "laneId": lane_id,
        "modelId": row.model_id,
        "members": members,
        "recordCount": record_count,
        "inputBytes": input_bytes,
        "shards": shards,
        "chunks": chunks,
        "promptHashes": hashes,
    }
    manifest_key = keys.batch_manifest_key(lane_id)
    svc.store.put_json(manifest_key, manifest)
    lanes.record_member_records(row.id, counts)
    lanes.record_prepared(lane_id, record_count=record_count, input_bytes=input_bytes, manifest_key=manifest_key)
    reason = None
    if models - {row.model_id}:
        reason = "mixed_models"  # the packer groups by model: a member whose model changed under it goes on-demand
    elif record_count < settings.batch_conversion_min_records:
        reason = "too_few_records"  # blank pages took the lane under Bedrock's minimum
    elif record_count > settings.batch_conversion_max_records:
        reason = "too_many_records"
    elif input_bytes > quota_bytes(settings.batch_conversion_max_job_mb):
        reason = "job_too_large"
    logger.info(
        "batch prepared", lane_id=lane_id, members=len(members), records=record_count, input_mb=round(input_bytes / MB, 1), shards=len(shards), skip=reason
    )
    if reason:
        return {"action": "skip", "reason": reason, "records": record_count}
    return {"action": "submit", "reason": None, "records": record_count}
