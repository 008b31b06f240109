"""BatchJobs over boto3 ``bedrock``: Create/Get/Stop/ListModelInvocationJob(s), AWS's error codes translated once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from batchlane.ports import BatchJobAlreadyEnded, BatchJobNotFound, BatchJobRef, BatchJobRejected, BatchJobsBusy, BatchJobsError, BatchJobSpec

# Bedrock API reference, CreateModelInvocationJob "Errors"; ServiceQuotaExceeded is the concurrent-job quota.
BUSY_CODES = frozenset({"ThrottlingException", "ServiceQuotaExceededException", "TooManyRequestsException", "ServiceUnavailableException"})


def _error(exc: ClientError) -> tuple[str, str]:
    error = exc.response.get("Error", {})
    return str(error.get("Code", "")), str(error.get("Message", ""))


class BedrockBatchJobs:
    """``client`` makes (or returns the cached) boto3 ``bedrock`` client, on first use."""

    def __init__(self, client: Callable[[], Any]) -> None:
        self._client = client

    def create(self, spec: BatchJobSpec) -> str:
        try:
            response = self._client().create_model_invocation_job(
                jobName=spec.name,
                roleArn=spec.role_arn,
                clientRequestToken=spec.client_token,
                modelId=spec.model_id,
                # The Anthropic Messages body in every record: the form in which Claude sees the page
                # (docs/architecture.md, "Claude sees the page").
                modelInvocationType="InvokeModel",
                inputDataConfig={"s3InputDataConfig": {"s3Uri": spec.input_uri, "s3InputFormat": "JSONL"}},
                outputDataConfig={"s3OutputDataConfig": {"s3Uri": spec.output_uri}},
                timeoutDurationInHours=spec.timeout_hours,
                tags=[{"key": key, "value": value} for key, value in spec.tags.items()],
            )
            return str(response["jobArn"])
        except ClientError as exc:
            code, message = _error(exc)
            if code in BUSY_CODES:
                raise BatchJobsBusy(code, message) from exc
            if code == "ConflictException" and (existing := self.find_by_name(spec.name)) is not None:
                return existing.arn  # created by an earlier attempt (a retried submit): adopt it
            raise BatchJobRejected(code, message) from exc

    def status(self, arn: str) -> str:
        try:
            return str(self._client().get_model_invocation_job(jobIdentifier=arn)["status"])
        except ClientError as exc:
            code, message = _error(exc)
            if code == "ResourceNotFoundException":
                raise BatchJobNotFound(code, message) from exc
            raise BatchJobsError(code, message) from exc

    def stop(self, arn: str) -> None:
        try:
            self._client().stop_model_invocation_job(jobIdentifier=arn)
        except ClientError as exc:
            code, message = _error(exc)
            if code == "ValidationException":  # the job is no longer in a state that can be stopped
                raise BatchJobAlreadyEnded(code, message) from exc
            raise BatchJobsError(code, message) from exc

    def find_by_name(self, name: str) -> BatchJobRef | None:
        for page in self._client().get_paginator("list_model_invocation_jobs").paginate(nameContains=name):
            for summary in page.get("invocationJobSummaries", []):
                if summary.get("jobName") == name:
                    return BatchJobRef(arn=str(summary["jobArn"]), name=str(summary["jobName"]))
        return None
