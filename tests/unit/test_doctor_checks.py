"""`batchlane doctor`'s checks find what a broken deployment gets wrong (IAM, S3, EventBridge on moto).

Each test breaks one thing the way a hand-edited or half-deployed stack would, and the
check must say so; the healthy shapes are those infra/ deploys.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from batchlane_dev.cli.doctor import checks
from batchlane_dev.cli.doctor.quotas import BatchQuotaValues, compare
from batchlane_dev.cli.doctor.target import Target

ACCOUNT = "123456789012"
REGION = "us-east-1"
BUCKET = "doctor-bucket"
PROFILE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
MODEL = checks.ModelInfo(PROFILE, "anthropic.claude-sonnet-4-5-20250929-v1:0", "Claude Sonnet 4.5")


@pytest.fixture
def aws(monkeypatch) -> Iterator[None]:  # type: ignore[no-untyped-def]
    for key in [k for k in os.environ if k.startswith("AWS_ENDPOINT_URL")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        yield


def _role(trust_condition: dict | None, invoke_resources: list[str]) -> str:
    iam = boto3.client("iam", region_name=REGION)
    statement = {"Effect": "Allow", "Principal": {"Service": "bedrock.amazonaws.com"}, "Action": "sts:AssumeRole"}
    if trust_condition:
        statement["Condition"] = trust_condition
    arn = iam.create_role(RoleName="svc", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [statement]}))["Role"]["Arn"]
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"], "Resource": f"arn:aws:s3:::{BUCKET}/batch/*"},
            {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": f"arn:aws:s3:::{BUCKET}"},
            {"Effect": "Allow", "Action": "bedrock:InvokeModel", "Resource": invoke_resources},
        ],
    }
    iam.put_role_policy(RoleName="svc", PolicyName="p", PolicyDocument=json.dumps(policy))
    return arn


def _role_checks(arn: str) -> dict[str, checks.Check]:
    found = checks.check_service_role(boto3.client("iam", region_name=REGION), arn, account_id=ACCOUNT, region=REGION, bucket=BUCKET, models=[MODEL])
    return {c.name: c for c in found}


def test_service_role_as_deployed_passes(aws):
    arn = _role(
        {"StringEquals": {"aws:SourceAccount": ACCOUNT}},
        [f"arn:aws:bedrock:{REGION}:{ACCOUNT}:inference-profile/{PROFILE}", "arn:aws:bedrock:*::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0"],
    )
    result = _role_checks(arn)
    assert result["service role trust"].ok and result["service role policy"].ok


def test_trust_without_source_account_warns_and_a_missing_model_grant_fails(aws):
    arn = _role(None, [f"arn:aws:bedrock:{REGION}:{ACCOUNT}:inference-profile/{PROFILE}"])  # the foundation model is not granted
    result = _role_checks(arn)
    trust, policy = result["service role trust"], result["service role policy"]
    assert not trust.ok and trust.severity == "warning" and "aws:SourceAccount" in trust.detail
    assert not policy.ok and policy.severity == "error"
    assert f"bedrock:InvokeModel on arn:aws:bedrock:{REGION}::foundation-model/anthropic.claude-sonnet-4-5" in policy.detail


def test_bucket_without_tls_policy_or_expiry_fails_and_a_longer_expiry_warns(aws):
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket=BUCKET)
    by_name = {c.name: c for c in checks.check_bucket(s3, BUCKET)}
    assert not by_name["bucket TLS only"].ok and not by_name["bucket lifecycle"].ok

    deny_http = {
        "Effect": "Deny",
        "Principal": {"AWS": "*"},
        "Action": "s3:*",
        "Resource": [f"arn:aws:s3:::{BUCKET}/*"],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }
    s3.put_bucket_policy(Bucket=BUCKET, Policy=json.dumps({"Version": "2012-10-17", "Statement": [deny_http]}))
    rule = {"ID": "x", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 30}}
    s3.put_bucket_lifecycle_configuration(Bucket=BUCKET, LifecycleConfiguration={"Rules": [rule]})
    by_name = {c.name: c for c in checks.check_bucket(s3, BUCKET)}
    assert by_name["bucket TLS only"].ok
    assert not by_name["bucket lifecycle"].ok and by_name["bucket lifecycle"].severity == "warning" and "30 days" in by_name["bucket lifecycle"].detail


def test_disabled_or_wrong_event_rule_fails(aws):
    events = boto3.client("events", region_name=REGION)
    pattern = {"source": ["aws.bedrock"], "detail-type": ["Batch Inference Job State Change"]}
    events.put_rule(Name="r", EventPattern=json.dumps(pattern), State="DISABLED")
    events.put_targets(Rule="r", Targets=[{"Id": "t", "Arn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:cb"}])
    assert not checks.check_event_rule(events, "r").ok
    events.enable_rule(Name="r")
    assert checks.check_event_rule(events, "r").ok
    events.put_rule(Name="r", EventPattern=json.dumps({"source": ["aws.bedrock"], "detail-type": ["Model Customization Job State Change"]}))
    assert not checks.check_event_rule(events, "r").ok


def _target(**lane: str) -> Target:
    return Target("t", {"LaneSettings": json.dumps({"BATCHLANE_MODEL_ID": PROFILE, **lane})}, offline=True)


def test_quotas_warn_where_a_setting_is_outside_the_account_quota():
    quotas = BatchQuotaValues("Claude Sonnet 4.5", {"min_records": 100, "max_records": 50_000, "max_concurrent_jobs": 2, "max_file_gb": 1, "max_job_gb": 5})
    target = _target(BATCH_CONVERSION_MIN_RECORDS="50", BATCH_CONVERSION_MAX_CONCURRENT_JOBS="10", BATCH_CONVERSION_MAX_RECORDS="50000")
    by_name = {c.name: c for c in compare(target, quotas)}
    assert not by_name["quota min_records"].ok and "below the account's minimum of 100" in by_name["quota min_records"].detail
    assert not by_name["quota max_concurrent_jobs"].ok and "exceeds the account's quota of 2" in by_name["quota max_concurrent_jobs"].detail
    assert by_name["quota max_records"].ok and by_name["quota max_file_gb"].ok and by_name["quota max_job_gb"].ok
    assert {c.severity for c in by_name.values() if not c.ok} == {"warning"}


def test_a_quota_the_account_does_not_list_is_a_warning_not_a_pass():
    by_name = {c.name: c for c in compare(_target(), BatchQuotaValues("Claude Sonnet 4.5", {}))}
    assert not any(c.ok for c in by_name.values())
    assert "Records per batch inference job for Claude Sonnet 4.5" in by_name["quota max_records"].detail


# -- Lambda concurrency (issue 21): the account's quota against the deployment's settings -----------------


def _lambda_answering(limit: int, unreserved: int):  # type: ignore[no-untyped-def]
    """A real client whose GetAccountSettings answers as AWS documents it (moto has no such call)."""
    from botocore.stub import Stubber

    client = boto3.client("lambda", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(client)
    stub.add_response("get_account_settings", {"AccountLimit": {"ConcurrentExecutions": limit, "UnreservedConcurrentExecutions": unreserved}})
    stub.activate()
    return client


def _deployment(slots: int, reserved: dict[str, int]) -> Target:
    lane = {"BATCHLANE_MODEL_ID": PROFILE, "BATCHLANE_CHUNK_SLOTS": str(slots), "BATCHLANE_RESERVED_CONCURRENCY": json.dumps(reserved)}
    return Target(name="t", outputs={"LaneSettings": json.dumps(lane)}, offline=False)


def test_the_doctor_reports_the_accounts_concurrency_against_the_deployments_settings() -> None:
    from batchlane_dev.cli.doctor.concurrency import check_lambda_concurrency

    healthy = check_lambda_concurrency(_lambda_answering(1000, 1000), _deployment(100, {}))
    assert [(r.name, r.ok) for r in healthy] == [("lambda concurrency", True)]
    assert "account limit 1000" in healthy[0].detail and "chunk slots 100" in healthy[0].detail


def test_a_reservation_past_what_a_low_quota_account_may_reserve_fails_and_too_many_slots_warn() -> None:
    from batchlane_dev.cli.doctor.concurrency import check_lambda_concurrency

    results = {r.name: r for r in check_lambda_concurrency(_lambda_answering(50, 50), _deployment(100, {"api": 20, "chunk_processor": 100}))}
    assert (results["reserved concurrency"].ok, results["reserved concurrency"].severity) == (False, "error")
    assert "reserves 120 but the account may reserve at most 0" in results["reserved concurrency"].detail
    low = {r.name: r for r in check_lambda_concurrency(_lambda_answering(50, 50), _deployment(100, {}))}
    assert (low["chunk slots"].ok, low["chunk slots"].severity) == (False, "warning") and "chunkSlots=25" in low["chunk slots"].detail
