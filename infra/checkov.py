"""checkov (3.3.30, tests/infra/test_infra_checkov.py) on the synthesized template: what we do not fix, and why.

One reviewed list, ``SKIPS``: (check, resource type, construct paths, reason). :class:`CheckovSkips` writes each
as a ``checkov:skip`` entry in the matching resources' template ``Metadata`` (``{"checkov": {"skip": [{"id",
"comment"}]}}``, where checkov reads it), so any checkov run on the synthesized template reports nothing else.
Paths are ``fnmatch`` patterns under the stack (``Compute/*/Resource``). An entry with ``unless`` is left out
when that setting is configured: the resource then passes the check itself (a custom domain's certificate, a web
ACL). What was fixed instead (DLQ encryption, CloudFront logs, the console's TLS): docs/deploy.md "Outside checkers".
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

import jsii
from aws_cdk import CfnResource, IAspect, Stack
from constructs import IConstruct

from deployment import topology
from infra.config import InfraConfig

LAMBDA = "AWS::Lambda::Function"


def _function_paths(names: list[str]) -> tuple[str, ...]:
    return tuple(f"Compute/{''.join(part.title() for part in name.split('_'))}/Resource" for name in names)


# Invoked by EventBridge (rules, schedules): asynchronous, so they carry a DLQ (infra/compute.py); the rest are
# called synchronously and answer their caller.
_ASYNC = {r.target for r in topology.RULES} | {s.target for s in topology.SCHEDULES}
_SYNC_FUNCTIONS = _function_paths([f.name for f in topology.FUNCTIONS if f.name not in _ASYNC])
_CDK_HANDLERS = (
    "Database/MigrationsProvider/framework-onEvent/Resource",
    "Custom::VpcRestrictDefaultSGCustomResourceProvider/Handler",
    "AWS679f53fac002430cb0da5b7982bd2287/Resource",  # AwsCustomResource's singleton: puts the console's CORS rule (infra/console.py)
)


@dataclass(frozen=True)
class Skip:
    check: str
    resource_type: str
    paths: tuple[str, ...]
    reason: str
    unless: str | None = None  # an InfraConfig field: when set, the resource passes the check and is not skipped


SKIPS: tuple[Skip, ...] = (
    Skip(
        "CKV_AWS_115",
        LAMBDA,
        ("*",),
        "No reserved concurrency: it is a floor and a ceiling, AWS keeps 100 of the account's limit unreserved and new "
        "accounts start low, so a reservation can fail the first deploy; chunk admission per owner bounds the load instead "
        "(context chunkSlots; reservedConcurrency reserves on request).",
    ),
    Skip(
        "CKV_AWS_116",
        LAMBDA,
        _SYNC_FUNCTIONS,
        "Invoked synchronously (a Step Functions task that retries and catches, or API Gateway, whose caller sees the error): "
        "a Lambda DLQ only holds failed asynchronous invocations, and nothing here is invoked asynchronously.",
    ),
    Skip(
        "CKV_AWS_116",
        LAMBDA,
        _CDK_HANDLERS,
        "CDK's own custom-resource handler, invoked by CloudFormation during a deploy: a failed or lost run fails the "
        "deployment visibly (CloudFormation waits for its answer); nothing is left to replay.",
    ),
    Skip(
        "CKV_AWS_117",
        LAMBDA,
        _CDK_HANDLERS,
        "CDK's own custom-resource handler: it only calls AWS APIs (Lambda, EC2, S3 PutBucketCors) and reads no data; inside the VPC it would need NAT or endpoints for nothing.",
    ),
    Skip(
        "CKV_AWS_173",
        LAMBDA,
        ("*",),
        "Environment variables hold names, ARNs and limits only; secrets are read from Secrets Manager at run time. Lambda "
        "encrypts them at rest with its service key; a CMK would add key upkeep for no data worth it.",
    ),
    Skip(
        "CKV_AWS_158",
        "AWS::Logs::LogGroup",
        ("*",),
        "CloudWatch Logs encrypts every group at rest; handlers log ids, counts and errors through one logger (observability.py), "
        "no secrets, so a CMK per group would add key upkeep and cost for no data worth it.",
    ),
    Skip(
        "CKV_AWS_149",
        "AWS::SecretsManager::Secret",
        ("Database/Cluster/Secret/Resource", "Database/AppSecret/Resource", "Webhooks/SigningSecret/Resource"),
        "Encrypted with the account's aws/secretsmanager key; who may read each secret is the functions' IAM grants "
        "(capability grants, deployment/grants.py), which a CMK would only repeat.",
    ),
    Skip(
        "CKV_AWS_118",
        "AWS::RDS::DBInstance",
        ("Database/Cluster/*/Resource",),
        "Aurora Serverless v2: CloudWatch's cluster metrics and the alarms (infra/monitoring.py) watch it; enhanced "
        "monitoring would add a role and per-second OS metrics billed to CloudWatch Logs for no decision they change.",
    ),
    Skip(
        "CKV_AWS_162",
        "AWS::RDS::DBCluster",
        ("Database/Cluster/Resource",),
        "Functions reach the cluster through RDS Proxy with Secrets Manager credentials and verify-full TLS (decision 0004); "
        "no client signs in with IAM database tokens.",
    ),
    Skip(
        "CKV_AWS_120",
        "AWS::ApiGateway::Stage",
        ("Api/RestApi/DeploymentStage.*/Resource",),
        "No API cache: every answer is per owner and live (job status, presigned URLs); a cache would serve stale or another key's answers and bills per hour.",
    ),
    Skip(
        "CKV_AWS_21",
        "AWS::S3::Bucket",
        ("Storage/Bucket/Resource",),
        "Working data that expires after 14 days and is rebuilt from the upload; versions would keep every deleted page "
        "image and result, billed, past their expiry.",
    ),
    Skip(
        "CKV_AWS_21",
        "AWS::S3::Bucket",
        ("Storage/AccessLogs/Resource", "Console/Logs/Resource"),
        "Log buckets, written only by the logging services and expired after 90 days; versions would keep what expiry removes.",
    ),
    Skip("CKV_AWS_21", "AWS::S3::Bucket", ("Console/Site/Resource",), "The console's built files: `make deploy` uploads them again from console/dist."),
    Skip(
        "CKV_AWS_18",
        "AWS::S3::Bucket",
        ("Storage/AccessLogs/Resource",),
        "This IS the access-log bucket the others log to; logging it to itself would loop.",
    ),
    Skip(
        "CKV_AWS_174",
        "AWS::CloudFront::Distribution",
        ("Console/Distribution/Resource",),
        "No custom domain configured: the default *.cloudfront.net certificate cannot take a minimum TLS version (it accepts "
        "TLS 1.0); set consoleDomain + consoleCertificateArn (docs/deploy.md) and the check passes.",
        unless="console_certificate_arn",
    ),
    Skip(
        "CKV_AWS_68",
        "AWS::CloudFront::Distribution",
        ("Console/Distribution/Resource",),
        "No AWS WAF web ACL unless consoleWebAclArn names one (a web ACL has a fixed monthly cost): static files plus an API "
        "that is Cognito-authorized and rate-limited per owner.",
        unless="console_web_acl_arn",
    ),
)


@jsii.implements(IAspect)
class CheckovSkips:
    """Writes the ``SKIPS`` that apply to each resource into its template Metadata (``checkov.skip``)."""

    def __init__(self, config: InfraConfig) -> None:
        self._skips = [s for s in SKIPS if not (s.unless and getattr(config, s.unless))]

    def visit(self, node: IConstruct) -> None:
        if not isinstance(node, CfnResource):
            return
        path = node.node.path.removeprefix(f"{Stack.of(node).node.path}/")
        found = [
            {"id": s.check, "comment": s.reason}
            for s in self._skips
            if node.cfn_resource_type == s.resource_type and any(fnmatch.fnmatchcase(path, pattern) for pattern in s.paths)
        ]
        if found:
            node.add_metadata("checkov", {"skip": found})
