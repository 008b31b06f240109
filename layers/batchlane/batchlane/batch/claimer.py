"""The claimer: parked jobs → batch rows and batch-lane executions, under the concurrent-job quota.

Runs on the "job parked" event and every minute as a safety net. Parked jobs are taken in
turns by owner (db/fair_share.py), so one user's many jobs never hold back another's one. Claiming is serialised
by a transaction-level advisory lock, so two claimers never overshoot the quota; the
execution is started after the commit, named after the job, so a repeat start (this
run's or the next one's, for a row whose start failed) is harmless.
"""

from __future__ import annotations

from typing import Any

from batchlane.batch import rows
from batchlane.db import fair_share, ledger
from batchlane.observability import logger
from batchlane.runtime import Services

_CLAIM_LOCK = 7_357_202


def claim_parked_jobs(svc: Services) -> dict[str, Any]:
    settings = svc.settings
    if not settings.batch_lane_configured:
        return {"claimed": [], "reason": "lane_off"}
    quota = settings.batch_conversion_max_concurrent_jobs
    wait_hours = settings.batch_deadline_hours
    claimed: list[str] = []
    with svc.db.transaction() as tx:
        tx.run("SELECT pg_advisory_xact_lock(:key)", key=_CLAIM_LOCK)
        parked = fair_share.parked_jobs_in_turn(tx)  # round robin by owner, not creation order across users
        in_flight: dict[str, int] = {}
        for job in parked:
            model = job["model_id"]
            if model not in in_flight:
                in_flight[model] = rows.count_in_flight(tx, model)
            if in_flight[model] >= quota:
                continue
            job_id = str(job["id"])
            if rows.insert_preparing(tx, job_id=job_id, model_id=model, deadline_hours=wait_hours) is None:
                continue
            in_flight[model] += 1
            ledger.extend_hold(tx, job_id, hours=wait_hours + settings.batchlane_on_demand_window_hours)
            claimed.append(job_id)
    # Start (or re-start: idempotent by name) every execution a preparing row should have.
    preparing = svc.db.run(
        """SELECT b.job_id FROM conversion_batch_jobs b JOIN large_conversion_jobs j ON j.id = b.job_id
           WHERE b.state = 'preparing' AND j.status = 'waiting_batch'"""
    )
    for row in preparing:
        svc.workflows.start_batch_lane(str(row["job_id"]))
    if claimed:
        logger.info("parked jobs claimed", claimed=len(claimed), waiting=len(parked) - len(claimed))
    return {"claimed": claimed, "waiting": len(parked) - len(claimed)}
