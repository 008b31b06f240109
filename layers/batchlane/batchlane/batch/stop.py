"""batch_stop: ask Bedrock to stop a submitted batch job (overdue wait, cancel, process now)."""

from __future__ import annotations

from batchlane.db import batch_rows as rows
from batchlane.observability import logger
from batchlane.ports import BatchJobAlreadyEnded, BatchJobsError
from batchlane.runtime import Services


def stop_batch_job(svc: Services, job_id: str, *, reason: str) -> bool:
    """Best effort: True when Bedrock accepted the stop (or the job was already ending)."""
    row = rows.set_reason(svc.db, job_id, reason)
    if row is None or not row.bedrock_job_arn or row.state != "submitted":
        return False
    try:
        svc.batch_jobs.stop(row.arn)
        logger.info("batch job stop requested", job_id=job_id, reason=reason)
        return True
    except BatchJobsError as exc:
        logger.info("batch job stop not accepted", job_id=job_id, code=exc.code, error_message=exc.message)
        return isinstance(exc, BatchJobAlreadyEnded)  # already terminal: nothing left to stop
