"""Prepare: the REAL page converter, run with a capture transport, writes the batch records.

Each record is ``{"recordId", "modelInput"}`` with modelInput the Anthropic Messages body the
on-demand path sends to InvokeModel (the job is submitted as modelInvocationType InvokeModel).

The page split is the chunk processor's (same ``conversion.source.chunk_pages``), so
record ids ``c<chunk>-p<page>`` and prompt hashes are exactly what a primed chunk will
look up later. Work fans out one child per chunk (``prepare_chunk``); ``finish_prepare``
writes the manifest and decides whether the job goes to Bedrock at all.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import Any

from batchlane import keys
from batchlane.conversion.source import chunk_pages
from batchlane.converter import CaptureTransport, ConverterConfig, convert_page
from batchlane.db import batch_rows as rows
from batchlane.db import jobs as job_repo
from batchlane.domain import status as st
from batchlane.observability import logger
from batchlane.runtime import Services


def _summary_key(job_id: str, chunk_index: int) -> str:
    return f"{keys.BATCH_PREFIX}{job_id}/prepare/chunk-{chunk_index}.json"


def plan_prepare(svc: Services, job_id: str) -> dict[str, Any]:
    """Which chunks to prepare; ``proceed`` False when the job left the lane (cancelled, process now)."""
    job = job_repo.get_job(svc.db, job_id)
    row = rows.get_row(svc.db, job_id)
    if job is None or row is None or job.status != "waiting_batch" or row.state != "preparing":
        if job is not None and row is not None and row.state == "preparing":
            # The job left the lane (cancelled, processed now) before anything was submitted:
            # close the row now so it stops counting against the concurrent-job quota.
            rows.close(svc.db, job_id, st.leave_before_submit(), end_state="skipped", reason=f"job_{job.status}")
        return {"proceed": False, "chunks": [], "why": "not_preparing"}
    rows.stamp(svc.db, job_id, "prepare_started_at")
    return {"proceed": True, "chunks": [c.chunk_index for c in job_repo.get_chunks(svc.db, job_id)], "modelId": job.model_id}


@dataclass
class _ShardWriter:
    """Appends JSONL lines to shard objects of at most ``max_bytes`` each."""

    svc: Services
    job_id: str
    chunk_index: int
    max_bytes: int
    shards: list[dict[str, Any]] = field(default_factory=list)
    _buffer: io.BytesIO = field(default_factory=io.BytesIO)
    _records: int = 0

    def add(self, line: bytes) -> None:
        if len(line) + 1 > self.max_bytes:
            raise ValueError(f"one record is {len(line)} bytes, over the {self.max_bytes}-byte file limit")
        if self._buffer.tell() + len(line) + 1 > self.max_bytes:
            self.flush()
        self._buffer.write(line + b"\n")
        self._records += 1

    def flush(self) -> None:
        if not self._records:
            return
        key = f"{keys.batch_input_prefix(self.job_id)}chunk-{self.chunk_index:05d}-{len(self.shards)}.jsonl"
        data = self._buffer.getvalue()
        self.svc.store.put_bytes(key, data, "application/jsonl")
        self.shards.append({"key": key, "records": self._records, "bytes": len(data)})
        self._buffer = io.BytesIO()
        self._records = 0


def prepare_chunk(svc: Services, job_id: str, chunk_index: int) -> dict[str, Any]:
    job = job_repo.get_job(svc.db, job_id)
    chunk = job_repo.get_chunk(svc.db, job_id, chunk_index)
    if job is None or chunk is None:
        raise LookupError(f"no chunk {chunk_index} of job {job_id}")
    settings = svc.settings
    config = ConverterConfig.from_settings(settings, job.options)
    capture = CaptureTransport()
    blank = 0
    for page in chunk_pages(svc.store, job_id, chunk, render=settings.batchlane_page_render):
        if convert_page(page, config, capture, svc.prices).status == "blank":
            blank += 1
    writer = _ShardWriter(svc, job_id, chunk_index, settings.batch_conversion_max_file_mb * 1024 * 1024)
    for request in capture.requests:
        writer.add(json.dumps({"recordId": request.record_id, "modelInput": request.model_input()}, separators=(",", ":")).encode())
    writer.flush()
    summary = {
        "chunkIndex": chunk_index,
        "modelId": config.model_id,
        "records": [{"recordId": r.record_id, "promptHash": r.prompt_hash} for r in capture.requests],
        "blankPages": blank,
        "shards": writer.shards,
    }
    svc.store.put_json(_summary_key(job_id, chunk_index), summary)
    return {"chunkIndex": chunk_index, "records": len(capture.requests), "shards": len(writer.shards)}


def finish_prepare(svc: Services, job_id: str) -> dict[str, Any]:
    """Write the manifest; decide submit or skip (with the reason recorded on the row)."""
    settings = svc.settings
    job = job_repo.get_job(svc.db, job_id)
    row = rows.get_row(svc.db, job_id)
    if job is None or row is None or row.state != "preparing":
        return {"action": "skip", "reason": "not_preparing", "records": 0}
    if job.status != "waiting_batch":
        return {"action": "skip", "reason": f"job_{job.status}", "records": 0}
    chunks: dict[str, list[str]] = {}
    hashes: dict[str, str] = {}
    shards: list[dict[str, Any]] = []
    models: set[str] = set()
    for chunk in job_repo.get_chunks(svc.db, job_id):
        summary = svc.store.get_json(_summary_key(job_id, chunk.chunk_index))
        models.add(summary["modelId"])
        chunks[str(chunk.chunk_index)] = [r["recordId"] for r in summary["records"]]
        hashes.update({r["recordId"]: r["promptHash"] for r in summary["records"]})
        shards.extend(summary["shards"])
    record_count = len(hashes)
    input_bytes = sum(s["bytes"] for s in shards)
    manifest = {
        "jobId": job_id,
        "modelId": next(iter(models)) if models else job.model_id,
        "recordCount": record_count,
        "inputBytes": input_bytes,
        "shards": shards,
        "chunks": chunks,
        "promptHashes": hashes,
    }
    manifest_key = keys.batch_manifest_key(job_id)
    svc.store.put_json(manifest_key, manifest)
    rows.record_prepared(svc.db, job_id, record_count=record_count, input_bytes=input_bytes, manifest_key=manifest_key)
    reason = None
    if len(models) > 1:
        reason = "mixed_models"  # one Bedrock job is one model; a job's pages all use the job's model today
    elif record_count < settings.batch_conversion_min_records:
        reason = "too_few_records"
    elif record_count > settings.batch_conversion_max_records:
        reason = "too_many_records"
    elif input_bytes > settings.batch_conversion_max_job_mb * 1024 * 1024:
        reason = "job_too_large"
    logger.info("batch prepared", job_id=job_id, records=record_count, input_mb=round(input_bytes / 2**20, 1), shards=len(shards), skip=reason)
    if reason:
        return {"action": "skip", "reason": reason, "records": record_count}
    return {"action": "submit", "reason": None, "records": record_count}
