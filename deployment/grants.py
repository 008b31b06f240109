"""What each capability in ``topology.FunctionSpec.needs`` grants: IAM actions on a kind of resource.

One piece of data read by both sides, so they cannot drift: ``infra/`` resolves each
resource kind to the stack's ARNs and writes the policies; the offline stack
(``batchlane_dev.local.iam``) resolves the same kinds to the emulated ARNs and refuses every
handler call the grants do not cover, with AccessDenied, as AWS would.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from batchlane.contract import EVENT_SOURCE, WEBHOOK_OWNER_CONTEXT, WEBHOOK_PURPOSE, WEBHOOK_PURPOSE_CONTEXT

ResourceKind = Literal[
    "objects",  # objects of the bucket under ``prefix`` (arn:aws:s3:::bucket/prefix*)
    "bucket",  # the bucket itself (ListBucket); ``prefix`` becomes an s3:prefix condition
    "database_secret",  # the application role's credentials secret (batchlane_app)
    "database_master_secret",  # the cluster's master credentials secret (migrate only)
    "models",  # the configured models: foundation models and inference profiles
    "batch_jobs",  # model-invocation jobs of this account and region (ids assigned by Bedrock)
    "bedrock_service_role",  # the role Bedrock assumes for batch jobs
    "conversion_state_machine",
    "batch_lane_state_machine",
    "intake_state_machine",
    "webhook_delivery_state_machine",
    "webhook_secret",  # the deployment's webhook signing secret (the migration's)
    "webhook_key",  # the KMS key that seals each owner's webhook signing secret
    "default_event_bus",
    "any",  # "*": only for actions AWS gives no resource-level permission
    "folder_objects",  # objects under each configured folder source (arn:aws:s3:::bucket/prefix*)
    "folder_buckets",  # the folder sources' buckets (ListBucket; check_allowed refuses other prefixes first)
    "folder_job_state_machine",
    "workflow_executions",  # executions of the conversion, intake and folder-job machines (arn:…:execution:<machine>:*)
    "folder_access_role",  # the role folder functions assume, tagged with the job's owner (folder_access_grants)
    "owner_folder_objects",  # objects under each folder source, ``{owner}`` as ${aws:PrincipalTag/owner}
    "estimate_state_machine",
]

BATCH_PREFIX = "batch/"  # the batch lane's inputs and outputs (infra.storage.BATCH_PREFIX)
UPLOADS_PREFIX = "uploads/"  # users' uploaded PDFs (batchlane.keys.upload_key)
CHUNK_SOURCES_PREFIX = "jobs/*/source/"  # the chunk PDFs a split writes (batchlane.keys.chunk_source_key)
BATCH_INPUTS_PREFIX = "batch/*/input/"  # a lane's JSONL records (batchlane.keys.batch_input_prefix)
JOBS_PREFIX = "jobs/"  # chunk sources, chunk results, the Markdown (batchlane.keys)


@dataclass(frozen=True)
class Grant:
    """One policy statement: ``actions`` on every resource of ``resources``, under ``conditions``."""

    actions: tuple[str, ...]
    resources: tuple[ResourceKind, ...]
    prefix: str = ""  # objects: key prefix of the ARN; bucket: s3:prefix condition
    conditions: Mapping[str, Mapping[str, str | tuple[str, ...]]] = field(default_factory=dict)  # IAM's form
    sid: str | None = None

    def all_conditions(self) -> dict[str, dict[str, str | tuple[str, ...]]]:
        """The IAM Condition block, the s3:prefix one included."""
        out = {op: dict(values) for op, values in self.conditions.items()}
        if self.prefix and "bucket" in self.resources:
            out.setdefault("StringLike", {})["s3:prefix"] = (f"{self.prefix}*",)
        return out


_LIST_BUCKET = Grant(("s3:ListBucket",), ("bucket",))
# batchlane.aws.kms's encryption context: its purpose, and an owner (any: IAM does not know whose request it serves).
WEBHOOK_KEY_CONTEXT: Mapping[str, Mapping[str, str | tuple[str, ...]]] = {
    "StringEquals": {f"kms:EncryptionContext:{WEBHOOK_PURPOSE_CONTEXT}": WEBHOOK_PURPOSE},
    "StringLike": {f"kms:EncryptionContext:{WEBHOOK_OWNER_CONTEXT}": "?*"},
}

CAPABILITY_GRANTS: Mapping[str, tuple[Grant, ...]] = {
    "db": (Grant(("secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"), ("database_secret",)),),
    # migrate signs in as the master and sets the application role's password from its secret.
    "db_admin": (Grant(("secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"), ("database_master_secret", "database_secret")),),
    # S3 by prefix: each function reads and writes only the prefixes its code touches. ListBucket stays
    # on the bucket: without it a missing object answers 403 instead of 404 (S3 API Reference,
    # GetObject/HeadObject "Permissions"), and a prefix condition does not apply to those calls.
    "s3_read_uploads": (Grant(("s3:GetObject",), ("objects",), prefix=UPLOADS_PREFIX), _LIST_BUCKET),
    "s3_read_jobs": (Grant(("s3:GetObject",), ("objects",), prefix=JOBS_PREFIX), _LIST_BUCKET),
    "s3_read_batch": (Grant(("s3:GetObject",), ("objects",), prefix=BATCH_PREFIX), _LIST_BUCKET),
    # The api signs the upload's presigned POST: S3 checks the signer's s3:PutObject on the key.
    "s3_write_uploads": (Grant(("s3:PutObject",), ("objects",), prefix=UPLOADS_PREFIX),),
    "s3_write_jobs": (Grant(("s3:AbortMultipartUpload", "s3:PutObject"), ("objects",), prefix=JOBS_PREFIX),),
    "s3_write_batch": (Grant(("s3:AbortMultipartUpload", "s3:PutObject"), ("objects",), prefix=BATCH_PREFIX),),
    # What a deleted file leaves: its upload, each job's chunk sources, results and Markdown (jobs/),
    # and its batch files once no Bedrock job reads them (batch/). Nothing else may be deleted.
    "s3_delete": tuple(Grant(("s3:DeleteObject",), ("objects",), prefix=prefix) for prefix in (UPLOADS_PREFIX, JOBS_PREFIX, BATCH_PREFIX)),
    # A split that fails removes the chunk PDFs it wrote (docs/architecture.md, "Hostile PDFs").
    "s3_delete_chunk_sources": (Grant(("s3:DeleteObject",), ("objects",), prefix=CHUNK_SOURCES_PREFIX),),
    # Prepare drops the records of a member that left the lane before it was submitted (batch/*/input/ only).
    "s3_delete_batch_inputs": (Grant(("s3:DeleteObject",), ("objects",), prefix=BATCH_INPUTS_PREFIX),),
    # The sweeper removes a deleted member's lane files once its lane closed (batch/purge.py): its shards,
    # prepare summaries and Bedrock's answers for them, nothing of the lane itself.
    "s3_delete_batch_members": tuple(
        Grant(("s3:DeleteObject",), ("objects",), prefix=prefix) for prefix in (BATCH_INPUTS_PREFIX, "batch/*/prepare/", "batch/*/output/")
    ),
    # Converse and InvokeModel are both authorised by bedrock:InvokeModel (AWS API reference, "Converse").
    "bedrock_runtime": (Grant(("bedrock:InvokeModel",), ("models",), sid="InvokeConfiguredModels"),),
    "bedrock_batch": (
        Grant(
            (
                "bedrock:CreateModelInvocationJob",
                "bedrock:GetModelInvocationJob",
                "bedrock:StopModelInvocationJob",
                "bedrock:TagResource",
            ),
            ("batch_jobs", "models"),
            sid="ManageBatchJobs",
        ),
        # ListModelInvocationJobs supports no resource-level permission (Service Authorization Reference).
        Grant(("bedrock:ListModelInvocationJobs",), ("any",), sid="ListBatchJobs"),
        Grant(
            ("iam:PassRole",),
            ("bedrock_service_role",),
            conditions={"StringEquals": {"iam:PassedToService": "bedrock.amazonaws.com"}},
            sid="PassServiceRoleToBedrock",
        ),
        Grant(("s3:AbortMultipartUpload", "s3:GetObject", "s3:PutObject"), ("objects",), prefix=BATCH_PREFIX),
        Grant(("s3:ListBucket",), ("bucket",), prefix=BATCH_PREFIX),
    ),
    # Cancel and process now stop a job's Bedrock batch job; nothing else of the caller policy (no create, no PassRole).
    "stop_batch_jobs": (Grant(("bedrock:StopModelInvocationJob",), ("batch_jobs",), sid="StopBatchJobs"),),
    "inspect_batch_jobs": (
        Grant(("bedrock:GetModelInvocationJob",), ("batch_jobs",), sid="ReadBatchJobs"),
        # ListModelInvocationJobs supports no resource-level permission (Service Authorization Reference).
        Grant(("bedrock:ListModelInvocationJobs",), ("any",), sid="FindBatchJobs"),
    ),
    "start_conversion": (Grant(("states:StartExecution",), ("conversion_state_machine",)),),
    "start_batch_lane": (Grant(("states:StartExecution",), ("batch_lane_state_machine",)),),
    "start_intake": (Grant(("states:StartExecution",), ("intake_state_machine",)),),
    # The recovery schedule asks whether a live job's execution ended (domain/workflow_end.py).
    "inspect_workflows": (Grant(("states:DescribeExecution",), ("workflow_executions",)),),
    "start_webhook_delivery": (Grant(("states:StartExecution",), ("webhook_delivery_state_machine",)),),
    # sign beside the owner's during the migration: read the deployment secret's current and previous versions
    "webhook_secret_read": (Grant(("secretsmanager:GetSecretValue",), ("webhook_secret",)),),
    # An owner's secret, sealed and opened with the webhook key only under an owner's encryption context for this
    # purpose (aws/kms.py): the key does nothing else for these roles. IAM cannot bind the owner to the caller; the
    # code seals each owner's under their own id, and KMS opens it only under the same (docs/decisions/0033).
    "webhook_secret_seal": (Grant(("kms:Encrypt",), ("webhook_key",), conditions=WEBHOOK_KEY_CONTEXT, sid="SealOwnersWebhookSecrets"),),
    "webhook_secret_open": (Grant(("kms:Decrypt",), ("webhook_key",), conditions=WEBHOOK_KEY_CONTEXT, sid="OpenOwnersWebhookSecrets"),),
    "task_response": (Grant(("states:SendTaskFailure", "states:SendTaskHeartbeat", "states:SendTaskSuccess"), ("batch_lane_state_machine",)),),
    "publish_events": (Grant(("events:PutEvents",), ("default_event_bus",), conditions={"StringEquals": {"events:source": (EVENT_SOURCE,)}}),),
    "cloudwatch_metrics": (),
    "folder_read": (Grant(("s3:GetObject",), ("folder_objects",)), Grant(("s3:ListBucket",), ("folder_buckets",))),
    "folder_write": (Grant(("s3:AbortMultipartUpload", "s3:PutObject"), ("folder_objects",)),),
    "start_folder_job": (Grant(("states:StartExecution",), ("folder_job_state_machine",)),),
    "start_estimate": (Grant(("states:StartExecution",), ("estimate_state_machine",)),),
    # Folder functions reach the users' buckets only through the folder-access role, tagged with the job's owner.
    "folder_access": (Grant(("sts:AssumeRole", "sts:TagSession"), ("folder_access_role",)),),  # Powertools writes EMF to the function's own log group: no grant
}


# Cross-region inference profiles are "<geo>.<provider>.<model>": us., eu., apac., global., ...
_PROFILE = re.compile(r"^[a-z]{2,7}\.[a-z0-9-]+\.[A-Za-z0-9.:_-]+$")
_PROVIDERS = ("anthropic.", "amazon.", "meta.", "mistral.", "cohere.", "ai21.", "deepseek.", "writer.", "openai.", "qwen.")


def is_inference_profile(model_id: str) -> bool:
    """True for a cross-region inference profile id (``us.anthropic.…``), False for a model id."""
    return bool(_PROFILE.match(model_id)) and not model_id.startswith(_PROVIDERS)


def grants_for(needs: Iterable[str]) -> tuple[Grant, ...]:
    """Every grant the capabilities add up to (KeyError for a capability with no mapping)."""
    return tuple(grant for need in needs for grant in CAPABILITY_GRANTS[need])


def folder_source_resource(source: str) -> str:
    """The ``bucket/prefix`` IAM grants for a ``folderSources`` entry: ``group@`` dropped, the key cut at ``{owner}``.

    IAM cannot know the API's caller, so the role reaches every owner's prefix; folders/spec.check_allowed
    binds each caller to their own (docs/operations.md "Folder jobs")."""
    head, _, rest = source.strip().removeprefix("s3://").partition("/")
    return f"{head.rpartition('@')[2]}/{rest.split('{owner}', 1)[0]}"


OWNER_VARIABLE = "${aws:PrincipalTag/owner}"  # IAM's policy variable for it


def owner_folder_resource(source: str) -> str:
    """The ``bucket/prefix`` of a ``folderSources`` entry as the folder-access role sees it: ``{owner}`` is the session's owner tag.

    A ``group@`` entry keeps its whole prefix: IAM does not know the caller's groups (folders/spec.check_allowed does)."""
    head, _, rest = source.strip().removeprefix("s3://").partition("/")
    return f"{head.rpartition('@')[2]}/{rest.replace('{owner}', OWNER_VARIABLE)}"


def folder_access_grants(sources: Iterable[str]) -> tuple[Grant, ...]:
    """The folder-access role's policy: read and write under the owner's granted prefixes, list only those,
    and read the Markdown it copies out of ``jobs/`` (a CopyObject reads its source with the same credentials)."""
    prefixes = tuple(sorted({owner_folder_resource(s).split("/", 1)[1] + "*" for s in sources}))
    if not prefixes:
        return ()
    return (
        Grant(("s3:AbortMultipartUpload", "s3:GetObject", "s3:PutObject"), ("owner_folder_objects",), sid="OwnerFolderObjects"),
        Grant(("s3:ListBucket",), ("folder_buckets",), conditions={"StringLike": {"s3:prefix": prefixes}}, sid="ListOwnerFolders"),
        Grant(("s3:GetObject",), ("objects",), prefix=JOBS_PREFIX, sid="CopyConvertedMarkdown"),
    )
