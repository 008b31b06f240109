"""The chunk processor: convert one chunk's pages, book the spend, record the result.

* Pages of a primed job are served from their batch result when model + prompt hash
  match (PrimedTransport); anything else calls Bedrock on-demand.
* Pages run on a bounded pool; results are keyed by page number, so completion order
  never matters.
* Before each page the chunk heartbeats, guarded on status processing and its own
  worker id; when that guard matches no row (the job was cancelled, or another attempt
  took over) the chunk starts no new page, books what it spent and discards the rest.
* A page that failed for a retryable reason (throttling past the client's retries) is
  not given up at once: the good pages are kept in a partial file, the spend is booked,
  and :class:`ChunkRetryLater` makes Step Functions retry the chunk with backoff. On the
  last attempt such pages are marked failed — visible in the Markdown, never dropped.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from batchlane import keys
from batchlane.converter import ConverterConfig, OnDemandTransport, PageResult, PrimedResult, PrimedTransport, Transport, convert_page
from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.domain.cost import Usage
from batchlane.domain.errors import NotFound
from batchlane.observability import logger
from batchlane.pdf.split import ChunkSpan, Page, open_pdf
from batchlane.runtime import Services

MAX_CHUNK_ATTEMPTS = 3  # keep equal to the ProcessChunk Retry MaxAttempts + 1 in conversion.asl.json
HEARTBEAT_EVERY_S = 1.0


class ChunkRetryLater(Exception):
    """Some pages failed for a reason that may pass (throttling): retry the chunk later."""


@dataclass
class ChunkRun:
    pages: dict[int, PageResult] = field(default_factory=dict)
    aborted: bool = False

    def spend(self, *, only_new: set[int] | None = None) -> tuple[Usage, Decimal]:
        usage, cost = Usage(), Decimal(0)
        for number, result in self.pages.items():
            if only_new is not None and number not in only_new:
                continue
            if result.served_by == "on_demand":
                usage = usage + result.usage
                cost += result.cost_usd
        return usage, cost


class Heartbeat:
    """Rate-limited, guarded heartbeat: ``alive()`` is False once the guard matched no row."""

    def __init__(self, beat: Callable[[int], bool]) -> None:
        self._beat = beat
        self._last = 0.0
        self._alive = True
        self._lock = threading.Lock()

    def alive(self, pages_done: int) -> bool:
        with self._lock:
            if self._alive and time.monotonic() - self._last >= HEARTBEAT_EVERY_S:
                self._alive = self._beat(pages_done)
                self._last = time.monotonic()
            return self._alive


def load_primed_results(svc: Services, job_id: str, chunk_index: int) -> dict[str, PrimedResult]:
    try:
        data = svc.store.get_json(keys.batch_results_key(job_id, chunk_index))
    except NotFound:
        return {}
    return {item["recordId"]: PrimedResult.from_json(item) for item in data.get("results", [])}


def run_pages(
    pages: list[Page],
    *,
    config: ConverterConfig,
    transport: Transport,
    svc: Services,
    heartbeat: Heartbeat,
    concurrency: int,
    done_before: int = 0,
) -> ChunkRun:
    """Convert ``pages`` with at most ``concurrency`` in flight, checking the heartbeat before each."""
    run = ChunkRun()
    in_flight: dict[Future[PageResult], int] = {}
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="page") as pool:
        for page in pages:
            if not heartbeat.alive(done_before + len(run.pages)):
                run.aborted = True
                break
            while len(in_flight) >= concurrency:
                finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in finished:
                    run.pages[in_flight.pop(future)] = future.result()
            in_flight[pool.submit(convert_page, page, config, transport, svc.prices)] = page.number
        for future in list(in_flight):
            run.pages[in_flight.pop(future)] = future.result()
    return run


def process_chunk(svc: Services, job_id: str, chunk_index: int, *, worker_id: str | None = None) -> dict[str, Any]:
    worker_id = worker_id or uuid.uuid4().hex
    chunk = job_repo.get_chunk(svc.db, job_id, chunk_index)
    if chunk is None:
        raise NotFound(f"no chunk {chunk_index} of job {job_id}")
    if chunk["status"] == "completed":
        return {"jobId": job_id, "chunkIndex": chunk_index, "status": "completed", "repeat": True}
    claimed = job_repo.claim_chunk(svc.db, job_id, chunk_index, worker_id)
    if claimed is None:
        logger.info("chunk not claimable", job_id=job_id, chunk=chunk_index, chunk_status=chunk["status"])
        return {"jobId": job_id, "chunkIndex": chunk_index, "status": "skipped"}
    job = job_repo.get_job(svc.db, job_id)
    assert job is not None
    file_row = job_repo.get_file(svc.db, str(job["file_id"]))
    assert file_row is not None
    options = job["options"] or {}
    settings = svc.settings
    config = ConverterConfig.from_settings(settings, options)

    document = open_pdf(svc.store.get_bytes(file_row["s3_key"]), max_pages=max(settings.batchlane_max_pages, job["total_pages"]))
    span = ChunkSpan(chunk_index, claimed["first_page"], claimed["last_page"])
    kept = _load_partial(svc, job_id, chunk_index)
    pages = [page for page in document.pages(span) if page.number not in kept]

    transport: Transport = OnDemandTransport(svc.bedrock_runtime())
    primed: PrimedTransport | None = None
    if options.get("_batchPrimed"):
        primed = PrimedTransport(load_primed_results(svc, job_id, chunk_index), transport)
        transport = primed

    heartbeat = Heartbeat(lambda done: job_repo.heartbeat_chunk(svc.db, job_id, chunk_index, worker_id, done))
    run = run_pages(
        pages, config=config, transport=transport, svc=svc, heartbeat=heartbeat, concurrency=settings.batchlane_chunk_concurrency, done_before=len(kept)
    )
    new_pages = set(run.pages)
    usage, cost = run.spend()
    metadata = {"attempt": claimed["attempts"], "worker": worker_id, "pagesOnDemand": sum(1 for r in run.pages.values() if r.served_by == "on_demand")}

    if run.aborted:
        _book(svc, job_id, chunk_index, config.model_id, usage, cost, {**metadata, "aborted": True})
        logger.info("chunk aborted", job_id=job_id, chunk=chunk_index, pages_converted=len(new_pages), cost_usd=str(cost))
        return {"jobId": job_id, "chunkIndex": chunk_index, "status": "aborted"}

    results = {**kept, **run.pages}
    retryable = [n for n, r in run.pages.items() if r.status == "failed" and r.retryable]
    if retryable and claimed["attempts"] < MAX_CHUNK_ATTEMPTS:
        good = {n: r for n, r in results.items() if not (r.status == "failed" and r.retryable)}
        svc.store.put_json(keys.chunk_partial_key(job_id, chunk_index), {"pages": [r.to_json() for r in good.values()]})
        _book(svc, job_id, chunk_index, config.model_id, usage, cost, {**metadata, "retryLater": len(retryable)})
        logger.warning("chunk will be retried", job_id=job_id, chunk=chunk_index, pages_pending=len(retryable), attempt=claimed["attempts"])
        raise ChunkRetryLater(f"{len(retryable)} page(s) of chunk {chunk_index} hit retryable errors; retrying the chunk")

    ordered = [results[n] for n in span.page_numbers()]
    result_key = keys.chunk_result_key(job_id, chunk_index)
    svc.store.put_json(result_key, {"jobId": job_id, "chunkIndex": chunk_index, "pages": [r.to_json() for r in ordered]})
    failed = sum(1 for r in ordered if r.status == "failed")
    served_batch = sum(1 for r in ordered if r.served_by == "batch")
    with svc.db.transaction() as tx:
        ledger.add_chunk_cost(
            tx,
            job_id=job_id,
            chunk_index=chunk_index,
            model_id=config.model_id,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=cost,
            metadata={**metadata, "pagesBatchServed": served_batch, "primedMismatch": primed.mismatched if primed else 0},
        )
        completed = job_repo.complete_chunk(
            tx,
            job_id,
            chunk_index,
            worker_id,
            pages_done=len(ordered) - failed,
            pages_failed=failed,
            pages_batch=served_batch,
            cost_usd=cost,
            result_key=result_key,
        )
        if not completed:
            job_repo.add_chunk_spend(tx, job_id, chunk_index, cost)
    status = "completed" if completed else "aborted"
    logger.info("chunk done", job_id=job_id, chunk=chunk_index, status=status, pages=len(ordered), failed=failed, batch_served=served_batch, cost_usd=str(cost))
    return {"jobId": job_id, "chunkIndex": chunk_index, "status": status, "pagesFailed": failed, "pagesBatch": served_batch}


def _book(svc: Services, job_id: str, chunk_index: int, model_id: str, usage: Usage, cost: Decimal, metadata: dict[str, Any]) -> None:
    with svc.db.transaction() as tx:
        ledger.add_chunk_cost(
            tx, job_id=job_id, chunk_index=chunk_index, model_id=model_id, input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, cost_usd=cost, metadata=metadata
        )
        job_repo.add_chunk_spend(tx, job_id, chunk_index, cost)


def _load_partial(svc: Services, job_id: str, chunk_index: int) -> dict[int, PageResult]:
    try:
        data = svc.store.get_json(keys.chunk_partial_key(job_id, chunk_index))
    except NotFound:
        return {}
    kept = (PageResult.from_json(item) for item in data.get("pages", []))
    # Their spend was booked by the attempt that made them: count it as spent already.
    return {r.page_number: PageResult(r.page_number, r.status, r.markdown, r.reason, r.served_by, r.usage, Decimal(0)) for r in kept}
