"""BatchlaneStack: the whole deployment, one stack composed of the constructs beside this file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aws_cdk import Aspects, CfnOutput, Stack, Tags
from constructs import Construct

from infra.api import STAGE, Api
from infra.checkov import CheckovSkips
from infra.compute import Compute, Wiring
from infra.config import InfraConfig
from infra.console import Console
from infra.database import Database
from infra.events import Events
from infra.iam import BedrockBatchAccess
from infra.monitoring import Monitoring
from infra.storage import Storage
from infra.webhooks import WebhookSigning
from infra.workflows import Workflows, state_machine_arn


class BatchlaneStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: InfraConfig,
        layer_dir: Path | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            stack_name=config.stack_name,
            description="batchlane: PDF to Markdown with Claude on Amazon Bedrock, with a batch-inference lane",
            **kwargs,
        )
        # AWS::RDS::DBProxyTargetGroup has no Tags property: CloudFormation would reject the template.
        Tags.of(self).add("project", "batchlane", exclude_resource_types=["AWS::RDS::DBProxyTargetGroup"])
        Aspects.of(self).add(CheckovSkips(config))  # the reviewed checkov suppressions (infra/checkov.py)

        storage = Storage(self, "Storage", config=config)
        bedrock = BedrockBatchAccess(self, "BedrockBatch", config=config, bucket=storage.bucket)
        database = Database(self, "Database", config=config)
        conversion_arn = state_machine_arn(self, config.stack_name, "conversion")
        batch_lane_arn = state_machine_arn(self, config.stack_name, "batch_lane")
        intake_arn = state_machine_arn(self, config.stack_name, "intake")
        webhooks = WebhookSigning(self, "Webhooks", config=config)
        compute = Compute(
            self,
            "Compute",
            config=config,
            layer_dir=layer_dir,
            wiring=Wiring(
                bucket=storage.bucket,
                bedrock=bedrock,
                database_secret=database.app_secret,
                database_master_secret=database.secret,
                database_environment=database.environment,
                network=database.network,
                conversion_state_machine_arn=conversion_arn,
                batch_lane_state_machine_arn=batch_lane_arn,
                intake_state_machine_arn=intake_arn,
                webhook_secret=webhooks.secret,
                webhook_key=webhooks.key,
                webhook_delivery_state_machine_arn=state_machine_arn(self, config.stack_name, "webhook_delivery"),
                folder_job_state_machine_arn=state_machine_arn(self, config.stack_name, "folder_job"),
                estimate_state_machine_arn=state_machine_arn(self, config.stack_name, "estimate"),
            ),
        )
        fns = compute.functions
        workflows = Workflows(self, "Workflows", config=config, functions=fns)
        events = Events(self, "Events", config=config, functions=fns)
        api = Api(self, "Api", config=config, handler=fns["api"])
        console = Console(
            self,
            "Console",
            config=config,
            rest_api_id=api.rest_api.rest_api_id,
            api_stage=STAGE,
            user_pool=api.user_pool,
            upload_bucket=storage.bucket,
            access_logs=storage.access_logs,
        )
        database.add_migrations(fns["migrate"], config.log_retention)
        Monitoring(
            self,
            "Monitoring",
            config=config,
            machines=workflows.machines,
            queues={"event-delivery": events.dlq, "async-failures": compute.async_failures},
            fallback_threshold_percent=config.fallback_alarm_percent,
        )

        outputs = {
            "BucketName": (storage.bucket.bucket_name, "The one bucket: uploads/, jobs/, batch/"),
            "ServiceRoleArn": (
                bedrock.service_role.role_arn,
                "Role Bedrock assumes for batch jobs (BATCH_CONVERSION_ROLE_ARN)",
            ),
            "CallerPolicyArn": (
                bedrock.caller_policy.managed_policy_arn,
                "Attach to an existing role that submits batch jobs",
            ),
            "ConversionStateMachineArn": (workflows.machines["conversion"].state_machine_arn, "Conversion workflow"),
            "BatchLaneStateMachineArn": (workflows.machines["batch_lane"].state_machine_arn, "Batch-lane workflow"),
            "IntakeStateMachineArn": (workflows.machines["intake"].state_machine_arn, "Intake workflow: the split of each new job"),
            "FolderJobStateMachineArn": (workflows.machines["folder_job"].state_machine_arn, "Folder-job workflow: enumerate, start files, report"),
            "ApiUrl": (api.rest_api.url, "REST API base URL (Cognito token required)"),
            "UserPoolId": (api.user_pool.user_pool_id, "Cognito user pool (administrators invite users)"),
            "UserPoolClientId": (api.client.user_pool_client_id, "Cognito app client for the CLI (SRP, no secret)"),
            "ConsoleUrl": (f"{console.origin}/", "The web console (docs/console.md)"),
            "ConsoleDistributionDomainName": (
                console.distribution.distribution_domain_name,
                "CloudFront's own name: the target of consoleDomain's DNS record (docs/deploy.md)",
            ),
            "ConsoleBucketName": (console.bucket.bucket_name, "Where `make deploy` uploads console/dist"),
            "ConsoleClientId": (console.client.user_pool_client_id, "Cognito app client for the console (authorization code + PKCE)"),
            "ConsoleSignInDomain": (console.domain.base_url(), "Cognito hosted sign-in for the console"),
            "JobCreateFunctionName": (fns["job_create"].function_name, "Invoke to create a conversion job (answers splitting; the intake workflow splits it)"),
            "ApiFunctionName": (fns["api"].function_name, "The API Lambda"),
            "DatabaseSecretArn": (database.secret.secret_arn, "Secrets Manager secret the handlers read at run time"),
            "WebhookSecretArn": (
                webhooks.secret.secret_arn,
                "The deployment's webhook signing secret, beside each owner's during the migration (receivers move to their own: batchlane webhooks config)",
            ),
            "WebhookKeyArn": (webhooks.key.key_arn, "KMS key that seals each owner's webhook signing secret"),
            "Region": (self.region, "Region the stack runs in"),
            "DashboardName": (f"{config.stack_name}-batchlane", "CloudWatch dashboard"),
            # What `batchlane doctor` checks (docs/deploy.md "Preflight: batchlane doctor").
            "BatchEventRuleName": (events.rules["bedrock_batch_state_change"].rule_name, "EventBridge rule on Bedrock batch job state changes"),
            "MigrateFunctionName": (fns["migrate"].function_name, "Applies migrations; {'action': 'status'} reports them and the TLS state"),
            "LaneSettings": (
                json.dumps(config.doctor_settings(), sort_keys=True, separators=(",", ":")),
                "Model ids and batch-lane limits the functions run with",
            ),
        }
        for key, (value, description) in outputs.items():
            CfnOutput(self, key, value=value, description=description)
