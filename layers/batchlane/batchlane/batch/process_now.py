"""Process now: a job waiting for the batch lane goes on-demand at once; the lanes it shares with
other jobs keep running for them (a lane is stopped only when no member waits on it any more).

What happens per batch-row state: docs/module-notes.md "batchlane.batch.process_now".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from batchlane.batch.resume import leave_batch_lane
from batchlane.batch.stop import lane_state, stop_abandoned_lanes
from batchlane.domain import status as st
from batchlane.domain.errors import Conflict, NotFound
from batchlane.domain.status import JobStatus
from batchlane.observability import logger
from batchlane.ports import Services

PROCESS_NOW_REASON = "process_now"


@dataclass(frozen=True)
class ProcessNowOutcome:
    job_id: str
    file_id: str
    batch_row_state: str | None  # as the user found it
    action: str  # left_pool | left_batch_lane | left_to_recovery | flagged_while_splitting
    resumed: bool
    batch_stop_requested: bool = False
    status: str | None = None  # where the job is now; None: pending if resumed, else waiting_batch

    def to_json(self) -> dict[str, Any]:
        return {
            "jobId": self.job_id,
            "fileId": self.file_id,
            "batchRowState": self.batch_row_state,
            "action": self.action,
            "resumed": self.resumed,
            "status": self.status or ("pending" if self.resumed else "waiting_batch"),
            "batchStopRequested": self.batch_stop_requested,
        }


def process_now(svc: Services, job_id: str, *, reason: str = PROCESS_NOW_REASON) -> ProcessNowOutcome:
    """``reason``: process_now (the user), or deadline (the packer, in time for the job's deadline)."""
    with svc.uow() as uow:
        job = uow.jobs.lock_job(job_id)
        if job is None:
            raise NotFound(f"no job {job_id}", error_id="JOB_NOT_FOUND")
        file_id = str(job.file_id)
        if job.status == JobStatus.SPLITTING:
            uow.jobs.mark_process_now(job_id, only_if=JobStatus.SPLITTING)
            logger.info("process now flagged while splitting", job_id=job_id)
            return ProcessNowOutcome(job_id, file_id, None, "flagged_while_splitting", resumed=False, status=JobStatus.SPLITTING.value)
        if not st.leave_batch_lane().allows(job.status):
            raise Conflict(f"The job is {job.status}, not waiting for the batch lane.", error_id="NOT_BATCH_WAITING")
        found = lane_state(uow.lanes.lanes_of_job(job_id))
        outcome = uow.lanes.job_lane_outcome(job_id)
        if outcome.settled and outcome.lanes:
            # Between the last lane's close and the job's resume: the lane's Resume step, or the
            # stranded-job recovery, resumes it with its primed results.
            logger.info("process now left to recovery", job_id=job_id)
            return ProcessNowOutcome(job_id, file_id, "closed", "left_to_recovery", resumed=False)
        left = uow.lanes.leave_lanes(job_id)  # other members of a shared lane are not touched
        uow.lanes.leave_pool([job_id], reason=reason)
        for lane in left:
            if not uow.lanes.has_packed_members(lane.id):
                uow.lanes.set_reason(lane.lane_id, reason)  # why the lane ends early
        # chunks an earlier lane of this job collected keep their answers
        leave_batch_lane(uow, job_id, primed=bool(outcome.accepted), hold_hours=svc.settings.batchlane_on_demand_window_hours)
    stop_requested = stop_abandoned_lanes(svc, left, reason=reason)
    svc.workflows.start_conversion(job_id)
    action = "left_pool" if found is None else "left_batch_lane"
    logger.info("job processed now", job_id=job_id, batch_row=found, action=action, lanes_left=len(left), stop_requested=stop_requested)
    return ProcessNowOutcome(job_id, file_id, found, action, resumed=True, batch_stop_requested=stop_requested)
