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

import re

from aws_cdk import Aws, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.config import InfraConfig
from infra.nag import acknowledge, arn_token
from infra.storage import BATCH_PREFIX

# Cross-region inference profiles are "<geo>.<provider>.<model>": us., eu., apac., global., ...
_PROFILE = re.compile(r"^[a-z]{2,7}\.[a-z0-9-]+\.[A-Za-z0-9.:_-]+$")
_PROVIDERS = (
    "anthropic.",
    "amazon.",
    "meta.",
    "mistral.",
    "cohere.",
    "ai21.",
    "deepseek.",
    "writer.",
    "openai.",
    "qwen.",
)


def is_inference_profile(model_id: str) -> bool:
    return bool(_PROFILE.match(model_id)) and not model_id.startswith(_PROVIDERS)


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

        self.caller_policy = iam.ManagedPolicy(
            self,
            "CallerPolicy",
            description="Submit and manage batchlane's Bedrock batch inference jobs",
            statements=[
                iam.PolicyStatement(
                    sid="ManageBatchJobs",
                    actions=[
                        "bedrock:CreateModelInvocationJob",
                        "bedrock:GetModelInvocationJob",
                        "bedrock:StopModelInvocationJob",
                        "bedrock:TagResource",
                    ],
                    resources=[job_arns, *model_resource_arns(stack, config.model_ids)],
                ),
                iam.PolicyStatement(
                    sid="ListBatchJobs",  # ListModelInvocationJobs has no resource-level permission
                    actions=["bedrock:ListModelInvocationJobs"],
                    resources=["*"],
                ),
                iam.PolicyStatement(
                    sid="PassServiceRoleToBedrock",
                    actions=["iam:PassRole"],
                    resources=[self.service_role.role_arn],
                    conditions={"StringEquals": {"iam:PassedToService": "bedrock.amazonaws.com"}},
                ),
                *s3_prefix_statements(bucket, BATCH_PREFIX, read=True, write=True),
            ],
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
