"""Cancel: the job stops, nothing more is spent, the file can be converted again.

What it spent until then (the calls answered, the records a stopped batch job processed) is its cost: its
total follows the ledger, as the owner's budget counts it (issue 38.2; before, a cancelled job said $0 while
its ledger rows counted against the budget). Bookings that land after the cancel (a running chunk's last
requests, a stopped batch job's bill) update it (db/ledger.carry_late_batch_cost).

The answer per job status and what the one transaction does: docs/module-notes.md "batchlane.operations.cancel".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from batchlane.batch.stop import lane_state, stop_abandoned_lanes
from batchlane.domain import status as st
from batchlane.domain.errors import Conflict, NotFound
from batchlane.domain.status import Entity, JobStatus
from batchlane.filejob.retry import end_retry
from batchlane.observability import logger
from batchlane.ports import Services
from batchlane.webhooks.events import publish_job_change

CANCEL_REASON = "cancelled"


@dataclass(frozen=True)
class CancelOutcome:
    job_id: str
    file_id: str
    previous_status: str
    already: bool = False
    hold_released: bool = False
    chunks_cancelled: int = 0
    lane_state: str | None = None
    batch_stop_requested: bool = False
    retry_cancelled: int | None = None  # the retry cancelled (the job itself stays completed)

    def to_json(self) -> dict[str, Any]:
        return {
            "jobId": self.job_id,
            "fileId": self.file_id,
            "status": "completed" if self.retry_cancelled else "cancelled",
            "retryCancelled": self.retry_cancelled,
            "previousStatus": self.previous_status,
            "alreadyCancelled": self.already,
            "holdReleased": self.hold_released,
            "chunksCancelled": self.chunks_cancelled,
            "laneState": self.lane_state,
            "batchStopRequested": self.batch_stop_requested,
        }


def cancel_job(svc: Services, job_id: str) -> CancelOutcome:
    if (ended := end_retry(svc, job_id, outcome="cancelled", message="Cancelled by the user.")) is not None:
        job = svc.uow().jobs.get_job(job_id)
        assert job is not None
        return CancelOutcome(job_id, str(job.file_id), ended["previousStatus"], retry_cancelled=ended["retry"])
    with svc.uow() as uow:
        job = uow.jobs.lock_job(job_id)
        if job is None:
            raise NotFound(f"no job {job_id}", error_id="JOB_NOT_FOUND")
        status, file_id = job.status, str(job.file_id)
        if status == JobStatus.CANCELLED:
            return CancelOutcome(job_id, file_id, status, already=True)
        if status == JobStatus.ASSEMBLING:
            raise Conflict("The conversion is finishing (assembling the Markdown) and can no longer be cancelled.", error_id="CONVERSION_FINISHING")
        if not st.cancel().allows(status):
            raise Conflict(f"The job is {status}; only a job that has not finished can be cancelled.", error_id="NOT_CANCELLABLE")
        spent = uow.ledger.job_total(job_id)
        uow.jobs.move_job(job_id, st.cancel(), error_id="CANCELLED", error_message="Cancelled by the user.", total_cost_usd=spent)
        chunks = uow.jobs.move_chunks(job_id, st.cancel(Entity.CHUNK))
        released = uow.ledger.close_hold(job_id, outcome="cancelled", settled_usd=spent)
        uow.jobs.move_file(file_id, st.cancel(Entity.FILE))
        found = lane_state(uow.lanes.lanes_of_job(job_id))
        left = uow.lanes.leave_lanes(job_id)  # other members of a shared lane are not touched
        uow.lanes.leave_pool([job_id], reason=CANCEL_REASON)
        for lane in left:
            if not uow.lanes.has_packed_members(lane.id):
                uow.lanes.set_reason(lane.lane_id, CANCEL_REASON)
    stop_requested = stop_abandoned_lanes(svc, left, reason=CANCEL_REASON)
    logger.info("job cancelled", job_id=job_id, previous_status=status, chunks=chunks, lane=found, lanes_left=len(left), stop_requested=stop_requested)
    publish_job_change(svc, job_id, "cancelled")
    return CancelOutcome(job_id, file_id, status, False, released, chunks, found, stop_requested)
