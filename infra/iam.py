"""Bedrock batch access: the service role Bedrock assumes, and the caller policy.

* **Service role** — assumable only by ``bedrock.amazonaws.com`` acting for a
  model-invocation job of THIS account in THIS region (``aws:SourceAccount`` +
  ``aws:SourceArn``). It reads and writes ``batch/*`` of the bucket and may invoke the
  configured Claude models / inference profiles, nothing else.
* **Caller policy** — a managed policy with what a submitter needs: create / get / stop /
  list model-invocation jobs, tag them, pass the service role (to Bedrock only), and S3
  on ``batch/*``. Attached to the Lambdas whose topology ``needs`` has ``bedrock_batch``
  and exported (output ``CallerPolicyArn``) so an existing application role can attach it.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Aws, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from deployment.grants import CAPABILITY_GRANTS, Grant, folder_source_resource, is_inference_profile, owner_folder_resource
from infra.config import InfraConfig
from infra.nag import acknowledge, arn_token
from infra.storage import BATCH_PREFIX


def model_resource_arns(stack: Stack, model_ids: tuple[str, ...]) -> list[str]:
    """ARNs bedrock:InvokeModel needs for each configured model.

    A plain model id is a foundation model in this region. An inference profile needs the
    profile itself and the foundation model in every region the profile routes to — that
    set belongs to AWS and changes, hence the region wildcard (acknowledged where used).
    """
    arns: list[str] = []
    for model_id in model_ids:
        if is_inference_profile(model_id):
            arns.append(stack.format_arn(service="bedrock", resource="inference-profile", resource_name=model_id))
            base = model_id.split(".", 1)[1]
            arns.append(f"arn:{Aws.PARTITION}:bedrock:*::foundation-model/{base}")
        else:
            arns.append(f"arn:{Aws.PARTITION}:bedrock:{Aws.REGION}::foundation-model/{model_id}")
    return arns


def invoke_model_statement(stack: Stack, model_ids: tuple[str, ...]) -> iam.PolicyStatement:
    return iam.PolicyStatement(
        sid="InvokeConfiguredModels",
        actions=["bedrock:InvokeModel"],
        resources=model_resource_arns(stack, model_ids),
    )


def acknowledge_model_wildcards(scope: Construct, stack: Stack, model_ids: tuple[str, ...]) -> None:
    for model_id in model_ids:
        if is_inference_profile(model_id):
            base = model_id.split(".", 1)[1]
            acknowledge(
                scope,
                f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/{base}]",
                f"Cross-region inference profile {model_id} routes to this one model in any region of its "
                "geography; AWS owns that region list, so the region is a wildcard while the model is named.",
            )


def s3_prefix_statements(bucket: s3.IBucket, prefix: str, *, read: bool, write: bool) -> list[iam.PolicyStatement]:
    """Object access under one prefix, and ListBucket limited to that prefix."""
    actions = (["s3:GetObject"] if read else []) + (["s3:PutObject", "s3:AbortMultipartUpload"] if write else [])
    statements = [iam.PolicyStatement(actions=actions, resources=[bucket.arn_for_objects(f"{prefix}*")])]
    if read:
        statements.append(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{prefix}*"]}},
            )
        )
    return statements


@dataclass(frozen=True)
class GrantTargets:
    """The stack's ARNs for each resource kind of ``deployment.grants`` (None: not known here)."""

    stack: Stack
    bucket: s3.IBucket
    model_ids: tuple[str, ...]
    bedrock_service_role_arn: str
    database_secret: secretsmanager.ISecret | None = None  # the application role's
    database_master_secret: secretsmanager.ISecret | None = None  # the cluster's master user's (migrate only)
    conversion_state_machine_arn: str | None = None
    batch_lane_state_machine_arn: str | None = None
    intake_state_machine_arn: str | None = None
    webhook_delivery_state_machine_arn: str | None = None
    webhook_secret: secretsmanager.ISecret | None = None
    webhook_key: kms.IKey | None = None
    folder_sources: tuple[str, ...] = ()  # "bucket/prefix" (context folderSources)
    folder_job_state_machine_arn: str | None = None
    folder_access_role_arn: str | None = None
    estimate_state_machine_arn: str | None = None

    def arns(self, grant: Grant) -> list[str]:
        return [arn for kind in grant.resources for arn in self._arns(kind, grant.prefix)]

    def _arns(self, kind: str, prefix: str) -> list[str]:
        stack = self.stack
        if kind == "objects":
            return [self.bucket.arn_for_objects(f"{prefix}*")]
        if kind == "bucket":
            return [self.bucket.bucket_arn]
        if kind == "models":
            return model_resource_arns(stack, self.model_ids)
        if kind == "batch_jobs":
            return [stack.format_arn(service="bedrock", resource="model-invocation-job", resource_name="*")]
        if kind == "bedrock_service_role":
            return [self.bedrock_service_role_arn]
        if kind == "default_event_bus":
            return [stack.format_arn(service="events", resource="event-bus", resource_name="default")]
        if kind == "any":
            return ["*"]
        secret = {"database_secret": self.database_secret, "database_master_secret": self.database_master_secret}.get(kind)
        if secret is not None:
            # What Secret.grant_read uses: a partial ARN (imported by name) matches the random suffix.
            return [secret.secret_full_arn or f"{secret.secret_arn}-??????"]
        if kind == "conversion_state_machine" and self.conversion_state_machine_arn:
            return [self.conversion_state_machine_arn]
        if kind == "batch_lane_state_machine" and self.batch_lane_state_machine_arn:
            return [self.batch_lane_state_machine_arn]
        if kind == "intake_state_machine" and self.intake_state_machine_arn:
            return [self.intake_state_machine_arn]
        if kind == "webhook_delivery_state_machine" and self.webhook_delivery_state_machine_arn:
            return [self.webhook_delivery_state_machine_arn]
        if kind == "folder_objects":
            return sorted({f"arn:{Aws.PARTITION}:s3:::{folder_source_resource(source)}*" for source in self.folder_sources})
        if kind == "folder_buckets":
            return sorted({f"arn:{Aws.PARTITION}:s3:::{folder_source_resource(source).split('/', 1)[0]}" for source in self.folder_sources})
        if kind == "owner_folder_objects":
            return sorted({f"arn:{Aws.PARTITION}:s3:::{owner_folder_resource(source)}*" for source in self.folder_sources})
        if kind == "folder_access_role" and self.folder_access_role_arn:
            return [self.folder_access_role_arn]
        if kind == "folder_job_state_machine" and self.folder_job_state_machine_arn:
            return [self.folder_job_state_machine_arn]
        if kind == "estimate_state_machine" and self.estimate_state_machine_arn:
            return [self.estimate_state_machine_arn]
        if kind == "workflow_executions":
            machines = (self.conversion_state_machine_arn, self.intake_state_machine_arn, self.folder_job_state_machine_arn)
            return [execution_arns(arn) for arn in machines if arn]
        if kind == "webhook_secret" and self.webhook_secret is not None:
            return [self.webhook_secret.secret_arn]
        if kind == "webhook_key" and self.webhook_key is not None:
            return [self.webhook_key.key_arn]
        raise ValueError(f"resource kind {kind!r} has no ARN in infra/iam.py GrantTargets")


def execution_arns(state_machine_arn: str) -> str:
    """Every execution of a state machine: ``arn:…:execution:<machine>:*`` (the machine's ARN is a string of tokens
    around a literal ``:stateMachine:``, which CloudFormation keeps)."""
    return f"{state_machine_arn.replace(':stateMachine:', ':execution:')}:*"


def grant_statements(grants: tuple[Grant, ...], targets: GrantTargets) -> list[iam.PolicyStatement]:
    """``deployment.grants`` grants as policy statements, one per grant (none for a grant with no resource:
    folder grants when no folderSources are configured)."""
    resolved = [(grant, targets.arns(grant)) for grant in grants]
    return [
        iam.PolicyStatement(
            sid=grant.sid,
            actions=list(grant.actions),
            resources=resources,
            conditions={op: {k: v if isinstance(v, str) else list(v) for k, v in block.items()} for op, block in grant.all_conditions().items()} or None,
        )
        for grant, resources in resolved
        if resources
    ]


class BedrockBatchAccess(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: InfraConfig, bucket: s3.IBucket) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        job_arns = stack.format_arn(service="bedrock", resource="model-invocation-job", resource_name="*")
        batch_objects = f"{arn_token(bucket)}/{BATCH_PREFIX}*"

        self.service_role = iam.Role(
            self,
            "ServiceRole",
            description="Assumed by Amazon Bedrock to run batchlane's batch inference jobs",
            assumed_by=iam.ServicePrincipal(
                "bedrock.amazonaws.com",
                conditions={
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                    "ArnLike": {"aws:SourceArn": job_arns},
                },
            ),
        )
        for statement in s3_prefix_statements(bucket, BATCH_PREFIX, read=True, write=True):
            statement.add_condition("StringEquals", {"aws:ResourceAccount": Aws.ACCOUNT_ID})
            self.service_role.add_to_policy(statement)
        self.service_role.add_to_policy(invoke_model_statement(stack, config.model_ids))

        # What deployment.grants says "bedrock_batch" is, as one managed policy: attached to every
        # function that needs it, and exported so an existing application role can attach it.
        targets = GrantTargets(stack=stack, bucket=bucket, model_ids=config.model_ids, bedrock_service_role_arn=self.service_role.role_arn)
        self.caller_policy = iam.ManagedPolicy(
            self,
            "CallerPolicy",
            description="Submit and manage batchlane's Bedrock batch inference jobs",
            statements=grant_statements(CAPABILITY_GRANTS["bedrock_batch"], targets),
        )

        for target in (self.service_role, self.caller_policy):
            acknowledge(
                target,
                f"AwsSolutions-IAM5[Resource::{batch_objects}]",
                "Batch input/output object keys are created per job under the batch/ prefix; access is limited to that prefix.",
            )
            acknowledge_model_wildcards(target, stack, config.model_ids)
        acknowledge(
            self.service_role,
            "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:<AWS::Region>:<AWS::AccountId>:model-invocation-job/*]",
            "The trust policy's aws:SourceArn matches any model-invocation job of this account and region: job ids are assigned by Bedrock at creation.",
        )
        acknowledge(
            self.caller_policy,
            "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:<AWS::Region>:<AWS::AccountId>:model-invocation-job/*]",
            "Model-invocation job ids are assigned by Bedrock at creation; access is limited to jobs of this account and region.",
        )
        acknowledge(
            self.caller_policy,
            "AwsSolutions-IAM5[Resource::*]",
            "bedrock:ListModelInvocationJobs supports no resource-level permissions (Service Authorization Reference); it is the only action on '*'.",
        )
