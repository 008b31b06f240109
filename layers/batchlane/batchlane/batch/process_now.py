"""Process now: a job waiting for the batch lane goes on-demand; the lanes it shares with other jobs keep
running for them (a lane is stopped only when no member waits on it any more).

A Bedrock job that carries this job alone and is already running is stopped, and the job waits for it to
end: Bedrock bills every record it processed, so those answers are collected and used, and only the pages
it did not reach go on-demand (issue 38.2: paying twice for them was the loss). What happens per batch-row
state: docs/module-notes.md "batchlane.batch.process_now".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from batchlane.batch.resume import leave_batch_lane
from batchlane.batch.stop import lane_state, stop_abandoned_lanes, stop_batch_job
from batchlane.domain import status as st
from batchlane.domain.errors import Conflict, NotFound
from batchlane.domain.status import JobStatus
from batchlane.observability import logger
from batchlane.ports import LaneRepository, Services
from batchlane.rows import Lane

PROCESS_NOW_REASON = "process_now"


@dataclass(frozen=True)
class ProcessNowOutcome:
    job_id: str
    file_id: str
    lane_state: str | None  # as the user found it
    action: str  # left_pool | left_batch_lane | stopping_batch_job | left_to_recovery | flagged_while_splitting
    resumed: bool
    batch_stop_requested: bool = False
    status: str | None = None  # where the job is now; None: pending if resumed, else waiting_batch

    def to_json(self) -> dict[str, Any]:
        return {
            "jobId": self.job_id,
            "fileId": self.file_id,
            "laneState": self.lane_state,
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
        own = own_running_lanes(uow.lanes, job_id)  # stopped and collected: what they processed is paid for either way
        left = uow.lanes.leave_lanes(job_id, keep=[lane.id for lane in own])  # other members of a shared lane are not touched
        uow.lanes.leave_pool([job_id], reason=reason)
        for lane in [*left, *own]:
            if not uow.lanes.has_packed_members(lane.id) or lane in own:
                uow.lanes.set_reason(lane.lane_id, reason)  # why the lane ends early
        if not own:  # chunks an earlier lane of this job collected keep their answers
            leave_batch_lane(uow, job_id, primed=bool(outcome.accepted), hold_hours=svc.settings.batchlane_on_demand_window_hours)
    stop_requested = stop_abandoned_lanes(svc, left, reason=reason)
    if own:
        # The job stays parked: each stopped lane's Collect keeps what Bedrock processed and its Resume sends the rest on-demand.
        stopping = [stop_batch_job(svc, lane.lane_id, reason=reason) for lane in own]
        logger.info("job processed now: its running batch job stops first", job_id=job_id, lanes=[lane.lane_id for lane in own], stop_requested=stopping)
        return ProcessNowOutcome(job_id, file_id, found, "stopping_batch_job", resumed=False, batch_stop_requested=any(stopping) or stop_requested)
    svc.workflows.start_conversion(job_id)
    action = "left_pool" if found is None else "left_batch_lane"
    logger.info("job processed now", job_id=job_id, lane=found, action=action, lanes_left=len(left), stop_requested=stop_requested)
    return ProcessNowOutcome(job_id, file_id, found, action, resumed=True, batch_stop_requested=stop_requested)


def own_running_lanes(lanes: LaneRepository, job_id: str) -> list[Lane]:
    """The job's lanes whose Bedrock job is running and waited on by this job alone: stopping one costs no other job anything."""
    return [
        lane
        for lane in lanes.lanes_of_job(job_id)
        if lane.state == "submitted" and (packed := lanes.members(lane.id, state="packed")) and all(m.job_id == job_id for m in packed)
    ]
