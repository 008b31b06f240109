"""batch_stop: ask Bedrock to stop a submitted batch job (overdue wait, or no member waits on it any more)."""

from __future__ import annotations

from batchlane.observability import logger
from batchlane.ports import BatchJobAlreadyEnded, BatchJobsError, Services
from batchlane.rows import Lane


def stop_batch_job(svc: Services, lane_id: str, *, reason: str) -> bool:
    """Best effort: True when Bedrock accepted the stop (or the job was already ending)."""
    row = svc.uow().lanes.set_reason(lane_id, reason)
    if row is None or not row.bedrock_job_arn or row.state != "submitted":
        return False
    try:
        svc.batch_jobs.stop(row.arn)
        logger.info("batch job stop requested", lane_id=lane_id, reason=reason)
        return True
    except BatchJobsError as exc:
        logger.info("batch job stop not accepted", lane_id=lane_id, code=exc.code, error_message=exc.message)
        return isinstance(exc, BatchJobAlreadyEnded)  # already terminal: nothing left to stop


def lane_state(lanes: list[Lane]) -> str | None:
    """The job's batch state as a user sees it: its most active lane's (preparing, submitted, stopping, closed)."""
    order = ("preparing", "submitted", "stopping", "closed")
    states = [lane.state for lane in lanes]
    return next((s for s in order if s in states), None)


def stop_abandoned_lanes(svc: Services, lanes: list[Lane], *, reason: str) -> bool:
    """Stop each submitted lane no member waits on any more (a shared one keeps running for the others).
    True when a stop was requested and accepted."""
    stopped, waiting_on = False, svc.uow().lanes.has_packed_members
    for lane in lanes:
        if lane.state == "submitted" and not waiting_on(lane.id):
            stopped = stop_batch_job(svc, lane.lane_id, reason=reason) or stopped
    return stopped
