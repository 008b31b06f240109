"""Submit: CreateModelInvocationJob, idempotent by name and client token.

A retried submit (Lambda retry, crash after create) sends the same clientRequestToken
and gets the same job back; a name that exists already is looked up and adopted. A
throttled create or a full concurrent-job quota raises :class:`BatchSubmitBusy`, which the
state machine retries with backoff and jitter instead of failing the lane.
"""

from __future__ import annotations

from typing import Any

from batchlane import keys
from batchlane.batch.names import bedrock_job_name, client_request_token
from batchlane.batch.stop import stop_batch_job
from batchlane.domain import status as st
from batchlane.observability import logger
from batchlane.ports import BatchJobNotFound, BatchJobs, BatchJobsBusy, BatchJobSpec, Services


class BatchSubmitBusy(Exception):
    """Bedrock is throttling creates or the concurrent-job quota is full: try again later."""


def lane_bucket(svc: Services) -> str:
    return svc.settings.batch_conversion_s3_bucket or svc.settings.batchlane_bucket


def output_uri_for(svc: Services, lane_id: str) -> str:
    return f"s3://{lane_bucket(svc)}/{keys.batch_output_prefix(lane_id)}"


def bedrock_status(jobs: BatchJobs, arn: str) -> str:
    """GetModelInvocationJob's status, or ``Lost`` when Bedrock no longer knows the job.

    A job Bedrock cannot find will never send another event: waiting on it would wait
    forever, so the caller treats it as ended and collects whatever it left in S3.
    """
    try:
        return jobs.status(arn)
    except BatchJobNotFound:
        logger.warning("batch job not found by Bedrock: treated as lost", bedrock_job_arn=arn)
        return st.BedrockJobStatus.LOST.value


def submit_batch_job(svc: Services, lane_id: str) -> dict[str, Any]:
    settings = svc.settings
    lanes = svc.uow().lanes
    row = lanes.get_row(lane_id)
    if row is None or row.state == "closed":
        return {"submitted": False, "why": "row_closed"}
    name = bedrock_job_name(lane_id)
    if row.state == "preparing" and not lanes.has_packed_members(row.id):
        # Every member left while it prepared (process now, cancel): no Bedrock job, so nothing is billed for
        # pages that convert on-demand now. The wait ends at once on the closed row; Resume finds nobody to resume.
        lanes.close(lane_id, st.leave_before_submit(), end_state="skipped", reason=row.reason or "members_left")
        logger.info("batch lane left before submit: no member waits on it", lane_id=lane_id, reason=row.reason)
        return {"submitted": False, "jobArn": None, "waitSeconds": settings.batch_wait_seconds}
    if row.state == "preparing":
        bucket = lane_bucket(svc)
        output_uri = output_uri_for(svc, lane_id)
        arn = _create(svc, lane_id, name, row.model_id, f"s3://{bucket}/{keys.batch_input_prefix(lane_id)}", output_uri)
        row = lanes.mark_submitted(lane_id, arn=arn, name=name, output_uri=output_uri, deadline_hours=settings.batch_deadline_hours)
        assert row is not None
        logger.info("batch job submitted", lane_id=lane_id, bedrock_job_arn=arn, records=row.record_count, members=row.member_count)
    if not lanes.has_packed_members(row.id):
        # Every member left while we prepared: the job exists now, so stop it at once;
        # whatever it processed is still collected and billed once.
        stop_batch_job(svc, lane_id, reason=row.reason or "members_left")
    return {"submitted": True, "jobArn": row.bedrock_job_arn, "waitSeconds": settings.batch_wait_seconds}


def _create(svc: Services, lane_id: str, name: str, model_id: str, input_uri: str, output_uri: str) -> str:
    settings = svc.settings
    spec = BatchJobSpec(
        name=name,
        client_token=client_request_token(lane_id),
        model_id=model_id,
        role_arn=settings.batch_conversion_role_arn or "",
        input_uri=input_uri,
        output_uri=output_uri,
        timeout_hours=settings.batch_conversion_timeout_hours,
        tags={"batchlane:laneId": lane_id, "batchlane:component": "batch-lane"},
    )
    try:
        arn = svc.batch_jobs.create(spec)  # a name that exists already (an earlier attempt's create) is adopted
    except BatchJobsBusy as exc:
        logger.warning("batch submit deferred", lane_id=lane_id, code=exc.code)
        raise BatchSubmitBusy(str(exc)) from exc
    return arn
