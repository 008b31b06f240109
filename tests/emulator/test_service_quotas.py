"""The emulator's Service Quotas and model catalog, through boto3's real request path.

moto has no Bedrock quotas (moto 5.2.5 answers NoSuchResourceException), so `batchlane doctor` reads them from our emulator
offline: the JSON 1.1 protocol, AWS's per-model quota names, values from BatchQuotas.
"""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from botocore.exceptions import ClientError

from batchlane_dev.local.bedrock import BatchQuotas, BedrockEmulator

CREDS = {"region_name": "us-east-1", "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
QUOTAS = BatchQuotas(min_records=7, max_records=1234, max_concurrent_jobs=3)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    emulator = BedrockEmulator(s3_client_factory=lambda: None, quotas=QUOTAS)
    yield emulator.start()
    emulator.stop()


def _all_quotas(endpoint: str) -> dict[str, dict]:
    client = boto3.client("service-quotas", endpoint_url=endpoint, **CREDS)
    pages = list(client.get_paginator("list_service_quotas").paginate(ServiceCode="bedrock", PaginationConfig={"PageSize": 4}))
    assert len(pages) > 1  # the paginator follows NextToken
    return {q["QuotaName"]: q for page in pages for q in page["Quotas"]}


def test_batch_quotas_carry_aws_names_and_the_emulated_values(endpoint):
    quotas = _all_quotas(endpoint)
    model = "Claude Sonnet 4.5"
    assert quotas[f"Minimum number of records per batch inference job for {model}"]["Value"] == 7
    assert quotas[f"Records per batch inference job for {model}"]["Value"] == 1234
    assert quotas[f"Sum of in-progress and submitted batch inference jobs using a base model for {model}"]["Value"] == 3
    assert quotas[f"Batch inference input file size (in GB) for {model}"]["Value"] == 1
    assert quotas[f"Batch inference job size (in GB) for {model}"]["Value"] == 5
    assert {q["ServiceCode"] for q in quotas.values()} == {"bedrock"}


def test_get_service_quota_by_code_and_errors_as_aws_answers(endpoint):
    client = boto3.client("service-quotas", endpoint_url=endpoint, **CREDS)
    listed = _all_quotas(endpoint)["Records per batch inference job for Claude Haiku 4.5"]
    got = client.get_service_quota(ServiceCode="bedrock", QuotaCode=listed["QuotaCode"])["Quota"]
    assert got["QuotaName"] == listed["QuotaName"] and got["Value"] == 1234
    with pytest.raises(ClientError) as unknown:
        client.get_service_quota(ServiceCode="bedrock", QuotaCode="L-00000000")
    assert unknown.value.response["Error"]["Code"] == "NoSuchResourceException"
    with pytest.raises(ClientError) as other_service:
        client.list_service_quotas(ServiceCode="lambda")
    assert other_service.value.response["Error"]["Code"] == "NoSuchResourceException"


def test_model_catalog_resolves_profiles_and_refuses_unknown_models(endpoint):
    bedrock = boto3.client("bedrock", endpoint_url=endpoint, **CREDS)
    profile = bedrock.get_inference_profile(inferenceProfileIdentifier="us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    assert profile["status"] == "ACTIVE"
    base = profile["models"][0]["modelArn"].rsplit("/", 1)[-1]
    assert bedrock.get_foundation_model(modelIdentifier=base)["modelDetails"]["modelName"] == "Claude Sonnet 4.5"
    assert bedrock.get_foundation_model_availability(modelId=base)["authorizationStatus"] == "AUTHORIZED"
    for call in (
        lambda: bedrock.get_foundation_model(modelIdentifier="anthropic.claude-unknown-v1:0"),
        lambda: bedrock.get_inference_profile(inferenceProfileIdentifier="us.anthropic.claude-unknown-v1:0"),
    ):
        with pytest.raises(ClientError) as missing:
            call()
        assert missing.value.response["Error"]["Code"] == "ResourceNotFoundException"
