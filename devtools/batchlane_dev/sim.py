"""A scale model: the real policies against a model of AWS's quotas, minutes at a time (docs/scale.md).

What is real: the packer's plan (``domain.pool.plan_pool``: record cap, pool window, minimum records,
and the packer's quota as ``slots``), the folder loop's admission cap (``batchlane_folder_max_in_flight``
documents of a folder job converting at once), the on-demand limiter's pace (``batchlane_ondemand_rpm``,
pages a request) and the prices (``PriceTable``, batch at half price). What is modelled: AWS's quotas
(``AwsModel``), Bedrock's batch turnaround (a fixed time per job), and per-document database work
(``DbModel``). The model steps a clock ``step_s`` at a time; nothing sleeps.
"""

from __future__ import annotations

import math
import time
from collections import Counter, deque
from dataclasses import asdict, dataclass, field
from typing import Any

from batchlane.config import Settings
from batchlane.domain.cost import PriceTable, Usage
from batchlane.domain.pool import PoolChunk, PoolPlan, plan_pool, read_budget


@dataclass(frozen=True)
class AwsModel:
    """AWS's quotas that a conversion meets, with the defaults AWS documents (an operator passes their own)."""

    batch_turnaround_h: float = 6.0  # AWS: "most jobs complete within 24 hours"; a few hours is what accounts see
    batch_concurrent_jobs: int = 10  # submitted + in-progress batch jobs per base model (the packer's quota)
    batch_max_records: int = 50_000  # records per batch job
    ondemand_rpm: float = 500.0  # Converse requests a minute for the model (account quota)
    lambda_concurrency: int = 1_000  # the account's concurrent executions (default 1,000)
    on_demand_request_s: float = 20.0  # one page request's latency (a chunk Lambda holds a slot this long)
    sfn_transitions_per_s: float = 5_000.0  # Standard workflows, state transitions refill rate (us-east-1)
    sfn_starts_per_s: float = 300.0  # StartExecution refill rate (us-east-1: bucket 1,300, refill 300/s)
    s3_puts_per_prefix_s: float = 3_500.0  # PUT/COPY/POST/DELETE per second per prefix
    rds_proxy_connections: int = 1_000  # connections the proxy holds to the database (max_connections × share)


@dataclass(frozen=True)
class DbModel:
    """Database work per unit, counted from the code paths (docs/scale.md "What is real and what is modelled"); an operator may pass measured ones."""

    rows_per_document: int = 6  # files, large_conversion_jobs, folder file, funds hold, 2 ledger rows (chunk + batch share)
    rows_per_chunk: int = 2  # chunk_jobs, batch_members
    statements_per_document: int = 40  # create, split, park, resume, settle, folder turn
    statements_per_chunk: int = 12  # claim, pages, results, close


@dataclass(frozen=True)
class Workload:
    documents: int = 1_000_000
    pages_per_document: int = 10
    owners: int = 1
    folders: int = 1  # documents come as this many folder jobs (0: single submissions, no folder cap)
    arrival_pages_per_hour: float = 0.0  # > 0: a steady stream for ``arrival_hours`` instead of one folder up front
    arrival_hours: float = 24.0
    fallback_share: float = 0.02  # batch records that come back on-demand (rejected, failed)
    input_tokens_per_page: int = 3_200  # ondemand_20_pages measured 3,199
    output_tokens_per_page: int = 700


@dataclass(slots=True)
class _Doc:
    folder: int
    owner: int
    pages: int
    arrived_s: float
    left: int = 0  # pages not served yet


@dataclass
class Result:
    scenario: str
    drained: bool
    hours_to_drain: float
    documents: int
    pages: int
    pages_batch: int
    pages_on_demand: int
    bedrock_jobs: int
    cost_usd: float
    all_on_demand_usd: float
    saving_pct: float
    binding: dict[str, str]  # stage → the quota or policy that held it back most often
    limited_minutes: dict[str, dict[str, int]]
    peaks: dict[str, float]
    db: dict[str, float]
    simulated_steps: int
    wall_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def simulate(
    workload: Workload,
    aws: AwsModel = AwsModel(),
    db: DbModel = DbModel(),
    settings: Settings | None = None,
    *,
    step_s: float = 60.0,
    horizon_h: float = 24 * 365,
) -> Result:
    """Run the workload to the end (every page served) or to ``horizon_h``."""
    started = time.perf_counter()
    settings = settings or Settings(batch_conversion_enabled=True, batch_conversion_s3_bucket="sim", batch_conversion_role_arn="arn:aws:iam::1:role/sim")
    model_id = settings.batchlane_model_id
    prices = PriceTable(settings.batchlane_prices)
    per_chunk = settings.batchlane_pages_per_chunk
    max_records = min(settings.batch_conversion_max_records, aws.batch_max_records)
    concurrent = min(settings.batch_conversion_max_concurrent_jobs, aws.batch_concurrent_jobs)
    folder_cap = settings.batchlane_folder_max_in_flight
    window_s = settings.batch_pool_window_minutes * 60
    pages_per_request = max(settings.batchlane_pages_per_request, 1)

    docs: list[_Doc] = []
    queued: dict[int, deque[int]] = {}  # folder → documents not admitted yet
    in_flight: Counter[int] = Counter()
    pool: dict[int, tuple[int, float]] = {}  # document → (pages, pooled at)
    running: list[tuple[float, list[PoolChunk]]] = []  # (ends at, members)
    on_demand: deque[tuple[int, int]] = deque()  # (document, pages)
    limited: dict[str, Counter[str]] = {s: Counter() for s in ("admission", "pool", "on_demand")}
    peaks: dict[str, float] = {"admitted_per_s": 0.0, "batch_jobs_running": 0.0, "pool_chunks": 0.0, "pool_chunks_read": 0.0, "on_demand_pages_per_s": 0.0}
    served_batch = served_od = jobs = done = 0
    finished: list[int] = []  # documents whose last page was served this step
    arrival = workload.arrival_pages_per_hour > 0
    total_docs = workload.documents
    if arrival:
        total_docs = math.ceil(workload.arrival_pages_per_hour * workload.arrival_hours / workload.pages_per_document)
    arrived = 0
    carry = owed = 0.0
    now = 0.0
    steps = 0
    while now < horizon_h * 3600:
        steps += 1
        # 1. arrivals: a folder up front, or a steady stream from the owners
        if arrival:
            carry += workload.arrival_pages_per_hour / workload.pages_per_document * step_s / 3600
            new = min(int(carry), total_docs - arrived)
            carry -= new
        else:
            new = total_docs - arrived
        for _ in range(new):
            owner = arrived % max(workload.owners, 1)
            folder = arrived % workload.folders if workload.folders else -1
            docs.append(_Doc(folder, owner, workload.pages_per_document, now, workload.pages_per_document))
            queued.setdefault(folder, deque()).append(arrived)
            arrived += 1
        # 2. admission: the folder loop's cap, and Step Functions' StartExecution rate (one intake execution a document)
        starts_left = aws.sfn_starts_per_s * step_s
        admitted = 0
        for folder, waiting in queued.items():
            while waiting:
                if folder >= 0 and in_flight[folder] >= folder_cap:
                    limited["admission"]["folder_max_in_flight"] += 1
                    break
                if starts_left < 1:
                    limited["admission"]["sfn_start_execution_rate"] += 1
                    break
                index = waiting.popleft()
                in_flight[folder] += 1
                starts_left -= 1
                admitted += 1
                pool[index] = (docs[index].pages, now)
        peaks["admitted_per_s"] = max(peaks["admitted_per_s"], admitted / step_s)
        # 3. the packer (every turn): the real plan, with the packer's quota as slots, over the prefix of the pool
        # a turn reads (db/lanes.PgLanes.read_pool: read_budget pages; the whole pool if that read is short)
        slots = concurrent - len(running)
        peaks["pool_chunks"] = max(peaks["pool_chunks"], sum(math.ceil(p / per_chunk) for p, _ in pool.values()))
        plan, read = _pack_turn(pool, now, per_chunk, slots, max_records, settings.batch_conversion_min_records, window_s)
        peaks["pool_chunks_read"] = max(peaks["pool_chunks_read"], read)
        for members in plan.bedrock_jobs:
            running.append((now + aws.batch_turnaround_h * 3600, members))
            jobs += 1
            for index in {int(c.job_id) for c in members}:
                pool.pop(index, None)
        for job_id in plan.leave:
            pages, _ = pool.pop(int(job_id))
            on_demand.append((int(job_id), pages))
        if plan.why_waiting:
            limited["pool"]["batch_concurrent_jobs" if plan.why_waiting == "quota" else "pool_window"] += 1
        peaks["batch_jobs_running"] = max(peaks["batch_jobs_running"], len(running))
        # 4. Bedrock jobs that end: their records served, the fallback share back on-demand
        ended = [r for r in running if r[0] <= now]
        running = [r for r in running if r[0] > now]
        for _, members in ended:
            for chunk in members:
                owed += chunk.pages * workload.fallback_share  # the share, carried across chunks (a chunk's share is a fraction of a page)
                back = min(int(owed), chunk.pages)
                owed -= back
                served_batch += chunk.pages - back
                doc = docs[int(chunk.job_id)]
                doc.left -= chunk.pages - back
                if doc.left <= 0:
                    finished.append(int(chunk.job_id))
                if back:
                    on_demand.append((int(chunk.job_id), back))
        # 5. on-demand: the limiter's pace, Lambda concurrency (a request holds a chunk Lambda), RDS Proxy connections
        by_rpm = aws.ondemand_rpm * step_s / 60 * pages_per_request
        by_lambda = min(aws.lambda_concurrency, aws.rds_proxy_connections) * step_s / aws.on_demand_request_s * pages_per_request
        budget = min(by_rpm, by_lambda)
        used = 0.0
        while on_demand and used < budget:
            index, pages = on_demand[0]
            take = int(min(pages, budget - used)) or pages
            used += take
            served_od += take
            docs[index].left -= take
            if docs[index].left <= 0:
                finished.append(index)
            if take >= pages:
                on_demand.popleft()
            else:
                on_demand[0] = (index, pages - take)
        if on_demand:  # pages left after the step's capacity was used: that capacity bound
            limited["on_demand"]["ondemand_rpm" if by_rpm <= by_lambda else "lambda_or_proxy_concurrency"] += 1
        peaks["on_demand_pages_per_s"] = max(peaks["on_demand_pages_per_s"], used / step_s)
        # 6. documents whose every page is served leave the folder's in-flight count
        for index in finished:
            doc = docs[index]
            if doc.pages > 0:
                doc.pages = 0  # finished: counted once
                in_flight[doc.folder] -= 1
                done += 1
        finished.clear()
        now += step_s
        if arrived == total_docs and done == total_docs:
            break
    pages_total = total_docs * workload.pages_per_document
    per_page = Usage(workload.input_tokens_per_page, workload.output_tokens_per_page)
    page_cost = float(prices.cost(model_id, per_page))
    cost = served_batch * page_cost * 0.5 + served_od * page_cost
    all_od = (served_batch + served_od) * page_cost  # what the pages served so far would have cost on-demand
    hours = now / 3600
    chunks_total = total_docs * math.ceil(workload.pages_per_document / per_chunk)
    statements = total_docs * db.statements_per_document + chunks_total * db.statements_per_chunk
    binding = {stage: (counts.most_common(1)[0][0] if counts else "none") for stage, counts in limited.items()}
    result = Result(
        scenario="stream" if arrival else "folder",
        drained=done == total_docs,
        hours_to_drain=round(hours, 2),
        documents=total_docs,
        pages=pages_total,
        pages_batch=served_batch,
        pages_on_demand=served_od,
        bedrock_jobs=jobs,
        cost_usd=round(cost, 2),
        all_on_demand_usd=round(all_od, 2),
        saving_pct=round((1 - cost / all_od) * 100, 2) if all_od else 0.0,
        binding=binding,
        limited_minutes={stage: {k: int(v * step_s / 60) for k, v in counts.items()} for stage, counts in limited.items()},
        peaks={k: round(v, 3) for k, v in peaks.items()},
        db={
            "rows": total_docs * db.rows_per_document + chunks_total * db.rows_per_chunk,
            "statements": statements,
            "statements_per_s_mean": round(statements / max(now, 1), 2),
            "statements_per_s_peak_admission": round(peaks["admitted_per_s"] * db.statements_per_document, 2),
        },
        simulated_steps=steps,
    )
    result.notes = _notes(result, aws, settings, folder_cap)
    result.wall_s = round(time.perf_counter() - started, 3)
    return result


def _pack_turn(
    pool: dict[int, tuple[int, float]], now: float, per_chunk: int, slots: int, max_records: int, min_records: int, window_s: float
) -> tuple[PoolPlan, int]:
    """The packer's turn over the pool (documents in arrival order, each cut in chunks): the plan, and the chunks read."""
    smallest = min((min(per_chunk, pages % per_chunk or per_chunk) for pages, _ in pool.values()), default=1)

    def read(limit: float) -> tuple[list[PoolChunk], bool]:
        chunks: list[PoolChunk] = []
        before = 0
        for index, (pages, since) in pool.items():
            for c in range(math.ceil(pages / per_chunk)):
                if before >= limit:
                    return chunks, True
                size = min(per_chunk, pages - c * per_chunk)
                chunks.append(PoolChunk(str(index), c, size, now - since))
                before += size
        return chunks, False

    for attempt in (0, 1):
        chunks, truncated = read(read_budget(slots, max_records, attempt=attempt))
        plan = plan_pool(
            chunks, max_records=max_records, min_records=min_records, window_s=window_s, slots=slots, truncated=truncated, smallest=smallest, lightest=0
        )
        if not plan.short:
            return plan, len(chunks)
    chunks, _ = read(math.inf)
    return plan_pool(chunks, max_records=max_records, min_records=min_records, window_s=window_s, slots=slots), len(chunks)


def _notes(result: Result, aws: AwsModel, settings: Settings, folder_cap: int) -> list[str]:
    notes = []
    if result.binding["admission"] == "folder_max_in_flight":
        notes.append(
            f"the folder loop admits {folder_cap} documents of a folder job at once and a batch-lane document holds its place for a whole "
            f"batch turnaround ({aws.batch_turnaround_h} h): raise BATCHLANE_FOLDER_MAX_IN_FLIGHT, or count pooled documents outside the cap"
        )
    if result.binding["pool"] == "batch_concurrent_jobs":
        notes.append("Bedrock's concurrent batch jobs per model binds: ask AWS to raise it, or spread over models / Regions")
    if not result.drained:
        notes.append("did not drain within the horizon")
    return notes


def ideal_hours(workload: Workload, aws: AwsModel) -> float:
    """The floor the batch quotas alone set: every page in full jobs, all concurrent slots busy."""
    pages = workload.documents * workload.pages_per_document
    if workload.arrival_pages_per_hour > 0:
        return workload.arrival_hours
    return math.ceil(pages / (aws.batch_max_records * aws.batch_concurrent_jobs)) * aws.batch_turnaround_h
