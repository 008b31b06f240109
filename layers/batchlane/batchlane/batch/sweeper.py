"""batch_sweeper: ask Bedrock about rows still waiting, so a lost or early event strands nothing."""

from __future__ import annotations

import os
import time
from collections import Counter
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit, single_metric

from batchlane.batch.abandon import abandon, adopt_created_job
from batchlane.batch.billing import settle_stopping
from batchlane.batch.collect import collect
from batchlane.batch.purge import purge_deleted_members
from batchlane.batch.resume import resume_members
from batchlane.batch.stop import stop_batch_job
from batchlane.batch.submit import bedrock_status
from batchlane.batch.wait import wake
from batchlane.domain.status import TERMINAL_BEDROCK_STATUSES, BedrockJobStatus
from batchlane.observability import logger, metrics
from batchlane.ports import BatchJobs, Services
from batchlane.rows import Lane

PREPARE_STUCK_HOURS = 2.0
ORPHAN_AFTER_S = 600  # a terminal row with no waiting execution for this long is collected by the sweeper


def sweep(svc: Services) -> dict[str, Any]:
    """Ask Bedrock about every row still waiting; end waits whose terminal event was lost.

    Also the net under the workflow itself: a terminal row nobody waits on (its execution
    died) is collected and resumed here, a job Bedrock no longer knows is treated as
    ended (lost), a ``stopping`` row is billed once its job has ended, and a prepare stuck
    for over 2 hours adopts its Bedrock job if one exists (it is billing) or leaves the lane.
    """
    tally: Counter[str] = Counter()
    bedrock, lanes = svc.batch_jobs, svc.uow().lanes
    for row in lanes.rows_waiting():
        _isolated(_sweep_submitted, svc, bedrock, row, tally)
    for row in lanes.rows_stopping():
        _isolated(_sweep_stopping, svc, bedrock, row, tally)
    # Prepare is our own Lambdas' work, in real time on any clock: the threshold is never scaled (offline at
    # ×3,600 it would be 2 s, shorter than preparing a lane of a few hundred documents takes).
    for row in lanes.rows_preparing_since(older_than_hours=PREPARE_STUCK_HOURS):
        _isolated(_sweep_stuck_prepare, svc, bedrock, row.lane_id, tally)
    try:
        tally["purged"] += _purge_deleted(svc)
    except Exception:  # the bucket refused: the next sweep tries again
        tally["errors"] += 1
        logger.exception("batch sweep could not purge deleted members")
    _emit_gauges(svc)
    if tally:
        logger.info("batch sweep", extra=dict(tally))
    return {
        "woken": tally["woken"],
        "overdue": tally["overdue"],
        "orphansCollected": tally["orphans"],
        "adoptedStuck": tally["adopted"],
        "lost": tally["lost"],
        "billedStopped": tally["billed_stopped"],
        "abandonedStuck": tally["abandoned"],
        "errors": tally["errors"],
        "membersPurged": tally["purged"],
    }


def _purge_deleted(svc: Services) -> int:
    """Deleted files' page content in lanes that closed since the delete (batch/purge.py)."""
    return purge_deleted_members(svc)


def _isolated(step: Any, svc: Services, bedrock: BatchJobs, row_or_job: Any, tally: Counter[str]) -> None:
    """One row's failure (a job Bedrock no longer knows, a collect error) must not stop the sweep."""
    try:
        step(svc, bedrock, row_or_job, tally)
    except Exception:
        tally["errors"] += 1
        lane_id = row_or_job.lane_id if isinstance(row_or_job, Lane) else row_or_job
        logger.exception("batch sweep failed for one lane", lane_id=str(lane_id))


def _sweep_submitted(svc: Services, bedrock: BatchJobs, row: Lane, tally: Counter[str]) -> None:
    status = row.bedrock_status
    if status not in TERMINAL_BEDROCK_STATUSES:
        status = bedrock_status(bedrock, row.arn)
        row = svc.uow().lanes.record_status(row.arn, status) or row
        if status == BedrockJobStatus.LOST:
            tally["lost"] += 1
    if status in TERMINAL_BEDROCK_STATUSES:
        if row.task_tokens:
            tally["woken"] += wake(svc, row, status)
        elif row.terminal_seen_at and row.terminal_seen_at.timestamp() < time.time() - ORPHAN_AFTER_S / svc.settings.batchlane_time_scale:
            # Nobody waits on this row (its execution is gone). Collect and resume here;
            # both are idempotent, so a late execution doing the same is harmless.
            collect(svc, row.lane_id, start_retry=False)  # a retry batch it forms is started by the packer
            resume_members(svc, row.lane_id)
            tally["orphans"] += 1
    elif row.deadline is not None and row.deadline.timestamp() < time.time():
        tally["overdue"] += 1
        stop_batch_job(svc, row.lane_id, reason="overdue")


def _sweep_stopping(svc: Services, bedrock: BatchJobs, row: Lane, tally: Counter[str]) -> None:
    if row.bedrock_status not in TERMINAL_BEDROCK_STATUSES:
        status = bedrock_status(bedrock, row.arn)
        row = svc.uow().lanes.record_status(row.arn, status) or row
    if settle_stopping(svc, row)["won"]:
        tally["billed_stopped"] += 1


def _sweep_stuck_prepare(svc: Services, bedrock: BatchJobs, lane_id: str, tally: Counter[str]) -> None:
    if adopt_created_job(svc, lane_id):  # it exists, so it is billing: collected by its wait, or as an orphan
        tally["adopted"] += 1
    else:
        abandon(svc, lane_id, reason="prepare_stuck")
        resume_members(svc, lane_id)
        tally["abandoned"] += 1


def _emit_gauges(svc: Services) -> None:
    uow = svc.uow()
    metrics.add_metric(name="JobsWaitingPastDeadline", unit="Count", value=uow.lanes.count_past_deadline())
    for status, count in uow.jobs.count_live_by_status().items():
        if os.environ.get("POWERTOOLS_METRICS_DISABLED", "").lower() == "true":
            break  # offline: single_metric would print EMF to stdout
        with single_metric(name="JobsByState", unit=MetricUnit.Count, value=count, namespace=metrics.namespace) as metric:
            metric.add_dimension(name="State", value=status)
