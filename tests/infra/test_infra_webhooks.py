"""Signed webhooks in the template: who may read the deployment's secret, who may seal and open owners' secrets with
the webhook key (and under which encryption context), the delivery function and its machine's retry ladder, the rule
that starts deliveries, the admin group."""

from __future__ import annotations

import json
from typing import Any

from infra_testlib import Synth, as_list, camel, statements_of

from deployment import topology

SECRET_PATH = "Webhooks/SigningSecret"
KEY_PATH = "Webhooks/SecretKey"


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


def test_only_the_delivery_function_reads_the_deployments_secret_and_nobody_rotates_it(synth: Synth) -> None:
    """Issue 40.4: the deployment's secret only signs beside each owner's during the migration; the API no longer
    describes or rotates it (each owner rotates their own)."""
    role = lambda name: synth.logical_id(f"Compute/{camel(name)}Role")  # noqa: E731
    assert _grants_on_secret(synth) == {role("webhook_deliver"): {"secretsmanager:GetSecretValue"}}
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
    assert holders == {synth.logical_id("Compute/WebhookDeliver")}
    outputs = synth.template["Outputs"]
    assert outputs["WebhookSecretArn"]["Value"] == {"Ref": _secret_id(synth)}


def _grants_on_key(synth: Synth) -> dict[str, list[tuple[set[str], Any]]]:
    """{role logical id: [(actions, conditions)]} of every IAM statement on the webhook key, and that no statement
    of any role reaches KMS on another resource (no ``*``)."""
    key = {"Fn::GetAtt": [synth.logical_id(KEY_PATH), "Arn"]}
    grants: dict[str, list[tuple[set[str], Any]]] = {}
    for policy in synth.of_type("AWS::IAM::Policy").values():
        for statement in statements_of(policy):
            actions = set(as_list(statement["Action"]))
            if not any(a.startswith("kms:") for a in actions):
                continue
            if key not in as_list(statement["Resource"]):
                continue
            for role in policy["Properties"]["Roles"]:
                grants.setdefault(role["Ref"], []).append((actions, statement.get("Condition")))
    return grants


def test_owners_secrets_are_sealed_by_the_api_and_opened_by_the_delivery_only_under_an_owners_context(synth: Synth) -> None:
    """Least privilege (issue 40.4): the API may only Encrypt, webhook_deliver only Decrypt, both only with the
    purpose and an owner in the encryption context; no other function may use the key at all."""
    role = lambda name: synth.logical_id(f"Compute/{camel(name)}Role")  # noqa: E731
    context = {
        "StringEquals": {"kms:EncryptionContext:batchlane-purpose": "webhook-signing"},
        "StringLike": {"kms:EncryptionContext:batchlane-owner": "?*"},
    }
    assert _grants_on_key(synth) == {role("api"): [({"kms:Encrypt"}, context)], role("webhook_deliver"): [({"kms:Decrypt"}, context)]}
    key = synth.resources[synth.logical_id(KEY_PATH)]["Properties"]
    assert key["EnableKeyRotation"] is True
    holders = {
        logical_id: fn["Properties"]["Environment"]["Variables"]["WEBHOOK_KEY_ARN"]
        for logical_id, fn in synth.of_type("AWS::Lambda::Function").items()
        if "WEBHOOK_KEY_ARN" in fn["Properties"].get("Environment", {}).get("Variables", {})
    }
    key_arn = {"Fn::GetAtt": [synth.logical_id(KEY_PATH), "Arn"]}
    assert holders == {synth.logical_id("Compute/Api"): key_arn, synth.logical_id("Compute/WebhookDeliver"): key_arn}
    for policy in synth.of_type("AWS::IAM::Policy").values():
        for statement in statements_of(policy):
            if any(a.startswith("kms:") for a in as_list(statement["Action"])):
                assert "*" not in as_list(statement["Resource"]), statement


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


def test_the_admin_and_priority_groups_are_groups_of_the_user_pool(synth: Synth) -> None:
    groups = {g["Properties"]["GroupName"] for g in synth.of_type("AWS::Cognito::UserPoolGroup").values()}
    assert groups == {"batchlane-admins", "batchlane-priority"}  # admins set budgets; priority may force on-demand
    api_env = synth.resources[synth.logical_id("Compute/Api")]["Properties"]["Environment"]["Variables"]
    assert api_env["BATCHLANE_ADMIN_GROUP"] == "batchlane-admins" and api_env["BATCHLANE_WEBHOOK_ALLOW_PRIVATE"] == "false"
