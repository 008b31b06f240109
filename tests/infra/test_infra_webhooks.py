"""Signed webhooks in the template: who may read or rotate the signing secret, the delivery
function and its machine's retry ladder, the rule that starts deliveries, the admin group."""

from __future__ import annotations

import json
from typing import Any

from infra_testlib import Synth, as_list, camel, statements_of

from deployment import topology

SECRET_PATH = "Webhooks/SigningSecret"


def _secret_id(synth: Synth) -> str:
    return synth.logical_id(SECRET_PATH)


def _grants_on_secret(synth: Synth) -> dict[str, set[str]]:
    """{role logical id: actions} for every IAM statement whose resource is the signing secret."""
    secret = {"Ref": _secret_id(synth)}
    grants: dict[str, set[str]] = {}
    for policy in synth.of_type("AWS::IAM::Policy").values():
        for statement in statements_of(policy):
            if secret in as_list(statement["Resource"]):
                for role in policy["Properties"]["Roles"]:
                    grants.setdefault(role["Ref"], set()).update(as_list(statement["Action"]))
    return grants


def test_only_the_delivery_function_reads_the_secret_and_only_the_api_rotates_it(synth: Synth) -> None:
    role = lambda name: synth.logical_id(f"Compute/{camel(name)}Role")  # noqa: E731
    assert _grants_on_secret(synth) == {
        role("webhook_deliver"): {"secretsmanager:GetSecretValue"},
        role("api"): {"secretsmanager:DescribeSecret", "secretsmanager:ListSecretVersionIds", "secretsmanager:PutSecretValue"},
    }
    # No wildcard grant reaches it either
    for policy in synth.of_type("AWS::IAM::Policy").values():
        for statement in statements_of(policy):
            if any(a.startswith("secretsmanager:") for a in as_list(statement["Action"])):
                assert "*" not in as_list(statement["Resource"])


def test_the_secret_is_generated_never_in_the_template_and_only_its_arn_reaches_two_functions(synth: Synth) -> None:
    secret = synth.resources[_secret_id(synth)]["Properties"]
    assert "SecretString" not in secret and secret["GenerateSecretString"]["PasswordLength"] >= 32
    holders = set()
    for logical_id, fn in synth.of_type("AWS::Lambda::Function").items():
        env = fn["Properties"].get("Environment", {}).get("Variables", {})
        if "WEBHOOK_SECRET_ARN" in env:
            assert env["WEBHOOK_SECRET_ARN"] == {"Ref": _secret_id(synth)}
            holders.add(logical_id)
    assert holders == {synth.logical_id("Compute/WebhookDeliver"), synth.logical_id("Compute/Api")}
    outputs = synth.template["Outputs"]
    assert outputs["WebhookSecretArn"]["Value"] == {"Ref": _secret_id(synth)}


def test_the_delivery_function_is_short_and_a_state_change_rule_feeds_the_dispatcher(synth: Synth) -> None:
    deliver = synth.resources[synth.logical_id("Compute/WebhookDeliver")]["Properties"]
    assert deliver["Timeout"] == 30 and deliver["MemorySize"] == 256
    rule = synth.resources[synth.logical_id("Events/JobStateChangeWebhooks")]["Properties"]
    assert rule["EventPattern"] == {"source": ["batchlane"], "detail-type": ["Conversion Job State Change"]}
    (target,) = rule["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [synth.logical_id("Compute/WebhookDispatch"), "Arn"]}
    assert "DeadLetterConfig" in target and target["RetryPolicy"]["MaximumRetryAttempts"] > 0


def _delivery_definition(synth: Synth) -> tuple[dict[str, Any], dict[str, Any]]:
    (machine,) = [m for m in synth.of_type("AWS::StepFunctions::StateMachine").values() if m["Properties"]["StateMachineName"].endswith("-webhook-delivery")]
    text, substitutions = machine["Properties"]["DefinitionString"]["Fn::Sub"]
    for key, value in substitutions.items():
        if isinstance(value, str):
            text = text.replace("${" + key + "}", value)
    return json.loads(text.replace('"${webhook_deliver_arn}"', '"arn"')), substitutions


def test_the_retry_ladder_is_exponential_capped_jittered_and_about_24_hours(synth: Synth) -> None:
    definition, _ = _delivery_definition(synth)
    ladder = next(r for r in definition["States"]["Deliver"]["Retry"] if "DeliveryFailed" in r["ErrorEquals"])
    assert ladder["JitterStrategy"] == "FULL" and ladder["BackoffRate"] == 2
    waits = [min(ladder["IntervalSeconds"] * ladder["BackoffRate"] ** n, ladder["MaxDelaySeconds"]) for n in range(ladder["MaxAttempts"])]
    assert 23 * 3600 <= sum(waits) <= 25 * 3600, sum(waits) / 3600  # docs/operations.md: "up to ~24 h"
    assert definition["States"]["Deliver"]["Catch"][0]["Next"] == "GiveUp"
    spec = next(s for s in topology.STATE_MACHINES if s.name == "webhook_delivery")
    assert int(spec.settings["delivery_max_attempts"]) == ladder["MaxAttempts"]


def test_rotation_is_an_admin_group_of_the_user_pool(synth: Synth) -> None:
    groups = {g["Properties"]["GroupName"] for g in synth.of_type("AWS::Cognito::UserPoolGroup").values()}
    assert groups == {"batchlane-admins", "batchlane-priority"}  # admins rotate secrets; priority may force on-demand
    api_env = synth.resources[synth.logical_id("Compute/Api")]["Properties"]["Environment"]["Variables"]
    assert api_env["BATCHLANE_ADMIN_GROUP"] == "batchlane-admins" and api_env["BATCHLANE_WEBHOOK_ALLOW_PRIVATE"] == "false"
