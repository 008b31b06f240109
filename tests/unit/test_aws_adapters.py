"""The Bedrock batch adapter translates AWS's error codes once (Bedrock API reference, each
operation's "Errors"): botocore's Stubber answers from the service model, offline."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from batchlane.aws.bedrock_batch import BedrockBatchJobs
from batchlane.ports import BatchJobAlreadyEnded, BatchJobNotFound, BatchJobRef, BatchJobRejected, BatchJobsBusy, BatchJobsError, BatchJobSpec

ARN = "arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/abc123def456"
SPEC = BatchJobSpec(
    name="batchlane-job",
    client_token="batchlane-job",
    model_id="us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    role_arn="arn:aws:iam::123456789012:role/batch",
    input_uri="s3://b/batch/j/input/",
    output_uri="s3://b/batch/j/output/",
    timeout_hours=24,
    tags={"batchlane:jobId": "j"},
)


@pytest.fixture
def bedrock() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client("bedrock", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def _jobs(client: Any) -> BedrockBatchJobs:
    return BedrockBatchJobs(lambda: client)


@pytest.mark.parametrize("code", ["ThrottlingException", "ServiceQuotaExceededException", "ServiceUnavailableException"])
def test_a_throttled_create_or_a_full_quota_is_busy(bedrock: tuple[Any, Stubber], code: str) -> None:
    client, stubber = bedrock
    stubber.add_client_error("create_model_invocation_job", service_error_code=code, http_status_code=429)
    with pytest.raises(BatchJobsBusy):
        _jobs(client).create(SPEC)


def test_a_validation_exception_on_create_is_rejected_for_good(bedrock: tuple[Any, Stubber]) -> None:
    client, stubber = bedrock
    stubber.add_client_error("create_model_invocation_job", service_error_code="ValidationException", service_message="bad role", http_status_code=400)
    with pytest.raises(BatchJobRejected) as caught:
        _jobs(client).create(SPEC)
    assert (caught.value.code, caught.value.message) == ("ValidationException", "bad role")


def test_a_conflicting_name_adopts_the_job_an_earlier_attempt_created(bedrock: tuple[Any, Stubber]) -> None:
    client, stubber = bedrock
    stubber.add_client_error("create_model_invocation_job", service_error_code="ConflictException", http_status_code=409)
    summary = {"jobArn": ARN, "jobName": SPEC.name, "modelId": SPEC.model_id, "roleArn": SPEC.role_arn, "submitTime": "2026-12-01T00:00:00Z"}
    io = {"inputDataConfig": {"s3InputDataConfig": {"s3Uri": SPEC.input_uri}}, "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": SPEC.output_uri}}}
    stubber.add_response("list_model_invocation_jobs", {"invocationJobSummaries": [{**summary, **io}]}, {"nameContains": SPEC.name})
    assert _jobs(client).create(SPEC) == ARN


def test_an_unknown_job_is_not_found_and_other_refusals_keep_their_code(bedrock: tuple[Any, Stubber]) -> None:
    client, stubber = bedrock
    stubber.add_client_error("get_model_invocation_job", service_error_code="ResourceNotFoundException", http_status_code=404)
    stubber.add_client_error("get_model_invocation_job", service_error_code="AccessDeniedException", http_status_code=403)
    with pytest.raises(BatchJobNotFound):
        _jobs(client).status(ARN)
    with pytest.raises(BatchJobsError) as caught:
        _jobs(client).status(ARN)
    assert caught.value.code == "AccessDeniedException" and not isinstance(caught.value, BatchJobNotFound)


def test_stopping_a_job_that_has_ended_says_so(bedrock: tuple[Any, Stubber]) -> None:
    client, stubber = bedrock
    stubber.add_response("stop_model_invocation_job", {}, {"jobIdentifier": ARN})
    stubber.add_client_error("stop_model_invocation_job", service_error_code="ValidationException", http_status_code=400)
    _jobs(client).stop(ARN)
    with pytest.raises(BatchJobAlreadyEnded):
        _jobs(client).stop(ARN)


def test_find_by_name_matches_the_exact_name_only(bedrock: tuple[Any, Stubber]) -> None:
    client, stubber = bedrock
    io = {"inputDataConfig": {"s3InputDataConfig": {"s3Uri": SPEC.input_uri}}, "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": SPEC.output_uri}}}
    base = {"modelId": SPEC.model_id, "roleArn": SPEC.role_arn, "submitTime": "2026-12-01T00:00:00Z", **io}
    page = {"invocationJobSummaries": [{**base, "jobArn": ARN + "0", "jobName": SPEC.name + "-2"}, {**base, "jobArn": ARN, "jobName": SPEC.name}]}
    stubber.add_response("list_model_invocation_jobs", page, {"nameContains": SPEC.name})
    assert _jobs(client).find_by_name(SPEC.name) == BatchJobRef(ARN, SPEC.name)
