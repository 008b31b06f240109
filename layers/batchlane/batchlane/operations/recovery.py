"""The recovery schedule's use case: resume stranded jobs, end jobs whose workflow ended without them,
fail splits that outlived their intake.

A job whose lane closed but which still waits is resumed (batch/resume.py); a live job whose
conversion or intake execution ended FAILED / TIMED_OUT / ABORTED before its last step recorded the
job's end (Settle or FailJob throttled past its ladder, issue 21 point 4) is ended as that step would
have (``settle_ended_jobs``, decision in domain/workflow_end.py); a job still ``splitting`` long after its
intake must have ended is failed (SPLIT_STALLED) so its file can be converted again. All are idempotent
(every move is a guarded transition under the job's row lock), so a repeat or concurrent run is harmless.
"""

from __future__ import annotations

from typing import Any

from batchlane.batch.resume import resume_stranded
from batchlane.domain import workflow_end as we
from batchlane.domain.status import JobStatus
from batchlane.filejob.settle import fail_job, settle_job
from batchlane.observability import logger
from batchlane.ports import Services

# Longer than the intake can run (4 attempts of job_split's 900 s, plus backoff, plus FailJob):
# a job splitting longer lost its intake (an execution that never ran or whose FailJob failed).
SPLIT_STALLED_AFTER_S = 2 * 3600
# A live job's row unchanged this long (scaled) has its execution asked about: a run that ended
# without its last step has left the row untouched since (the throttle ladder alone is ~36 min).
SWEEP_UNCHANGED_S = 300
SWEEP_BATCH = 200  # jobs asked about per run (2–4 DescribeExecution calls each), picked at random among the candidates


def recover(svc: Services) -> dict[str, Any]:
    """One run of the recovery schedule: what it resumed and the splits it failed."""
    return {**resume_stranded(svc), "jobsEnded": settle_ended_jobs(svc), "splitsFailed": fail_stalled_splits(svc)}


def settle_ended_jobs(svc: Services, *, unchanged_for_s: float | None = None, limit: int = SWEEP_BATCH) -> dict[str, str]:
    """Live jobs whose current execution ended without recording their end, ended now: job id → what was done.

    Assembled (or paused at the hold): ``settle_job``, as Settle would have; otherwise ``fail_job``
    (``WORKFLOW_FAILED``: hold released, spend kept, a running retry put back to completed). Both
    lock the row and move it through the transition table once, and publish the job's change only
    when they moved it: a concurrent run finds the job ended and does nothing."""
    after = SWEEP_UNCHANGED_S / svc.settings.batchlane_time_scale if unchanged_for_s is None else unchanged_for_s
    ended: dict[str, str] = {}
    for job in svc.uow().jobs.jobs_to_sweep(we.SWEPT_JOB_STATUSES, unchanged_for_s=after, limit=limit):
        run = we.JobRun(
            job_id=job.id,
            status=job.status,
            updated_at=job.updated_at,
            markdown_key=job.markdown_key,
            pause_settled=job.pause_settled,
            budget_resumes=job.budget_resumes,
            retry_attempt=job.retry_attempt,
        )
        execution = we.current([svc.workflows.describe_execution(machine, name) for machine, name in we.job_executions(run)])
        action = we.job_end(run, execution)
        if action is None or execution is None:
            continue
        if action is we.JobEnd.SETTLE:
            outcome = settle_job(svc, job.id, once=True)
        else:
            outcome = fail_job(svc, job.id, error_id=we.WORKFLOW_FAILED, message=we.failure_message(execution))
        logger.warning("job ended after its workflow", job_id=job.id, execution=execution.name, execution_status=execution.status, status=outcome["status"])
        ended[job.id] = str(outcome["status"])
    return ended


def fail_stalled_splits(svc: Services, *, older_than_s: float = SPLIT_STALLED_AFTER_S) -> list[str]:
    """Jobs still ``splitting`` long after their intake must have ended: fail them (SPLIT_STALLED)
    so the file can be converted again. Run by the recovery schedule; real time, never scaled."""
    failed = []
    for job_id in svc.uow().jobs.jobs_in(JobStatus.SPLITTING, unchanged_for_s=older_than_s):
        outcome = fail_job(svc, job_id, error_id="SPLIT_STALLED", message="The upload was not split in time; convert the file again.")
        if outcome["status"] == JobStatus.FAILED:
            failed.append(job_id)
    if failed:
        logger.warning("stalled splits failed", count=len(failed))
    return failed
