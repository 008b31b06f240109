"""The claimer: parked jobs → batch rows and batch-lane executions, under the concurrent-job quota.

Runs on the "job parked" event and every minute as a safety net. Parked jobs are taken in
turns by owner (db/batch_rows.claimable_jobs), so one user's many jobs never hold back another's one. Claiming is serialised
by a transaction-level advisory lock, so two claimers never overshoot the quota; the
execution is started after the commit, named after the job, so a repeat start (this
run's or the next one's, for a row whose start failed) is harmless.
"""

from __future__ import annotations

from typing import Any

from batchlane.db import batch_rows as rows
from batchlane.db import ledger
from batchlane.observability import logger
from batchlane.runtime import Services


def claim_parked_jobs(svc: Services) -> dict[str, Any]:
    settings = svc.settings
    if not settings.batch_lane_configured:
        return {"claimed": [], "reason": "lane_off"}
    quota = settings.batch_conversion_max_concurrent_jobs
    wait_hours = settings.batch_deadline_hours
    claimed: list[str] = []
    with svc.db.transaction() as tx:
        rows.lock_claims(tx)
        parked = rows.claimable_jobs(tx)  # round robin by owner, not creation order across users
        in_flight: dict[str, int] = {}
        for job in parked:
            model = job.model_id
            if model not in in_flight:
                in_flight[model] = rows.count_in_flight(tx, model)
            if in_flight[model] >= quota:
                continue
            job_id = job.job_id
            if rows.insert_preparing(tx, job_id=job_id, model_id=model, deadline_hours=wait_hours) is None:
                continue
            in_flight[model] += 1
            ledger.extend_hold(tx, job_id, hours=wait_hours + settings.batchlane_on_demand_window_hours)
            claimed.append(job_id)
    # Start (or re-start: idempotent by name) every execution a preparing row should have.
    for job_id in rows.preparing_job_ids(svc.db):
        svc.workflows.start_batch_lane(job_id)
    if claimed:
        logger.info("parked jobs claimed", claimed=len(claimed), waiting=len(parked) - len(claimed))
    return {"claimed": claimed, "waiting": len(parked) - len(claimed)}
