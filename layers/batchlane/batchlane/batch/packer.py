"""The packer: the pool's waiting chunks → lanes (Bedrock jobs) and their batch-lane executions.

Runs on the "job parked" event and every minute as a safety net. Under a transaction-level
advisory lock (two packers never overshoot the quota or pack a chunk twice) it reads the
chunks waiting in the pool, per model and in fair order (LaneRepository.read_pool: owners in
turns) as far as one turn can pack (domain/pool.read_budget: a turn does not grow with the backlog), asks the packing rule (domain/pool.plan_pool) what to do, and in the same transaction
inserts each new lane with its members, and lets go of the jobs whose window passed with too
few records for a Bedrock job. After the commit it starts one execution per preparing lane,
named after the lane, so a repeat start (this run's or the next one's) is harmless, and
resumes the jobs it let go (on-demand) at once; the stranded-job recovery is the net under
that. It is the one function allowed to start both lanes (tests/infra
test_no_function_may_start_both_lanes_but_the_packer): the choice per job is made in one
transaction, packed or let go, never both. It also sends on-demand, as process now does,
the parked jobs whose ``deadline`` option is near.
"""

from __future__ import annotations

import uuid
from itertools import groupby
from typing import Any

from batchlane.batch.process_now import process_now
from batchlane.batch.resume import resume_job
from batchlane.domain.errors import Conflict
from batchlane.domain.folder_policy import DEADLINE
from batchlane.domain.limits import estimated_record_bytes, quota_bytes
from batchlane.domain.pool import PoolChunk, PoolPlan, base_model_id, by_base_model, plan_pool, read_budget
from batchlane.observability import logger
from batchlane.ports import LaneRepository, Services
from batchlane.rows import PoolRead

POOL_TOO_SMALL = "pool_too_small"


def pack_pool(svc: Services) -> dict[str, Any]:
    """Pack the pool into lanes, let go of what the window passed, and send on-demand the jobs whose deadline is near."""
    settings = svc.settings
    if not settings.batch_lane_configured:
        return {"claimed": [], "lanes": [], "reason": "lane_off"}
    due = leave_for_deadlines(svc)
    wait_hours = settings.batch_deadline_hours
    lanes: list[dict[str, Any]] = []
    let_go: list[str] = []
    waiting = 0
    with svc.uow() as uow:
        uow.lanes.lock_claims()
        uow.lanes.note_pooled(window_s=settings.batch_pool_window_s)
        for model, plan in plan_turn(uow.lanes, settings):
            for packed in plan.bedrock_jobs:
                lane_id = str(uuid.uuid4())
                uow.lanes.insert_lane(lane_id=lane_id, model_id=model, deadline_hours=wait_hours, chunks=[(c.job_id, c.chunk_index, c.pages) for c in packed])
                jobs = sorted({c.job_id for c in packed})
                for job_id in jobs:
                    uow.ledger.extend_hold(job_id, hours=wait_hours + settings.batchlane_on_demand_window_hours)
                lanes.append({"laneId": lane_id, "modelId": model, "jobs": jobs, "pages": sum(c.pages for c in packed)})
            let_go.extend(uow.lanes.leave_pool(plan.leave, reason=POOL_TOO_SMALL))
            waiting += plan.waiting_chunks
            if plan.why_waiting:
                logger.info("pool waiting", model_id=model, base_model=base_model_id(model), chunks=plan.waiting_chunks, pages=plan.waiting_pages, why=plan.why_waiting)
    # Start (or re-start: idempotent by name) every execution a preparing lane should have.
    repo = svc.uow().lanes
    for lane_id, row_id in repo.preparing_lanes():
        svc.workflows.start_batch_lane(lane_id, repo.member_job_ids(row_id))
    resumed = [job_id for job_id in let_go if resume_job(svc, job_id)["resumed"]]
    if lanes or let_go:
        logger.info("pool packed", lanes=len(lanes), let_go=len(let_go), resumed=len(resumed), waiting_chunks=waiting)
    claimed = sorted({j for lane in lanes for j in lane["jobs"]})
    return {"claimed": claimed, "lanes": lanes, "letGo": let_go, "deadline": due, "waiting": waiting}


def plan_turn(lanes: LaneRepository, settings: Any, *, bounded: bool = True) -> list[tuple[str, PoolPlan]]:
    """Read the pool and plan each model's part of it: (model, plan), in model order.

    Bounded (the packer): each model's read stops at what this turn can pack (domain/pool.read_budget of
    the slots its base model has free), so a turn's rows, locks and packing do not grow with the backlog;
    if a truncated read fills fewer slots than are free (mixed chunk sizes left jobs open, rare), it is
    read again with the larger budget, then whole. Unbounded: the whole pool, every turn (what the packer
    did before; tests compare the two)."""
    quota = settings.batch_conversion_max_concurrent_jobs
    max_records = settings.batch_conversion_max_records
    per_model = lanes.in_flight_by_model()
    start = by_base_model(per_model)
    if bounded:  # a profile whose base model has lanes only under another profile reads the default: more than it needs
        for attempt in (0, 1):
            budgets = {m: read_budget(quota - start.get(base_model_id(m), 0), max_records, attempt=attempt) for m in per_model}
            plans = _plans(lanes.read_pool(budgets=budgets, default_budget=read_budget(quota, max_records, attempt=attempt)), start, settings)
            if not any(plan.short for _, plan in plans):
                return plans
    return _plans(lanes.read_pool(), start, settings)


def _plans(read: PoolRead, in_flight: dict[str, int], settings: Any) -> list[tuple[str, PoolPlan]]:
    in_flight = dict(in_flight)  # one quota per base model, whichever profile a lane uses
    plans = []
    for model, group in groupby(read.chunks, key=lambda c: c.model_id):
        chunks = [PoolChunk(c.job_id, c.chunk_index, c.pages, c.waited_s, estimated_record_bytes(c.source_bytes, c.pages)) for c in group]
        base = base_model_id(model)
        plan = plan_pool(
            chunks,
            max_records=settings.batch_conversion_max_records,
            min_records=settings.batch_conversion_min_records,
            window_s=settings.batch_pool_window_s,
            slots=max(0, settings.batch_conversion_max_concurrent_jobs - in_flight.get(base, 0)),
            max_bytes=quota_bytes(settings.batch_conversion_max_job_mb),  # "Batch inference job size" (GB: 10**9)
            truncated=read.truncated.get(model, False),
            smallest=read.smallest.get(model),
            lightest=read.lightest.get(model),
        )
        in_flight[base] = in_flight.get(base, 0) + len(plan.bedrock_jobs)
        plans.append((model, plan))
    return plans


def leave_for_deadlines(svc: Services) -> list[str]:
    """Parked jobs whose deadline is near go on-demand now, wherever they wait (the pool or a lane: a
    shared Bedrock job keeps running for its other members): what process now does, reason deadline."""
    moved = []
    for job_id in svc.uow().jobs.jobs_due(margin_s=svc.settings.batch_deadline_margin_s):
        try:
            if process_now(svc, job_id, reason=DEADLINE).resumed:
                moved.append(job_id)
        except Conflict:
            continue  # it left the lane meanwhile
    if moved:
        logger.info("jobs left the batch lane for their deadline", jobs=len(moved))
    return moved
