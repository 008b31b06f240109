"""Storage and IAM: the security properties issue 4 lists, read from the synthesized template."""

from __future__ import annotations

import json
from typing import Any

from infra_testlib import Synth, all_statements, as_list, context_of_cdk_json, statements_of

# Actions AWS offers on "*" only; nothing else may have a wildcard resource of "*".
STAR_ONLY_ACTIONS = {
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
    "bedrock:ListModelInvocationJobs",
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
    "ec2:DescribeNetworkInterfaces",
}


def _bucket(synth: Synth) -> dict[str, Any]:
    return synth.resources[synth.logical_id("Storage/Bucket")]


def test_bucket_is_encrypted_private_unversioned_and_expires_objects_after_14_days(synth: Synth) -> None:
    props = _bucket(synth)["Properties"]
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [{"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True, "BlockPublicPolicy": True, "IgnorePublicAcls": True, "RestrictPublicBuckets": True,
    }  # fmt: skip
    assert props.get("VersioningConfiguration", {}).get("Status") != "Enabled"
    rules = props["LifecycleConfiguration"]["Rules"]
    assert any(r["Status"] == "Enabled" and r["ExpirationInDays"] == 14 and "Prefix" not in r for r in rules)
    assert "LoggingConfiguration" in props


def test_bucket_name_is_tied_to_the_account(synth: Synth) -> None:
    name = json.dumps(_bucket(synth)["Properties"]["BucketName"])
    assert '{"Ref": "AWS::AccountId"}' in name and '{"Ref": "AWS::Region"}' in name


def test_bucket_policy_denies_anything_but_tls(synth: Synth) -> None:
    bucket_id = synth.logical_id("Storage/Bucket")
    policies = [p for p in synth.of_type("AWS::S3::BucketPolicy").values() if p["Properties"]["Bucket"] == {"Ref": bucket_id}]
    (policy,) = policies
    deny = [s for s in statements_of(policy) if s["Effect"] == "Deny"]
    assert any(s["Action"] == "s3:*" and s["Principal"] == {"AWS": "*"} and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in deny)


def test_bedrock_service_role_trusts_only_bedrock_for_this_accounts_jobs(synth: Synth) -> None:
    role = synth.resources[synth.logical_id("BedrockBatch/ServiceRole")]
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "bedrock.amazonaws.com"}
    assert statement["Action"] == "sts:AssumeRole"
    conditions = statement["Condition"]
    assert conditions["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    source_arn = json.dumps(conditions["ArnLike"]["aws:SourceArn"])
    assert ":model-invocation-job/*" in source_arn and '"Ref": "AWS::AccountId"' in source_arn


def _policy_of_role(synth: Synth, role_path: str) -> list[dict[str, Any]]:
    role_id = synth.logical_id(role_path)
    return [st for p in synth.of_type("AWS::IAM::Policy").values() if {"Ref": role_id} in p["Properties"]["Roles"] for st in statements_of(p)]


def _model_ids() -> list[str]:
    return context_of_cdk_json()["modelIds"]


def test_service_role_touches_only_the_batch_prefix_and_the_configured_models(synth: Synth) -> None:
    statements = _policy_of_role(synth, "BedrockBatch/ServiceRole")
    actions = {a for s in statements for a in as_list(s["Action"])}
    assert actions == {
        "s3:GetObject",
        "s3:PutObject",
        "s3:AbortMultipartUpload",
        "s3:ListBucket",
        "bedrock:InvokeModel",
    }
    for s in statements:
        resources = json.dumps(s["Resource"])
        if any(a.startswith("s3:") for a in as_list(s["Action"])):
            if "s3:ListBucket" in as_list(s["Action"]):
                assert s["Condition"]["StringLike"] == {"s3:prefix": ["batch/*"]}
            else:
                assert resources.endswith('"/batch/*"]]}') or "/batch/*" in resources
                assert "/uploads/" not in resources and "/jobs/" not in resources
        else:
            for model in _model_ids():
                assert model.split(".", 1)[-1] in resources
            assert "foundation-model/*" not in resources and "inference-profile/*" not in resources


def test_caller_policy_manages_jobs_and_passes_the_service_role_to_bedrock_only(synth: Synth) -> None:
    policy = synth.resources[synth.logical_id("BedrockBatch/CallerPolicy")]
    statements = statements_of(policy)
    actions = {a for s in statements for a in as_list(s["Action"])}
    assert {
        "bedrock:CreateModelInvocationJob", "bedrock:GetModelInvocationJob", "bedrock:StopModelInvocationJob",
        "bedrock:ListModelInvocationJobs", "bedrock:TagResource", "iam:PassRole",
    } <= actions  # fmt: skip
    (pass_role,) = [s for s in statements if "iam:PassRole" in as_list(s["Action"])]
    assert pass_role["Resource"] == {"Fn::GetAtt": [synth.logical_id("BedrockBatch/ServiceRole"), "Arn"]}
    assert pass_role["Condition"] == {"StringEquals": {"iam:PassedToService": "bedrock.amazonaws.com"}}
    for s in statements:
        if any(a.startswith("s3:") for a in as_list(s["Action"])) and "s3:ListBucket" not in as_list(s["Action"]):
            assert "/batch/*" in json.dumps(s["Resource"])
    assert "CallerPolicyArn" in synth.template["Outputs"]


def test_no_wildcard_actions_and_star_resources_only_where_aws_allows_nothing_else(synth: Synth) -> None:
    for statement in all_statements(synth.template):
        if statement["Effect"] != "Allow":
            continue
        actions = as_list(statement["Action"])
        assert not [a for a in actions if "*" in a], statement
        if "*" in as_list(statement["Resource"]):
            assert set(actions) <= STAR_ONLY_ACTIONS | {
                "ec2:CreateNetworkInterface", "ec2:DeleteNetworkInterface",
                "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses",
            }, statement  # fmt: skip


def test_queues_are_encrypted_and_tls_only(synth: Synth) -> None:
    queues = synth.of_type("AWS::SQS::Queue")
    assert len(queues) == 2
    for queue_id, queue in queues.items():
        assert "Fn::GetAtt" in queue["Properties"]["KmsMasterKeyId"]  # the stack's DLQ key (issue 42.6: a key EventBridge may use)
        (policy,) = [p for p in synth.of_type("AWS::SQS::QueuePolicy").values() if {"Ref": queue_id} in p["Properties"]["Queues"]]
        assert any(s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in statements_of(policy))


def test_log_groups_all_have_retention(synth: Synth) -> None:
    for logical_id, group in synth.of_type("AWS::Logs::LogGroup").items():
        assert group["Properties"].get("RetentionInDays") == context_of_cdk_json()["logRetentionDays"], logical_id


def test_every_lambda_writes_logs_to_its_own_group(synth: Synth) -> None:
    for logical_id, fn in synth.of_type("AWS::Lambda::Function").items():
        if fn["Metadata"]["aws:cdk:path"].startswith("Batchlane/Compute/"):
            assert "LogGroup" in fn["Properties"]["LoggingConfig"], logical_id
