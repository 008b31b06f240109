"""Every function in ``deployment.topology.FUNCTIONS`` as a Lambda, made by one factory.

Each Lambda: Python 3.12 on arm64 (the layer is built for exactly that platform), the
shared layer, Powertools logging / tracing (X-Ray active) / metrics (EMF, no extra
grant), its own log group with retention, its own role holding only the grants its
``needs`` name (``deployment.grants``, which the offline stack enforces too), and the lane settings from context.

Secrets never travel in environment variables: a ``db`` function gets
``DATABASE_SECRET_ARN`` (the application role's secret) and reads it at run time; ``migrate``
(``db_admin``) gets the master secret there and the application secret as ``DATABASE_APP_SECRET_ARN``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from aws_cdk import Duration, RemovalPolicy, Size, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from deployment import topology
from deployment.grants import CAPABILITY_GRANTS, folder_source_resource
from infra.config import InfraConfig
from infra.folder_access import FolderAccess
from infra.iam import BedrockBatchAccess, GrantTargets, acknowledge_model_wildcards, grant_statements
from infra.layer_build import build_layer
from infra.nag import acknowledge, arn_token
from infra.queues import dead_letter_queue
from infra.workflows import state_machine_name

RUNTIME = lambda_.Runtime.PYTHON_3_12  # must match infra.layer_build.PYTHON_VERSION
ARCHITECTURE = lambda_.Architecture.ARM_64  # must match infra.layer_build.PLATFORM
SERVICE_NAME = "batchlane"
METRICS_NAMESPACE = "Batchlane"
# Invoked asynchronously (EventBridge rules and schedules): failed runs land in a DLQ.
ASYNC_FUNCTIONS = frozenset({r.target for r in topology.RULES} | {s.target for s in topology.SCHEDULES})


@dataclass(frozen=True)
class Network:
    """Where the functions that need the database run."""

    vpc: ec2.IVpc
    subnets: ec2.SubnetSelection
    security_group: ec2.ISecurityGroup


@dataclass(frozen=True)
class Wiring:
    """What capabilities are granted against. State machine ARNs are built from fixed
    names (see workflows.state_machine_arn) so functions and machines never form a cycle."""

    bucket: s3.IBucket
    bedrock: BedrockBatchAccess
    database_secret: secretsmanager.ISecret  # the application role's (batchlane_app): every ``db`` function
    network: Network
    intake_state_machine_arn: str
    conversion_state_machine_arn: str
    batch_lane_state_machine_arn: str
    # DATABASE_NAME / DATABASE_HOST for the functions that use the database (infra/database.py).
    database_environment: dict[str, str] = field(default_factory=dict)
    # Signed webhooks (infra/webhooks.py): the signing secret and the delivery machine.
    webhook_secret: secretsmanager.ISecret | None = None
    webhook_key: kms.IKey | None = None  # seals each owner's signing secret
    webhook_delivery_state_machine_arn: str = ""
    # Folder jobs (docs/architecture.md "Folder jobs"): the loop's machine.
    folder_job_state_machine_arn: str = ""
    # Dry runs' estimates (api/estimates.py): the worker's machine.
    estimate_state_machine_arn: str = ""
    # The master user's secret: ``db_admin`` (migrate) only. None: the same as database_secret.
    database_master_secret: secretsmanager.ISecret | None = None


def function_code(name: str) -> lambda_.Code:
    folder = topology.FUNCTIONS_DIR / name
    if not (folder / "handler.py").is_file():
        raise FileNotFoundError(f"functions/{name}/handler.py is missing: every function in deployment.topology needs a handler to deploy")
    return lambda_.Code.from_asset(str(folder), exclude=["__pycache__", "*.pyc", "tests"])


class Compute(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: InfraConfig,
        wiring: Wiring,
        layer_dir: Path | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        self._wiring = wiring
        retention = config.log_retention
        self._retention = retention

        self.layer = lambda_.LayerVersion(
            self,
            "SharedLayer",
            code=lambda_.Code.from_asset(str(layer_dir or build_layer())),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="batchlane package + pinned runtime dependencies (no offline stack, no CLI)",
        )
        self.async_failures = dead_letter_queue(self, "AsyncFailuresDlq", holds="the event-driven Lambdas")
        self.functions: dict[str, lambda_.Function] = {spec.name: self._make(spec) for spec in topology.FUNCTIONS}
        self.folder_access = self._folder_access()

    def _folder_access(self) -> FolderAccess | None:
        """The role the "folder_access" functions assume per owner (made after their roles: its trust names them)."""
        users = [spec for spec in topology.FUNCTIONS if "folder_access" in spec.needs]
        if not users or not self._config.folder_sources:
            return None
        roles = {spec.name: role for spec in users if (role := self.functions[spec.name].role) is not None}
        access = FolderAccess(self, "FolderAccess", targets=self._targets(), callers=list(roles.values()))
        for name, role in roles.items():
            self.functions[name].add_environment("FOLDER_ACCESS_ROLE_ARN", access.role.role_arn)
            for statement in grant_statements(CAPABILITY_GRANTS["folder_access"], self._targets(access.role.role_arn)):
                role.add_to_principal_policy(statement)
        return access

    # -- the factory ------------------------------------------------------------------
    def _make(self, spec: topology.FunctionSpec) -> lambda_.Function:
        construct_id = "".join(part.title() for part in spec.name.split("_"))
        log_group = logs.LogGroup(self, f"{construct_id}Logs", retention=self._retention, removal_policy=RemovalPolicy.DESTROY)
        role = iam.Role(
            self,
            f"{construct_id}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"batchlane {spec.name}: {', '.join(spec.needs)}",
        )
        # Logging to its own group only (instead of AWSLambdaBasicExecutionRole's logs:* on every group).
        role.add_to_policy(iam.PolicyStatement(actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[log_group.log_group_arn]))
        in_vpc = bool({"db", "db_admin"} & set(spec.needs))
        if in_vpc:  # CDK adds this only to roles it creates itself
            role.add_managed_policy(iam.ManagedPolicy.from_aws_managed_policy_name("service-role/AWSLambdaVPCAccessExecutionRole"))
        network = self._wiring.network
        fn = lambda_.Function(
            self,
            construct_id,
            description=spec.description[:256],
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler="handler.handler",
            code=function_code(spec.name),
            layers=[self.layer],
            timeout=Duration.seconds(spec.timeout_s),
            memory_size=spec.memory_mb,
            ephemeral_storage_size=Size.mebibytes(self._config.ephemeral_storage_mb(spec)),
            role=role,
            log_group=log_group,
            tracing=lambda_.Tracing.ACTIVE,
            environment=self._environment(spec),
            vpc=network.vpc if in_vpc else None,
            vpc_subnets=network.subnets if in_vpc else None,
            security_groups=[network.security_group] if in_vpc else None,
            dead_letter_queue=self.async_failures if spec.name in ASYNC_FUNCTIONS else None,
            retry_attempts=2 if spec.name in ASYNC_FUNCTIONS else None,
            max_event_age=Duration.hours(1) if spec.name in ASYNC_FUNCTIONS else None,
            reserved_concurrent_executions=self._config.reserved_concurrency.get(spec.name),
        )
        self._grant(spec, fn, role)
        self._acknowledge(spec, fn, role, in_vpc)
        return fn

    def _environment(self, spec: topology.FunctionSpec) -> dict[str, str]:
        w = self._wiring
        env = {
            "POWERTOOLS_SERVICE_NAME": SERVICE_NAME,
            "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
            "POWERTOOLS_LOG_LEVEL": "INFO",
            # X-Ray keeps no handler responses: the api's carry presigned URLs (with session tokens).
            "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
            "BATCHLANE_BUCKET": w.bucket.bucket_name,
            # The lane writes to the same bucket (batch/ prefix) and passes the service role.
            "BATCH_CONVERSION_S3_BUCKET": w.bucket.bucket_name,
            "BATCH_CONVERSION_ROLE_ARN": w.bedrock.service_role.role_arn,
            **self._config.lane_environment(),
            **self._config.webhook_environment(),
            **self._config.budget_environment(),
        }
        if "db" in spec.needs:
            env["DATABASE_SECRET_ARN"] = w.database_secret.secret_arn
            env.update(w.database_environment)
        if "db_admin" in spec.needs:  # signs in as the master, sets the app role's password
            env["DATABASE_SECRET_ARN"] = self._master_secret().secret_arn
            if self._master_secret() is not w.database_secret:  # an existing database: one user, no app role to keep
                env["DATABASE_APP_SECRET_ARN"] = w.database_secret.secret_arn
            env.update(w.database_environment)
        if "start_conversion" in spec.needs:
            env["CONVERSION_STATE_MACHINE_ARN"] = w.conversion_state_machine_arn
        if {"start_batch_lane", "task_response"} & set(spec.needs):
            env["BATCH_LANE_STATE_MACHINE_ARN"] = w.batch_lane_state_machine_arn
        if "start_intake" in spec.needs:
            env["INTAKE_STATE_MACHINE_ARN"] = w.intake_state_machine_arn
        if "start_webhook_delivery" in spec.needs:
            env["WEBHOOK_DELIVERY_STATE_MACHINE_ARN"] = w.webhook_delivery_state_machine_arn
        if {"folder_read", "folder_write", "folder_access", "start_folder_job"} & set(spec.needs):  # the API checks grants at submit
            env["BATCHLANE_FOLDER_SOURCES"] = ",".join(self._config.folder_sources)
        if "start_folder_job" in spec.needs:
            env["FOLDER_JOB_STATE_MACHINE_ARN"] = w.folder_job_state_machine_arn
        if "start_estimate" in spec.needs:
            env["ESTIMATE_STATE_MACHINE_ARN"] = w.estimate_state_machine_arn
        if "inspect_workflows" in spec.needs:  # DescribeExecution builds the execution ARN from its machine's
            env["CONVERSION_STATE_MACHINE_ARN"] = w.conversion_state_machine_arn
            env["INTAKE_STATE_MACHINE_ARN"] = w.intake_state_machine_arn
            if w.folder_job_state_machine_arn:
                env["FOLDER_JOB_STATE_MACHINE_ARN"] = w.folder_job_state_machine_arn
        if "webhook_secret_read" in spec.needs:
            env["WEBHOOK_SECRET_ARN"] = self._webhook_secret().secret_arn  # the ARN, never the value
        if {"webhook_secret_seal", "webhook_secret_open"} & set(spec.needs):
            if self._wiring.webhook_key is None:
                raise ValueError("a function seals or opens owners' webhook secrets but the Wiring has no webhook key")
            env["WEBHOOK_KEY_ARN"] = self._wiring.webhook_key.key_arn
        return env

    def _master_secret(self) -> secretsmanager.ISecret:
        return self._wiring.database_master_secret or self._wiring.database_secret

    def _webhook_secret(self) -> secretsmanager.ISecret:
        if self._wiring.webhook_secret is None:
            raise ValueError("a function needs the webhook signing secret but the Wiring has none")
        return self._wiring.webhook_secret

    # -- least privilege: exactly the capabilities the topology names -----------------
    def _grant(self, spec: topology.FunctionSpec, fn: lambda_.Function, role: iam.Role) -> None:
        """The statements ``deployment.grants`` maps each capability to (offline enforces the same)."""
        stack = Stack.of(self)
        targets = self._targets()
        for need in spec.needs:
            if need == "folder_access":  # granted once the role exists (_folder_access)
                continue
            if need == "bedrock_batch":  # the same grants, as the exported managed policy
                role.add_managed_policy(self._wiring.bedrock.caller_policy)
                continue
            grants = CAPABILITY_GRANTS[need]  # KeyError: a new capability must be mapped there first
            for statement in grant_statements(grants, targets):
                role.add_to_policy(statement)
            if any("models" in grant.resources for grant in grants):
                acknowledge_model_wildcards(role, stack, self._config.model_ids)

    def _targets(self, folder_access_role_arn: str | None = None) -> GrantTargets:
        w = self._wiring
        return GrantTargets(
            stack=Stack.of(self),
            bucket=w.bucket,
            model_ids=self._config.model_ids,
            bedrock_service_role_arn=w.bedrock.service_role.role_arn,
            database_secret=w.database_secret,
            database_master_secret=self._master_secret(),
            conversion_state_machine_arn=w.conversion_state_machine_arn,
            batch_lane_state_machine_arn=w.batch_lane_state_machine_arn,
            intake_state_machine_arn=w.intake_state_machine_arn,
            webhook_delivery_state_machine_arn=w.webhook_delivery_state_machine_arn or None,
            webhook_secret=w.webhook_secret,
            webhook_key=w.webhook_key,
            folder_sources=self._config.folder_sources,
            folder_job_state_machine_arn=w.folder_job_state_machine_arn or None,
            folder_access_role_arn=folder_access_role_arn,
            estimate_state_machine_arn=w.estimate_state_machine_arn or None,
        )

    def _acknowledge(self, spec: topology.FunctionSpec, fn: lambda_.Function, role: iam.Role, in_vpc: bool) -> None:
        bucket_arn = arn_token(self._wiring.bucket)
        acknowledge(
            fn,
            "AwsSolutions-L1",
            "Python 3.12 on purpose: the shared layer's compiled wheels (pydantic-core) are built for cp312/arm64 "
            "(infra/layer_build.py); move RUNTIME and PYTHON_VERSION together.",
        )
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "X-Ray PutTraceSegments/PutTelemetryRecords (active tracing), and bedrock:ListModelInvocationJobs where granted, support no "
            "resource-level permissions; they are the only actions on '*'.",
        )
        for prefix in sorted(
            {g.prefix for need in spec.needs if need != "bedrock_batch" for g in CAPABILITY_GRANTS[need] if "objects" in g.resources and g.prefix}
        ):
            acknowledge(
                role,
                f"AwsSolutions-IAM5[Resource::{bucket_arn}/{prefix}*]",
                f"Object keys under {prefix} are generated per file and job; access is limited to that prefix of this one bucket.",
            )
        if {"stop_batch_jobs", "inspect_batch_jobs"} & set(spec.needs):
            acknowledge(
                role,
                "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:<AWS::Region>:<AWS::AccountId>:model-invocation-job/*]",
                "Model-invocation job ids are assigned by Bedrock at creation; only Stop/GetModelInvocationJob, on jobs of this account and region.",
            )
        if "inspect_workflows" in spec.needs:
            for machine in ("conversion", "intake", "folder_job"):
                acknowledge(
                    role,
                    f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:{state_machine_name(self._config.stack_name, machine)}:*]",
                    "Execution names carry the job id (conversion-<jobId>, intake-<jobId>, folder-<jobId>-<run>); only DescribeExecution, on this machine's executions.",
                )
        if {"folder_read", "folder_write"} & set(spec.needs):
            for source in sorted({folder_source_resource(s) for s in self._config.folder_sources}):
                acknowledge(
                    role,
                    f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::{source}*]",
                    "Folder jobs read the PDFs and write the Markdown, report and manifest under the configured folder source (context folderSources) only.",
                )
        if in_vpc:
            acknowledge(
                role,
                "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]",
                "AWS-maintained minimal policy Lambda needs to create and delete its network interfaces in the VPC "
                "(the EC2 ENI actions support no resource-level scoping).",
            )
