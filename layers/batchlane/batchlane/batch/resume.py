"""Resume: a parked job goes back to pending in ONE transaction and its conversion starts.

A job may ride in several lanes (a big document split over Bedrock jobs): it resumes when the
last of them is done. Everything it needs is read from the database (its members' accepted
counts, its batch shares), not passed through the workflow, so each lane's execution, the
stranded-job recovery and anything else resume a job the same way, and at most once.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from batchlane.domain import status as st
from batchlane.domain.status import Entity, JobStatus, LaneState
from batchlane.observability import logger
from batchlane.ports import Services, UnitOfWork


def leave_batch_lane(uow: UnitOfWork, job_id: str, *, primed: bool, hold_hours: float, batch_cost_usd: Decimal | None = None) -> bool:
    """The one resume transaction (the lane's resume, process now; call it inside ``with uow:``): job and
    chunks waiting_batch → pending, ``primed`` when a lane's accepted answers wait for its chunks, with what
    its lanes cost (when given), the funds hold back to the on-demand window and down to what it has spent. False if the job was not parked."""
    state: dict[str, Any] = {"batch_primed": primed} if batch_cost_usd is None else {"batch_primed": primed, "batch_cost_usd": batch_cost_usd}
    if uow.jobs.move_job(job_id, st.leave_batch_lane(), **state) is None:
        return False
    uow.jobs.move_chunks(job_id, st.leave_batch_lane(Entity.CHUNK))
    uow.ledger.extend_hold(job_id, hours=hold_hours)
    uow.budgets.trim_hold(job_id)  # its batch records are billed (or never sent): nothing in flight; chunk starts grow it again
    return True


def resume_job(svc: Services, job_id: str) -> dict[str, Any]:
    """Resume a parked job once no lane carries it any more and the pool has nothing more for it:
    primed where a lane brought usable answers for its chunks, the rest on-demand."""
    with svc.uow() as uow:
        job = uow.jobs.lock_job(job_id)
        if job is None or not st.leave_batch_lane().allows(job.status):
            return {"resumed": False, "status": job.status if job else None}
        outcome = uow.lanes.job_lane_outcome(job_id)
        if not outcome.settled:
            return {"resumed": False, "status": JobStatus.WAITING_BATCH.value, "why": "still in the pool or a lane"}
        primed = outcome.accepted > 0
        cost = uow.ledger.batch_cost_of_job(job_id)
        leave_batch_lane(uow, job_id, primed=primed, batch_cost_usd=cost, hold_hours=svc.settings.batchlane_on_demand_window_hours)
    svc.workflows.start_conversion(job_id)
    logger.info("job resumed", job_id=job_id, primed=primed, lanes=outcome.lanes, accepted=outcome.accepted, batch_cost_usd=str(cost))
    return {"resumed": True, "primed": primed, "batchCostUsd": str(cost)}


def resume_members(svc: Services, lane_id: str) -> dict[str, Any]:
    """The lane's last step: resume every member job it was the last to carry (the others wait on theirs)."""
    lanes = svc.uow().lanes
    row = lanes.get_row(lane_id)
    if row is None:
        return {"resumed": 0, "members": 0}
    jobs = lanes.member_job_ids(row.id) or ([row.job_id] if row.job_id else [])
    resumed = [job_id for job_id in jobs if resume_job(svc, job_id)["resumed"]]
    if row.state == LaneState.CLOSED:
        lanes.stamp(lane_id, "resumed_at")
    return {"resumed": len(resumed), "members": len(jobs)}


def resume_stranded(svc: Services, *, older_than_s: float = 60.0) -> dict[str, Any]:
    """Jobs still waiting_batch that no lane carries and the pool has let go (or fully packed), for a while: resume them."""
    stranded = svc.uow().lanes.stranded_job_ids(older_than_s=older_than_s / svc.settings.batchlane_time_scale)
    resumed = [job_id for job_id in stranded if resume_job(svc, job_id)["resumed"]]
    if resumed:
        logger.warning("stranded jobs resumed", count=len(resumed))
    return {"resumed": resumed}
