"""The packer: the pool's waiting chunks → lanes (Bedrock jobs) and their batch-lane executions.

Runs on the "job parked" event and every minute as a safety net. Under a transaction-level
advisory lock (two packers never overshoot the quota or pack a chunk twice) it reads every
chunk waiting in the pool, per model and in fair order (db/batch_rows.pool_chunks: owners in
turns), asks the packing rule (domain/pool.plan_pool) what to do, and in the same transaction
inserts each new lane with its members, and lets go of the jobs whose window passed with too
few records for a Bedrock job. After the commit it starts one execution per preparing lane,
named after the lane, so a repeat start (this run's or the next one's) is harmless.

The jobs it lets go are resumed (on-demand) by the stranded-job recovery (batch/resume.py
resume_stranded), not here: the claimer may start batch-lane executions only, never a
conversion (topology.py; tests/infra test_no_function_may_start_both_lanes).
"""

from __future__ import annotations

import uuid
from itertools import groupby
from typing import Any

from batchlane.db import batch_rows as rows
from batchlane.db import ledger
from batchlane.domain.pool import PoolChunk, plan_pool
from batchlane.observability import logger
from batchlane.runtime import Services

POOL_TOO_SMALL = "pool_too_small"


def claim_parked_jobs(svc: Services) -> dict[str, Any]:
    """Pack the pool (the claimer's old name is kept: the function, its schedule and its event rule)."""
    settings = svc.settings
    if not settings.batch_lane_configured:
        return {"claimed": [], "lanes": [], "reason": "lane_off"}
    quota = settings.batch_conversion_max_concurrent_jobs
    wait_hours = settings.batch_deadline_hours
    lanes: list[dict[str, Any]] = []
    let_go: list[str] = []
    waiting = 0
    with svc.db.transaction() as tx:
        rows.lock_claims(tx)
        rows.note_pooled(tx)
        pool = rows.pool_chunks(tx)
        for model, group in groupby(pool, key=lambda c: c.model_id):
            chunks = [PoolChunk(c.job_id, c.chunk_index, c.pages, c.waited_s) for c in group]
            slots = max(0, quota - rows.count_in_flight(tx, model))
            plan = plan_pool(
                chunks,
                max_records=settings.batch_conversion_max_records,
                min_records=settings.batch_conversion_min_records,
                window_s=settings.batch_pool_window_s,
                slots=slots,
            )
            for packed in plan.bedrock_jobs:
                lane_id = str(uuid.uuid4())
                rows.insert_lane(tx, lane_id=lane_id, model_id=model, deadline_hours=wait_hours, chunks=[(c.job_id, c.chunk_index, c.pages) for c in packed])
                jobs = sorted({c.job_id for c in packed})
                for job_id in jobs:
                    ledger.extend_hold(tx, job_id, hours=wait_hours + settings.batchlane_on_demand_window_hours)
                lanes.append({"laneId": lane_id, "modelId": model, "jobs": jobs, "pages": sum(c.pages for c in packed)})
            let_go.extend(rows.leave_pool(tx, plan.leave, reason=POOL_TOO_SMALL))
            waiting += plan.waiting_chunks
            if plan.why_waiting:
                logger.info("pool waiting", model_id=model, chunks=plan.waiting_chunks, pages=plan.waiting_pages, why=plan.why_waiting)
    # Start (or re-start: idempotent by name) every execution a preparing lane should have.
    for lane_id, row_id in rows.preparing_lanes(svc.db):
        svc.workflows.start_batch_lane(lane_id, rows.member_job_ids(svc.db, row_id))
    if lanes or let_go:
        logger.info("pool packed", lanes=len(lanes), let_go=len(let_go), waiting_chunks=waiting)
    return {"claimed": sorted({j for lane in lanes for j in lane.get("jobs", [])}), "lanes": lanes, "letGo": let_go, "waiting": waiting}
