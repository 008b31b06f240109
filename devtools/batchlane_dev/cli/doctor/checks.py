"""The static checks: credentials, region, model access, the Bedrock service role, the bucket,
the EventBridge rule and the database. Each takes the boto3 client(s) it reads and returns
:class:`~batchlane_dev.cli.doctor.results.Check` results; none changes anything.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import unquote

from batchlane import keys
from batchlane_dev.cli.doctor.results import Check, failed, passed, warned
from deployment.topology import BEDROCK_BATCH_DETAIL_TYPE, BEDROCK_EVENT_SOURCE

EXPECTED_EXPIRY_DAYS = 14  # infra/storage.py OBJECT_EXPIRY_DAYS
PROFILE_GEOGRAPHIES = ("us", "eu", "apac", "global", "us-gov", "jp", "au", "ca")


def error_text(exc: Exception) -> str:
    """One readable line for a boto3 failure (code + message), whatever its kind."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and response.get("Error"):
        return f"{response['Error'].get('Code', 'Error')}: {response['Error'].get('Message', '')}".strip()
    return f"{type(exc).__name__}: {exc}"


def error_code(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    return str(response.get("Error", {}).get("Code", "")) if isinstance(response, dict) else ""


# -- account -----------------------------------------------------------------------------


def check_credentials(sts: Any) -> tuple[Check, str | None]:
    """sts:GetCallerIdentity: whose credentials these are (the account the other checks read)."""
    try:
        identity = sts.get_caller_identity()
    except Exception as exc:  # no credentials at all surfaces as a botocore error, not a ClientError
        return failed("credentials", f"no usable AWS credentials ({error_text(exc)}): set AWS_PROFILE or run `aws sso login`"), None
    return passed("credentials", f"account {identity['Account']} as {identity['Arn']}"), str(identity["Account"])


def check_region(client_region: str | None, target_region: str | None) -> Check:
    if not target_region:
        return failed("region", "the stack has no Region output: redeploy with this version of batchlane")
    if client_region != target_region:
        return failed("region", f"the CLI talks to {client_region or 'no region'} but the stack runs in {target_region}: set AWS_REGION={target_region}")
    return passed("region", target_region)


# -- models ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelInfo:
    configured_id: str
    base_model_id: str
    name: str  # GetFoundationModel modelName; the per-model quota names end with it


def is_inference_profile(model_id: str) -> bool:
    return model_id.split(".", 1)[0] in PROFILE_GEOGRAPHIES and model_id.count(".") >= 2


def check_model(bedrock: Any, model_id: str) -> tuple[Check, ModelInfo | None]:
    """The profile (if any) is ACTIVE, the model exists in the region, and the account may use it.

    GetFoundationModelAvailability answers the account-level questions: authorisation,
    entitlement, region availability and the model's agreement (Anthropic's use-case form).
    """
    name = f"model {model_id}"
    base_id = model_id
    try:
        if is_inference_profile(model_id):
            profile = bedrock.get_inference_profile(inferenceProfileIdentifier=model_id)
            if profile.get("status") != "ACTIVE":
                return failed(name, f"inference profile is {profile.get('status')}"), None
            arns = [m["modelArn"] for m in profile.get("models", [])]
            if not arns:
                return failed(name, "inference profile routes to no model"), None
            base_id = arns[0].rsplit("/", 1)[-1]
        details = bedrock.get_foundation_model(modelIdentifier=base_id)["modelDetails"]
        availability = bedrock.get_foundation_model_availability(modelId=base_id)
    except Exception as exc:
        hint = " (no such model or profile in this region?)" if error_code(exc) in ("ResourceNotFoundException", "ValidationException") else ""
        return failed(name, f"{error_text(exc)}{hint}"), None
    problems = [
        f"{key}={availability.get(key)}"
        for key, good in (("authorizationStatus", "AUTHORIZED"), ("entitlementAvailability", "AVAILABLE"), ("regionAvailability", "AVAILABLE"))
        if availability.get(key) != good
    ]
    agreement = (availability.get("agreementAvailability") or {}).get("status", "AVAILABLE")
    if agreement != "AVAILABLE":
        problems.append(f"agreement {agreement}")
    info = ModelInfo(model_id, base_id, str(details.get("modelName", base_id)))
    if problems:
        return failed(name, f"{info.name}: {', '.join(problems)}: enable the model for this account in the Bedrock console"), info
    lifecycle = (details.get("modelLifecycle") or {}).get("status", "ACTIVE")
    if lifecycle != "ACTIVE":
        return warned(name, f"{info.name} is {lifecycle}: plan a move to a current model"), info
    return passed(name, f"{info.name} ({base_id}) is available to this account"), info


# -- the Bedrock service role ---------------------------------------------------------------


def _document(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return dict(json.loads(unquote(value)))
    return dict(value)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _allowed(statements: Iterable[dict[str, Any]], action: str, resource: str) -> bool:
    """Some Allow statement names the action and the resource (wildcards as IAM reads them)."""
    for statement in statements:
        if statement.get("Effect") != "Allow":
            continue
        actions = [a.lower() for a in _as_list(statement.get("Action", []))]
        if not any(fnmatchcase(action.lower(), a) for a in actions):
            continue
        if any(fnmatchcase(resource, r) for r in _as_list(statement.get("Resource", []))):
            return True
    return False


def role_statements(iam: Any, role_name: str) -> list[dict[str, Any]]:
    """Every statement of the role's inline and attached managed policies."""
    statements: list[dict[str, Any]] = []
    for page in iam.get_paginator("list_role_policies").paginate(RoleName=role_name):
        for policy_name in page["PolicyNames"]:
            document = _document(iam.get_role_policy(RoleName=role_name, PolicyName=policy_name)["PolicyDocument"])
            statements.extend(_as_list(document.get("Statement", [])))
    for page in iam.get_paginator("list_attached_role_policies").paginate(RoleName=role_name):
        for attached in page["AttachedPolicies"]:
            policy = iam.get_policy(PolicyArn=attached["PolicyArn"])["Policy"]
            version = iam.get_policy_version(PolicyArn=attached["PolicyArn"], VersionId=policy["DefaultVersionId"])
            statements.extend(_as_list(_document(version["PolicyVersion"]["Document"]).get("Statement", [])))
    return statements


def model_arns(model: ModelInfo, region: str, account_id: str) -> list[str]:
    """What bedrock:InvokeModel is checked against for a batch job of this model."""
    arns = [f"arn:aws:bedrock:{region}::foundation-model/{model.base_model_id}"]
    if model.configured_id != model.base_model_id:
        arns.insert(0, f"arn:aws:bedrock:{region}:{account_id}:inference-profile/{model.configured_id}")
    return arns


def check_service_role(iam: Any, role_arn: str, *, account_id: str, region: str, bucket: str, models: list[ModelInfo]) -> list[Check]:
    """Bedrock may assume the role only for this account (confused deputy), and the role reaches batch/* and the models."""
    role_name = role_arn.rsplit("/", 1)[-1]
    try:
        role = iam.get_role(RoleName=role_name)["Role"]
        statements = role_statements(iam, role_name)
    except Exception as exc:
        return [failed("service role", f"{role_arn}: {error_text(exc)}")]
    checks = [_trust_check(_document(role["AssumeRolePolicyDocument"]), account_id)]
    probe = f"{keys.BATCH_PREFIX}doctor/probe.jsonl"
    needed = [
        ("s3:GetObject", f"arn:aws:s3:::{bucket}/{probe}"),
        ("s3:PutObject", f"arn:aws:s3:::{bucket}/{probe}.out"),
        ("s3:ListBucket", f"arn:aws:s3:::{bucket}"),
    ]
    for model in models:
        needed.extend(("bedrock:InvokeModel", arn) for arn in model_arns(model, region, account_id))
    missing = [f"{action} on {resource}" for action, resource in needed if not _allowed(statements, action, resource)]
    if missing:
        checks.append(failed("service role policy", "missing: " + "; ".join(missing)))
    else:
        checks.append(
            passed(
                "service role policy",
                f"reads and writes s3://{bucket}/{keys.BATCH_PREFIX}*, invokes {', '.join(m.configured_id for m in models) or 'no model'}",
            )
        )
    return checks


def _trust_check(trust: dict[str, Any], account_id: str) -> Check:
    for statement in _as_list(trust.get("Statement", [])):
        services = _as_list((statement.get("Principal") or {}).get("Service", []))
        if statement.get("Effect") != "Allow" or "bedrock.amazonaws.com" not in services:
            continue
        source_accounts = _as_list(((statement.get("Condition") or {}).get("StringEquals") or {}).get("aws:SourceAccount", []))
        if account_id in source_accounts:
            return passed("service role trust", f"bedrock.amazonaws.com, only for account {account_id} (aws:SourceAccount)")
        return warned("service role trust", "bedrock.amazonaws.com may assume the role without an aws:SourceAccount condition (confused deputy)")
    return failed("service role trust", "bedrock.amazonaws.com may not assume the role: Bedrock cannot run batch jobs with it")


# -- the bucket --------------------------------------------------------------------------


def check_bucket(s3: Any, bucket: str, *, offline: bool = False) -> list[Check]:
    """Default encryption, the TLS-only bucket policy (not offline: loopback is plain HTTP), the expiry."""
    tls = passed("bucket TLS only", "offline: loopback endpoints are plain HTTP; not applicable") if offline else _tls_only(s3, bucket)
    return [_encryption(s3, bucket), tls, _lifecycle(s3, bucket)]


def _encryption(s3: Any, bucket: str) -> Check:
    try:
        rules = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"]
    except Exception as exc:
        return failed("bucket encryption", f"s3://{bucket}: {error_text(exc)}")
    algorithms = [r.get("ApplyServerSideEncryptionByDefault", {}).get("SSEAlgorithm") for r in rules]
    if any(a in ("AES256", "aws:kms", "aws:kms:dsse") for a in algorithms):
        return passed("bucket encryption", f"s3://{bucket}: {', '.join(a for a in algorithms if a)}")
    return failed("bucket encryption", f"s3://{bucket}: no default encryption")


def _tls_only(s3: Any, bucket: str) -> Check:
    try:
        policy = _document(s3.get_bucket_policy(Bucket=bucket)["Policy"])
    except Exception as exc:
        return failed("bucket TLS only", f"s3://{bucket}: {error_text(exc)}: plain-HTTP requests are not refused")
    for statement in _as_list(policy.get("Statement", [])):
        secure = ((statement.get("Condition") or {}).get("Bool") or {}).get("aws:SecureTransport")
        if statement.get("Effect") == "Deny" and str(secure).lower() == "false":
            return passed("bucket TLS only", f"s3://{bucket} refuses requests without TLS")
    return failed("bucket TLS only", f"s3://{bucket}: no Deny on aws:SecureTransport=false in the bucket policy")


def _lifecycle(s3: Any, bucket: str) -> Check:
    try:
        rules = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    except Exception as exc:
        return failed("bucket lifecycle", f"s3://{bucket}: {error_text(exc)}: working data never expires")
    days = [
        int(r["Expiration"]["Days"])
        for r in rules
        if r.get("Status") == "Enabled" and "Days" in (r.get("Expiration") or {}) and not (r.get("Filter") or {}).get("Prefix", r.get("Prefix", ""))
    ]
    if not days:
        return failed("bucket lifecycle", f"s3://{bucket}: no enabled whole-bucket expiry rule")
    if min(days) != EXPECTED_EXPIRY_DAYS:
        return warned("bucket lifecycle", f"s3://{bucket}: objects expire after {min(days)} days, not {EXPECTED_EXPIRY_DAYS}")
    return passed("bucket lifecycle", f"s3://{bucket}: objects expire after {EXPECTED_EXPIRY_DAYS} days")


# -- EventBridge -------------------------------------------------------------------------


def check_event_rule(events: Any, rule_name: str) -> Check:
    """The rule that ends batch waits: enabled, on aws.bedrock batch state changes, with a target."""
    name = "batch state-change rule"
    try:
        rule = events.describe_rule(Name=rule_name)
        targets = events.list_targets_by_rule(Rule=rule_name).get("Targets", [])
    except Exception as exc:
        return failed(name, f"{rule_name}: {error_text(exc)}")
    pattern = json.loads(rule.get("EventPattern") or "{}")
    if BEDROCK_EVENT_SOURCE not in pattern.get("source", []) or BEDROCK_BATCH_DETAIL_TYPE not in pattern.get("detail-type", []):
        return failed(name, f"{rule_name} does not match {BEDROCK_EVENT_SOURCE} {BEDROCK_BATCH_DETAIL_TYPE!r}: {rule.get('EventPattern')}")
    if rule.get("State") != "ENABLED":
        return failed(name, f"{rule_name} is {rule.get('State')}: batch jobs end only by the sweeper")
    if not targets:
        return failed(name, f"{rule_name} has no target")
    return passed(name, f"{rule_name}: {BEDROCK_BATCH_DETAIL_TYPE!r} → {targets[0]['Arn'].rsplit(':', 1)[-1]}")


# -- the database ------------------------------------------------------------------------


def check_database(lambda_client: Any, function_name: str) -> list[Check]:
    """Asks the deployed migrate function (inside the VPC) for the migrations and the session's TLS."""
    try:
        response = lambda_client.invoke(FunctionName=function_name, Payload=json.dumps({"action": "status"}).encode())
        body = json.loads(response["Payload"].read() or b"{}")
    except Exception as exc:
        return [failed("database", f"invoking {function_name}: {error_text(exc)}")]
    if response.get("FunctionError"):
        return [failed("database", f"{body.get('errorType', 'Error')}: {body.get('errorMessage', '')}")]
    pending = body.get("pending") or []
    database = body.get("database", "?")
    if pending:
        migrations = failed("database migrations", f"{database}: {len(pending)} pending ({', '.join(pending)}): run the migrate function or redeploy")
    else:
        migrations = passed("database migrations", f"{database}: {len(body.get('applied') or [])} applied, none pending")
    if body.get("tls"):
        tls = passed("database TLS", f"{database}: the functions' session is encrypted")
    elif body.get("loopback"):
        tls = passed("database TLS", f"{database}: loopback or Unix socket (offline), TLS not needed")
    else:
        tls = failed("database TLS", f"{database}: the functions connect without TLS")
    return [migrations, tls]
