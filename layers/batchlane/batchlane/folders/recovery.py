"""The recovery schedule's part for folder jobs: a live folder job whose current run ended without its end.

Finish and FailJob invoke ``folder_finish``; when both are throttled past their ladder (or the run
timed out or was stopped) the execution ends FAILED / TIMED_OUT / ABORTED and the job stays live,
its owner's live folder-job cap taken. Run by the ``recovery`` schedule after the single-file sweep
(operations/recovery.py); the decision is domain/workflow_end.folder_end. Idempotent: ``finish`` and
``fail`` move the row through guarded transitions and only the run that moved it publishes.
"""

from __future__ import annotations

from batchlane.domain import workflow_end as we
from batchlane.folders.finish import fail, finish
from batchlane.observability import logger
from batchlane.ports import Services

SWEEP_UNCHANGED_S = 300  # as operations/recovery.SWEEP_UNCHANGED_S (scaled)
SWEEP_BATCH = 100


def settle_ended_folder_jobs(svc: Services, *, unchanged_for_s: float | None = None, limit: int = SWEEP_BATCH) -> dict[str, str]:
    """Folder jobs whose current run ended without recording their end, ended now: job id → status."""
    after = SWEEP_UNCHANGED_S / svc.settings.batchlane_time_scale if unchanged_for_s is None else unchanged_for_s
    uow = svc.uow()
    ended: dict[str, str] = {}
    for job in uow.folder_jobs.live_unchanged(unchanged_for_s=after, limit=limit):
        execution = svc.workflows.describe_execution(*we.folder_execution(job.id, job.run, job.created_at))
        counts = uow.folder_jobs.counts(job.id)
        action = we.folder_end(
            status=job.status,
            updated_at=job.updated_at,
            enumeration_done=job.enumeration_done,
            unfinished_files=counts.queued + counts.processing,
            execution=execution,
        )
        if action is None or execution is None:
            continue
        if action is we.FolderEnd.FINISH:
            outcome = finish(uow, svc.folder_buckets, svc.bus, job.id)
        else:
            error_id, message = we.folder_failure(execution)
            outcome = fail(uow, svc.folder_buckets, svc.bus, job.id, error_id=error_id, message=message)
        logger.warning("folder job ended after its run", job_id=job.id, execution=execution.name, execution_status=execution.status, status=outcome["status"])
        ended[job.id] = str(outcome["status"])
    return ended
