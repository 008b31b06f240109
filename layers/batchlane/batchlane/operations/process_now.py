"""Process now: a job waiting for the batch lane goes on-demand at once.

What happens per batch-row state: docs/architecture.md "Module notes".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from batchlane.batch.resume import leave_batch_lane
from batchlane.batch.stop import stop_batch_job
from batchlane.conversion.create import PROCESS_NOW_FLAG
from batchlane.db import batch_rows as rows
from batchlane.db import jobs as job_repo
from batchlane.domain import status as st
from batchlane.domain.errors import Conflict, NotFound
from batchlane.domain.status import JobStatus
from batchlane.observability import logger
from batchlane.runtime import Services

PROCESS_NOW_REASON = "process_now"


@dataclass(frozen=True)
class ProcessNowOutcome:
    job_id: str
    file_id: str
    batch_row_state: str | None  # as the user found it
    action: str  # skipped_row_inserted | left_batch_lane | left_to_recovery | flagged_while_splitting
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


def process_now(svc: Services, job_id: str) -> ProcessNowOutcome:
    with svc.db.transaction() as tx:
        job = job_repo.lock_job(tx, job_id)
        if job is None:
            raise NotFound(f"no job {job_id}", error_id="JOB_NOT_FOUND")
        file_id = str(job.file_id)
        if job.status == JobStatus.SPLITTING:
            job_repo.flag_job(tx, job_id, {PROCESS_NOW_FLAG: True}, only_if=JobStatus.SPLITTING)
            logger.info("process now flagged while splitting", job_id=job_id)
            return ProcessNowOutcome(job_id, file_id, None, "flagged_while_splitting", resumed=False, status=JobStatus.SPLITTING.value)
        if not st.leave_batch_lane().allows(job.status):
            raise Conflict(f"The job is {job.status}, not waiting for the batch lane.", error_id="NOT_BATCH_WAITING")
        row = rows.lock_row(tx, job_id)
        found = row.state if row else None
        if row is None:
            inserted = rows.insert_closed(tx, job_id=job_id, model_id=job.model_id, end_state="skipped", reason=PROCESS_NOW_REASON)
            # None: the claimer inserted its row between our read and our insert; act on that one.
            row = inserted or rows.lock_row(tx, job_id)
            assert row is not None
            found = None if inserted else row.state
        if found == "closed":
            # Between close and resume: resuming here would drop the primed results. The lane's
            # Resume step, or the stranded-job recovery, resumes it with them.
            logger.info("process now left to recovery", job_id=job_id, batch_end_state=row.end_state)
            return ProcessNowOutcome(job_id, file_id, "closed", "left_to_recovery", resumed=False)
        if found in ("preparing", "submitted"):
            rows.set_reason(tx, job_id, PROCESS_NOW_REASON)
        options = {k: v for k, v in (job.options or {}).items() if k != "_batchPrimed"}
        leave_batch_lane(tx, job_id, options=options, hold_hours=svc.settings.batchlane_on_demand_window_hours)
    stop_requested = stop_batch_job(svc, job_id, reason=PROCESS_NOW_REASON) if found == "submitted" else False
    svc.workflows.start_conversion(job_id)
    action = "skipped_row_inserted" if found is None else "left_batch_lane"
    logger.info("job processed now", job_id=job_id, batch_row=found, action=action, stop_requested=stop_requested)
    return ProcessNowOutcome(job_id, file_id, found, action, resumed=True, batch_stop_requested=stop_requested)
