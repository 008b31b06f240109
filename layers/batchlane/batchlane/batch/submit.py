"""Submit: CreateModelInvocationJob, idempotent by name and client token.

A retried submit (Lambda retry, crash after create) sends the same clientRequestToken
and gets the same job back; a name that exists already is looked up and adopted. A
throttled create or a full concurrent-job quota raises :class:`BatchSubmitBusy`, which the
state machine retries with backoff and jitter instead of failing the lane.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from batchlane import keys
from batchlane.batch.names import bedrock_job_name, client_request_token
from batchlane.batch.stop import stop_batch_job
from batchlane.db import batch_rows as rows
from batchlane.db import jobs as job_repo
from batchlane.observability import logger
from batchlane.runtime import Services

BUSY_CODES = frozenset({"ThrottlingException", "ServiceQuotaExceededException", "TooManyRequestsException", "ServiceUnavailableException"})


class BatchSubmitBusy(Exception):
    """Bedrock is throttling creates or the concurrent-job quota is full: try again later."""


def lane_bucket(svc: Services) -> str:
    return svc.settings.batch_conversion_s3_bucket or svc.settings.batchlane_bucket


def output_uri_for(svc: Services, job_id: str) -> str:
    return f"s3://{lane_bucket(svc)}/{keys.batch_output_prefix(job_id)}"


def find_job_by_name(bedrock: Any, name: str) -> dict[str, Any] | None:
    for page in bedrock.get_paginator("list_model_invocation_jobs").paginate(nameContains=name):
        for summary in page.get("invocationJobSummaries", []):
            if summary.get("jobName") == name:
                return dict(summary)
    return None


def bedrock_status(bedrock: Any, arn: str) -> str:
    """GetModelInvocationJob's status, or ``rows.LOST`` when Bedrock no longer knows the job.

    A job Bedrock cannot find will never send another event: waiting on it would wait
    forever, so the caller treats it as ended and collects whatever it left in S3.
    """
    try:
        return str(bedrock.get_model_invocation_job(jobIdentifier=arn)["status"])
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            logger.warning("batch job not found by Bedrock: treated as lost", bedrock_job_arn=arn)
            return rows.LOST
        raise


def submit_batch_job(svc: Services, job_id: str) -> dict[str, Any]:
    settings = svc.settings
    row = rows.get_row(svc.db, job_id)
    if row is None or row.state == "closed":
        return {"submitted": False, "why": "row_closed"}
    name = bedrock_job_name(job_id)
    if row.state == "preparing":
        bucket = lane_bucket(svc)
        output_uri = output_uri_for(svc, job_id)
        arn = _create(svc, job_id, name, row.model_id, f"s3://{bucket}/{keys.batch_input_prefix(job_id)}", output_uri)
        row = rows.mark_submitted(svc.db, job_id, arn=arn, name=name, output_uri=output_uri, deadline_hours=settings.batch_deadline_hours)
        assert row is not None
        logger.info("batch job submitted", job_id=job_id, bedrock_job_arn=arn, records=row.record_count)
    job = job_repo.get_job(svc.db, job_id)
    if row.reason or (job and job["status"] == "cancelled"):
        # The user left the lane while we prepared: the job exists now, so stop it at once;
        # whatever it processed is still collected and billed once.
        stop_batch_job(svc, job_id, reason=row.reason or "cancelled")
    return {"submitted": True, "jobArn": row.bedrock_job_arn, "waitSeconds": settings.batch_wait_seconds}


def _create(svc: Services, job_id: str, name: str, model_id: str, input_uri: str, output_uri: str) -> str:
    settings = svc.settings
    bedrock = svc.bedrock()
    try:
        response = bedrock.create_model_invocation_job(
            jobName=name,
            roleArn=settings.batch_conversion_role_arn,
            clientRequestToken=client_request_token(job_id),
            modelId=model_id,
            # The Anthropic Messages body in every record: the form in which Claude sees the page
            # (docs/architecture.md, "Claude sees the page").
            modelInvocationType="InvokeModel",
            inputDataConfig={"s3InputDataConfig": {"s3Uri": input_uri, "s3InputFormat": "JSONL"}},
            outputDataConfig={"s3OutputDataConfig": {"s3Uri": output_uri}},
            timeoutDurationInHours=settings.batch_conversion_timeout_hours,
            tags=[{"key": "batchlane:jobId", "value": job_id}, {"key": "batchlane:component", "value": "batch-lane"}],
        )
        return str(response["jobArn"])
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in BUSY_CODES:
            logger.warning("batch submit deferred", job_id=job_id, code=code)
            raise BatchSubmitBusy(f"{code}: {exc.response.get('Error', {}).get('Message', '')}") from exc
        if code == "ConflictException":
            existing = find_job_by_name(bedrock, name)
            if existing:
                logger.info("batch job adopted by name", job_id=job_id, bedrock_job_arn=existing["jobArn"])
                return str(existing["jobArn"])
        raise
