"""Resume: a parked job goes back to pending in ONE transaction and its conversion starts.

Everything it needs is read from the closed batch row (accepted count, cost), not passed
through the workflow, so the batch-lane execution, the stranded-job recovery and
anything else that finds a closed row resume a job the same way, and at most once.
"""

from __future__ import annotations

from typing import Any

from batchlane.db import batch_rows as rows
from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.db.jobs import Runner
from batchlane.domain import status as st
from batchlane.domain.status import BatchRowState, Entity, JobStatus
from batchlane.observability import logger
from batchlane.runtime import Services


def leave_batch_lane(tx: Runner, job_id: str, *, options: dict[str, Any], hold_hours: float) -> bool:
    """The one resume transaction (the lane's resume, process now): job and chunks waiting_batch →
    pending with ``options``, the funds hold back to the on-demand window. False if the job was not parked."""
    if job_repo.move_job(tx, job_id, st.leave_batch_lane(), options=options) is None:
        return False
    job_repo.move_chunks(tx, job_id, st.leave_batch_lane(Entity.CHUNK))
    ledger.extend_hold(tx, job_id, hours=hold_hours)
    return True


def resume_job(svc: Services, job_id: str) -> dict[str, Any]:
    with svc.db.transaction() as tx:
        job = job_repo.lock_job(tx, job_id)
        if job is None or not st.leave_batch_lane().allows(job.status):
            return {"resumed": False, "status": job.status if job else None}
        row = rows.get_row(tx, job_id)
        # stopping: the lane gave up on a Bedrock job still running; the job goes on-demand
        # now and its bill follows at the terminal status (collect.settle_stopping).
        if row is None or row.state not in (BatchRowState.CLOSED, BatchRowState.STOPPING):
            return {"resumed": False, "status": JobStatus.WAITING_BATCH.value, "why": "batch row still open"}
        options = dict(job.options or {})
        options.pop("_batchPrimed", None)
        primed = row.state == BatchRowState.CLOSED and (row.accepted_count or 0) > 0
        if primed:
            options["_batchPrimed"] = True
        options["_batchCostUsd"] = str(row.cost_usd or "0")
        leave_batch_lane(tx, job_id, options=options, hold_hours=svc.settings.batchlane_on_demand_window_hours)
        rows.stamp(tx, job_id, "resumed_at")
    svc.workflows.start_conversion(job_id)
    logger.info("job resumed", job_id=job_id, primed=primed, batch_end_state=row.end_state, batch_cost_usd=options["_batchCostUsd"])
    return {"resumed": True, "primed": primed, "batchCostUsd": options["_batchCostUsd"]}


def resume_stranded(svc: Services, *, older_than_s: float = 60.0) -> dict[str, Any]:
    """Jobs still waiting_batch whose batch row closed (or went stopping) a while ago: resume them (primed if they can be)."""
    stranded = rows.stranded_job_ids(svc.db, older_than_s=older_than_s / svc.settings.batchlane_time_scale)
    resumed = [job_id for job_id in stranded if resume_job(svc, job_id)["resumed"]]
    if resumed:
        logger.warning("stranded jobs resumed", count=len(resumed))
    return {"resumed": resumed}
