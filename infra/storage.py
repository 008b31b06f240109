"""The one bucket, and its access-log bucket.

Prefix layout (documented here and in docs/deploy.md):

    uploads/<fileId>.pdf                 source PDFs (written through a presigned PUT from the API)
    jobs/<jobId>/...                     chunk results and the output Markdown
    batch/<jobId>/input/*.jsonl          batch-lane JSONL shards (InvokeModel records: Anthropic Messages bodies)
    batch/<jobId>/manifest.json          what prepare wrote
    batch/<jobId>/output/<bedrockJobId>/ what Bedrock wrote (*.jsonl.out, manifest.json.out)
    batch/<jobId>/results/chunk-N.json   accepted records, per chunk, read by the chunk processor

Everything is working data: objects expire after 14 days, versioning is off.
The Bedrock service role may touch ``batch/*`` only (see iam.py).
"""

from __future__ import annotations

from aws_cdk import Aws, Duration, RemovalPolicy
from aws_cdk import aws_s3 as s3
from constructs import Construct

from batchlane import keys
from infra.config import InfraConfig

UPLOADS_PREFIX = "uploads/"
JOBS_PREFIX = "jobs/"
BATCH_PREFIX = "batch/"
OBJECT_EXPIRY_DAYS = keys.OBJECT_EXPIRY_DAYS  # the API tells users when their Markdown expires: one number
ACCESS_LOG_EXPIRY_DAYS = 90


class Storage(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: InfraConfig) -> None:
        super().__init__(scope, construct_id)
        removal = RemovalPolicy.RETAIN if config.retain_data else RemovalPolicy.DESTROY

        self.access_logs = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=False,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[s3.LifecycleRule(id="expire-access-logs", expiration=Duration.days(ACCESS_LOG_EXPIRY_DAYS))],
            removal_policy=removal,
            auto_delete_objects=False,
        )

        self.bucket = s3.Bucket(
            self,
            "Bucket",
            # Tied to the account and region: one bucket per deployment, never guessable cross-account.
            bucket_name=f"{config.stack_name.lower()}-{Aws.ACCOUNT_ID}-{Aws.REGION}",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=False,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="batchlane/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-working-data",
                    expiration=Duration.days(OBJECT_EXPIRY_DAYS),
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                )
            ],
            removal_policy=removal,
            auto_delete_objects=False,
        )

    def objects_arn(self, prefix: str = "") -> str:
        return self.bucket.arn_for_objects(f"{prefix}*")
