"""Cancel: the job stops, nothing is charged, the file can be converted again.

| job status                                       | answer                                    |
|--------------------------------------------------|-------------------------------------------|
| splitting, pending, processing, paused_budget, waiting_batch | cancelled (below)              |
| assembling                                       | Conflict CONVERSION_FINISHING (HTTP 409)   |
| cancelled                                        | nothing to do (``already`` is True)        |
| completed, failed                                | Conflict NOT_CANCELLABLE (HTTP 409)        |

In ONE transaction: job → cancelled, every chunk not completed → cancelled, the funds
hold closed with outcome ``cancelled`` (nothing settled), the file back to ``uploaded``,
and a batch row still in flight gets the reason ``cancelled``. After the commit a
submitted Bedrock job is stopped (best effort: ``collect`` stops it too when it finds
the job cancelled); whatever it processed is still collected and billed once on the
ledger, as is the partial spend of a chunk that was running (its guarded heartbeat
matches no row, so it starts no new page, books what it spent and discards the rest).
Those ledger rows are our cost; the user's hold is never settled for a cancelled job.
A job cancelled while ``splitting`` has no chunks and no hold yet; its split notices (its
guarded splitting → pending/waiting_batch matches no row) and writes, parks and starts nothing.

Cancelling a running retry of failed pages cancels the retry, not the job: the job goes back
to completed with its previous Markdown and results (batchlane.conversion.retry.end_retry).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from batchlane.batch.stop import stop_batch_job
from batchlane.conversion.retry import end_retry
from batchlane.db import batch_rows as rows
from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.domain import status as st
from batchlane.domain.errors import Conflict, NotFound
from batchlane.domain.status import BatchRowState, Entity, JobStatus
from batchlane.observability import logger
from batchlane.runtime import Services
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
    batch_row_state: str | None = None
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
            "batchRowState": self.batch_row_state,
            "batchStopRequested": self.batch_stop_requested,
        }


def cancel_job(svc: Services, job_id: str) -> CancelOutcome:
    if (ended := end_retry(svc, job_id, outcome="cancelled", message="Cancelled by the user.")) is not None:
        job = job_repo.get_job(svc.db, job_id)
        assert job is not None
        return CancelOutcome(job_id, str(job["file_id"]), ended["previousStatus"], retry_cancelled=ended["retry"])
    with svc.db.transaction() as tx:
        job = job_repo.lock_job(tx, job_id)
        if job is None:
            raise NotFound(f"no job {job_id}", error_id="JOB_NOT_FOUND")
        status, file_id = job["status"], str(job["file_id"])
        if status == JobStatus.CANCELLED:
            return CancelOutcome(job_id, file_id, status, already=True)
        if status == JobStatus.ASSEMBLING:
            raise Conflict("The conversion is finishing (assembling the Markdown) and can no longer be cancelled.", error_id="CONVERSION_FINISHING")
        if not st.cancel().allows(status):
            raise Conflict(f"The job is {status}; only a job that has not finished can be cancelled.", error_id="NOT_CANCELLABLE")
        job_repo.move_job(tx, job_id, st.cancel(), error_id="CANCELLED", error_message="Cancelled by the user.")
        chunks = job_repo.move_chunks(tx, job_id, st.cancel(Entity.CHUNK))
        released = ledger.close_hold(tx, job_id, outcome="cancelled", settled_usd=Decimal(0))
        job_repo.move_file(tx, file_id, st.cancel(Entity.FILE))
        row = rows.lock_row(tx, job_id)
        if row is not None and row.state != BatchRowState.CLOSED:
            rows.set_reason(tx, job_id, CANCEL_REASON)
    stop_requested = False
    if row is not None and row.state == "submitted":
        stop_requested = stop_batch_job(svc, job_id, reason=CANCEL_REASON)
    logger.info("job cancelled", job_id=job_id, previous_status=status, chunks=chunks, batch_row=row.state if row else None, stop_requested=stop_requested)
    publish_job_change(svc, job_id, "cancelled")
    return CancelOutcome(job_id, file_id, status, False, released, chunks, row.state if row else None, stop_requested)
