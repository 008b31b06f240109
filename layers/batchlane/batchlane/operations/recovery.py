"""The recovery schedule's use case: resume stranded jobs, fail splits that outlived their intake.

A job whose batch row closed but which still waits is resumed (batch/resume.py); a job still
``splitting`` long after its intake must have ended is failed (SPLIT_STALLED) so its file can be
converted again. Both are idempotent, so a repeat run or an overlap with the lanes is harmless.
"""

from __future__ import annotations

from typing import Any

from batchlane.batch.resume import resume_stranded
from batchlane.conversion.settle import fail_job
from batchlane.db import jobs as job_repo
from batchlane.domain.status import JobStatus
from batchlane.observability import logger
from batchlane.runtime import Services

# Longer than the intake can run (4 attempts of job_split's 900 s, plus backoff, plus FailJob):
# a job splitting longer lost its intake (an execution that never ran or whose FailJob failed).
SPLIT_STALLED_AFTER_S = 2 * 3600


def recover(svc: Services) -> dict[str, Any]:
    """One run of the recovery schedule: what it resumed and the splits it failed."""
    return {**resume_stranded(svc), "splitsFailed": fail_stalled_splits(svc)}


def fail_stalled_splits(svc: Services, *, older_than_s: float = SPLIT_STALLED_AFTER_S) -> list[str]:
    """Jobs still ``splitting`` long after their intake must have ended: fail them (SPLIT_STALLED)
    so the file can be converted again. Run by the recovery schedule; real time, never scaled."""
    failed = []
    for job_id in job_repo.jobs_in(svc.db, JobStatus.SPLITTING, unchanged_for_s=older_than_s):
        outcome = fail_job(svc, job_id, error_id="SPLIT_STALLED", message="The upload was not split in time; convert the file again.")
        if outcome["status"] == JobStatus.FAILED:
            failed.append(job_id)
    if failed:
        logger.warning("stalled splits failed", count=len(failed))
    return failed
