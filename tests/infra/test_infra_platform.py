"""Events, API, database, monitoring and outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from infra_testlib import Synth, camel, context_of_cdk_json, synth_app

from deployment import topology
from infra.api import ROUTES


def _rule(synth: Synth, name: str) -> dict:
    return synth.resources[synth.logical_id(f"Events/{camel(name)}")]["Properties"]


@pytest.mark.parametrize("rule", topology.RULES, ids=lambda r: r.name)
def test_rules_route_to_their_function_with_retries_and_a_dlq(synth: Synth, rule: topology.RuleSpec) -> None:
    props = _rule(synth, rule.name)
    assert props["EventPattern"] == {"source": [rule.source], "detail-type": [rule.detail_type]}
    (target,) = props["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [synth.logical_id(f"Compute/{camel(rule.target)}"), "Arn"]}
    assert target["DeadLetterConfig"]["Arn"] == {"Fn::GetAtt": [synth.logical_id("Events/DeliveryDlq"), "Arn"]}
    assert target["RetryPolicy"]["MaximumRetryAttempts"] > 0


def test_bedrock_batch_state_changes_reach_the_callback() -> None:
    (rule,) = [r for r in topology.RULES if r.source == "aws.bedrock"]
    assert rule.detail_type == "Batch Inference Job State Change" and rule.target == "batch_callback"


@pytest.mark.parametrize("schedule", topology.SCHEDULES, ids=lambda s: s.name)
def test_schedules_run_at_the_configured_rate(synth: Synth, schedule: topology.ScheduleSpec) -> None:
    props = _rule(synth, schedule.name)
    minutes = context_of_cdk_json()["schedules"][schedule.name]
    assert props["ScheduleExpression"] == f"rate({minutes} minute{'s' if minutes != 1 else ''})"
    (target,) = props["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [synth.logical_id(f"Compute/{camel(schedule.target)}"), "Arn"]}
    assert "DeadLetterConfig" in target


def test_every_api_method_requires_a_cognito_token(synth: Synth) -> None:
    methods = synth.of_type("AWS::ApiGateway::Method")
    assert len(methods) == len(ROUTES)
    authorizer = synth.logical_id("Api/Authorizer")
    for method in methods.values():
        props = method["Properties"]
        assert props["AuthorizationType"] == "COGNITO_USER_POOLS"
        assert props["AuthorizerId"] == {"Ref": authorizer}
        assert props["Integration"]["Type"] == "AWS_PROXY"


def test_api_stage_logs_traces_and_throttles(synth: Synth) -> None:
    (stage,) = synth.of_type("AWS::ApiGateway::Stage").values()
    props = stage["Properties"]
    assert "DestinationArn" in props["AccessLogSetting"]
    assert props["TracingEnabled"] is True
    (settings,) = props["MethodSettings"]
    throttle = context_of_cdk_json()["apiThrottle"]
    assert settings["ThrottlingRateLimit"] == throttle["rateLimit"] and settings["ThrottlingBurstLimit"] == throttle["burstLimit"]
    assert settings["DataTraceEnabled"] is False and settings["LoggingLevel"] == "INFO"


def test_user_pool_is_invite_only_with_mfa_and_a_strong_password_policy(synth: Synth) -> None:
    (pool,) = synth.of_type("AWS::Cognito::UserPool").values()
    props = pool["Properties"]
    assert props["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"] is True
    assert props["MfaConfiguration"] == "ON"
    policy = props["Policies"]["PasswordPolicy"]
    assert policy["MinimumLength"] >= 12 and all(policy[k] for k in ("RequireLowercase", "RequireUppercase", "RequireNumbers", "RequireSymbols"))
    clients = synth.of_type("AWS::Cognito::UserPoolClient").values()
    assert len(clients) == 2 and all(c["Properties"]["GenerateSecret"] is False for c in clients)  # the CLI's and the console's: public, no secret


def test_the_app_client_has_no_oauth_flows_callback_or_admin_scope(synth: Synth) -> None:
    """CDK's defaults enable the implicit and code grants, https://example.com and the admin scope (issue 15).
    The CLI's client (the console's has its own code + PKCE flow: tests/infra/test_infra_console.py)."""
    client = synth.resources[synth.logical_id("Api/Users/CliClient")]
    props = client["Properties"]
    assert props.get("AllowedOAuthFlowsUserPoolClient") is False
    for unused in ("AllowedOAuthFlows", "AllowedOAuthScopes", "CallbackURLs", "LogoutURLs"):
        assert not props.get(unused), (unused, props.get(unused))
    assert set(props["ExplicitAuthFlows"]) == {"ALLOW_USER_SRP_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"}


def test_aurora_is_encrypted_private_protected_and_rotated(synth: Synth) -> None:
    (cluster,) = synth.of_type("AWS::RDS::DBCluster").values()
    props = cluster["Properties"]
    assert props["StorageEncrypted"] is True and props["DeletionProtection"] is True
    assert props["Engine"] == "aurora-postgresql"
    assert props["ServerlessV2ScalingConfiguration"]["MinCapacity"] == context_of_cdk_json()["aurora"]["minCapacity"]
    assert "MasterUserPassword" in props and "resolve:secretsmanager" in json.dumps(props["MasterUserPassword"])
    for instance in synth.of_type("AWS::RDS::DBInstance").values():
        assert instance["Properties"]["PubliclyAccessible"] is False
    rotations = list(synth.of_type("AWS::SecretsManager::RotationSchedule").values())
    days = context_of_cdk_json()["secretRotationDays"]
    assert len(rotations) == 2  # the master secret (migrate) and batchlane_app's (every other function)
    for rotation in rotations:
        assert rotation["Properties"]["RotationRules"]["ScheduleExpression"] == f"rate({days} days)"


def test_migrations_run_on_deploy_after_the_database_exists(synth: Synth) -> None:
    (migrations,) = synth.of_type("Custom::BatchlaneMigrations").values()
    assert migrations["Properties"]["MigrationsHash"]
    (cluster_id,) = synth.of_type("AWS::RDS::DBCluster")
    depends = migrations.get("DependsOn", [])
    assert cluster_id in depends
    assert set(synth.of_type("AWS::RDS::DBInstance")) <= set(depends)


REQUIRED_OUTPUTS = {
    "BucketName", "ServiceRoleArn", "CallerPolicyArn", "ConversionStateMachineArn", "BatchLaneStateMachineArn",
    "ApiUrl", "UserPoolId", "UserPoolClientId", "JobCreateFunctionName", "DatabaseSecretArn",
}  # fmt: skip


def test_outputs_give_the_cli_what_it_needs(synth: Synth) -> None:
    assert REQUIRED_OUTPUTS <= set(synth.template["Outputs"])


def test_alarms_cover_failures_dlqs_fallback_share_and_overdue_jobs(synth: Synth) -> None:
    alarms = [a["Properties"] for a in synth.of_type("AWS::CloudWatch::Alarm").values()]
    dumped = [json.dumps(a) for a in alarms]
    for spec in topology.STATE_MACHINES:
        machine_id = synth.logical_id(f"Workflows/{camel(spec.name)}")
        assert any("ExecutionsFailed" in d and machine_id in d for d in dumped), spec.name
    for dlq in ("Events/DeliveryDlq", "Compute/AsyncFailuresDlq"):
        queue_id = synth.logical_id(dlq)
        assert any("ApproximateNumberOfMessagesVisible" in d and queue_id in d for d in dumped), dlq
    (share,) = [a for a in alarms if "BatchRecordsFallback" in json.dumps(a)]
    assert share["Threshold"] == context_of_cdk_json()["fallbackAlarmPercent"]
    assert share["ComparisonOperator"] == "GreaterThanThreshold"
    assert any("JobsWaitingPastDeadline" in d for d in dumped)
    (estimated,) = [a for a in alarms if "BatchBillEstimated" in json.dumps(a)]  # a bill without its manifest
    assert (estimated["Threshold"], estimated["ComparisonOperator"]) == (1, "GreaterThanOrEqualToThreshold")


def test_dashboard_shows_jobs_by_state_records_and_saving(synth: Synth) -> None:
    (dashboard,) = synth.of_type("AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for metric in ("JobsByState", "BatchRecordsAccepted", "BatchRecordsFallback", "BatchSavingUsd"):
        assert metric in body
    assert "waiting_batch" in body


def test_an_existing_database_replaces_aurora(tmp_path: Path, layer_dir: Path) -> None:
    secret_arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:batchlane-db-AbCdEf"
    existing = synth_app(
        tmp_path,
        layer_dir,
        {
            "database": {
                "mode": "existing",
                "secretArn": secret_arn,
                "vpcId": "vpc-0123456789abcdef0",
                "subnetIds": ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"],
                "securityGroupId": "sg-0123456789abcdef0",
                "databaseName": "conversions",
                "host": "mine.proxy-abc.us-east-1.rds.amazonaws.com",
            }
        },
    )
    assert not existing.of_type("AWS::RDS::DBCluster") and not existing.of_type("AWS::EC2::VPC")
    for spec in topology.FUNCTIONS:
        props = existing.resources[existing.logical_id(f"Compute/{camel(spec.name)}")]["Properties"]
        if "db" in spec.needs:
            assert props["Environment"]["Variables"]["DATABASE_SECRET_ARN"] == secret_arn
            assert props["Environment"]["Variables"]["DATABASE_NAME"] == "conversions"
            assert props["Environment"]["Variables"]["DATABASE_HOST"] == "mine.proxy-abc.us-east-1.rds.amazonaws.com"
            assert props["VpcConfig"]["SubnetIds"] == ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]
            assert props["VpcConfig"]["SecurityGroupIds"] == ["sg-0123456789abcdef0"]
    assert existing.of_type("Custom::BatchlaneMigrations")
    migrate_env = existing.resources[existing.logical_id("Compute/Migrate")]["Properties"]["Environment"]["Variables"]
    assert migrate_env["DATABASE_SECRET_ARN"] == secret_arn and "DATABASE_APP_SECRET_ARN" not in migrate_env  # no batchlane_app made there
