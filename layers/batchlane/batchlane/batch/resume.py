"""Resume: a parked job goes back to pending in ONE transaction and its conversion starts.

Everything it needs is read from the closed batch row (accepted count, cost), not passed
through the workflow, so the batch-lane execution, the stranded-job recovery and
anything else that finds a closed row resume a job the same way, and at most once.
"""

from __future__ import annotations

from typing import Any

from batchlane.batch import rows
from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.observability import logger
from batchlane.runtime import Services


def resume_job(svc: Services, job_id: str) -> dict[str, Any]:
    with svc.db.transaction() as tx:
        job = job_repo.lock_job(tx, job_id)
        if job is None or job["status"] != "waiting_batch":
            return {"resumed": False, "status": job["status"] if job else None}
        row = rows.get_row(tx, job_id)
        # stopping: the lane gave up on a Bedrock job still running; the job goes on-demand
        # now and its bill follows at the terminal status (collect.settle_stopping).
        if row is None or row["state"] not in ("closed", "stopping"):
            return {"resumed": False, "status": "waiting_batch", "why": "batch row still open"}
        options = dict(job["options"] or {})
        options.pop("_batchPrimed", None)
        primed = row["state"] == "closed" and (row["accepted_count"] or 0) > 0
        if primed:
            options["_batchPrimed"] = True
        options["_batchCostUsd"] = str(row["cost_usd"] or "0")
        tx.run(
            """UPDATE large_conversion_jobs SET status = 'pending', options = CAST(:options AS jsonb), updated_at = now()
               WHERE id = CAST(:id AS uuid) AND status = 'waiting_batch'""",
            id=job_id,
            options=options,
        )
        job_repo.set_chunks_status(tx, job_id, from_statuses=("waiting_batch",), to_status="pending")
        rows.stamp(tx, job_id, "resumed_at")
        ledger.extend_hold(tx, job_id, hours=svc.settings.batchlane_on_demand_window_hours)
    svc.workflows.start_conversion(job_id)
    logger.info("job resumed", job_id=job_id, primed=primed, batch_end_state=row["end_state"], batch_cost_usd=options["_batchCostUsd"])
    return {"resumed": True, "primed": primed, "batchCostUsd": options["_batchCostUsd"]}


def resume_stranded(svc: Services, *, older_than_s: float = 60.0) -> dict[str, Any]:
    """Jobs still waiting_batch whose batch row closed (or went stopping) a while ago: resume them (primed if they can be)."""
    stranded = svc.db.run(
        """SELECT j.id FROM large_conversion_jobs j JOIN conversion_batch_jobs b ON b.job_id = j.id
           WHERE j.status = 'waiting_batch' AND b.state IN ('closed', 'stopping')
             AND COALESCE(b.closed_at, b.updated_at) < now() - make_interval(secs => :secs)""",
        secs=older_than_s / svc.settings.batchlane_time_scale,
    )
    resumed = [str(r["id"]) for r in stranded if resume_job(svc, str(r["id"]))["resumed"]]
    if resumed:
        logger.warning("stranded jobs resumed", count=len(resumed))
    return {"resumed": resumed}
