"""PostgreSQL: an Aurora Serverless v2 cluster in a VPC (default), or an existing database.

Credentials, network and TLS: docs/deploy.md "Module notes".
"""

from __future__ import annotations

import hashlib
import re

from aws_cdk import CustomResource, Duration, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_rds as rds
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import custom_resources as cr
from constructs import Construct

from deployment import topology
from infra.compute import Network
from infra.config import InfraConfig
from infra.nag import acknowledge, arn_token

DATABASE_NAME = "batchlane"
APP_ROLE = "batchlane_app"  # batchlane.db.migrate.APP_ROLE: the role migrate keeps for the functions
MIGRATIONS_DIR = topology.REPO_ROOT / "layers" / "batchlane" / "batchlane" / "db" / "migrations"


def migrations_hash() -> str:
    digest = hashlib.sha256()
    if MIGRATIONS_DIR.is_dir():
        for path in sorted(p for p in MIGRATIONS_DIR.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            digest.update(str(path.relative_to(MIGRATIONS_DIR)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


class Database(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: InfraConfig) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        self.cluster: rds.DatabaseCluster | None = None
        self.proxy: rds.DatabaseProxy | None = None
        self.environment: dict[str, str] = {}  # DATABASE_NAME / DATABASE_HOST for the functions
        self._app_rotation: secretsmanager.RotationSchedule | None = None  # runs once migrate made the role
        if config.database_mode == "existing":
            self._existing(config)
        else:
            self._aurora(config)

    def _existing(self, config: InfraConfig) -> None:
        existing = config.existing_database
        assert existing is not None
        azs = list(existing.availability_zones) or [f"unused-az-{i}" for i, _ in enumerate(existing.subnet_ids)]
        vpc = ec2.Vpc.from_vpc_attributes(self, "Vpc", vpc_id=existing.vpc_id, availability_zones=azs)
        subnets = [ec2.Subnet.from_subnet_id(self, f"Subnet{i}", sid) for i, sid in enumerate(existing.subnet_ids)]
        security_group = ec2.SecurityGroup.from_security_group_id(self, "LambdaSg", existing.security_group_id)
        self.network = Network(vpc=vpc, subnets=ec2.SubnetSelection(subnets=subnets), security_group=security_group)
        if re.search(r":secret:.+-[A-Za-z0-9]{6}$", existing.secret_arn):  # full ARN, with the random suffix
            self.secret: secretsmanager.ISecret = secretsmanager.Secret.from_secret_complete_arn(self, "Secret", existing.secret_arn)
        else:
            self.secret = secretsmanager.Secret.from_secret_partial_arn(self, "Secret", existing.secret_arn)
        if existing.database_name:
            self.environment["DATABASE_NAME"] = existing.database_name
        if existing.host:
            self.environment["DATABASE_HOST"] = existing.host
        # The operator's database, often behind the operator's RDS Proxy, which signs in only the users whose
        # secrets it lists: a generated batchlane_app would be refused there. The functions keep the operator's
        # secret (docs/deploy.md "Database users"); migrate gets it as the master.
        self.app_secret: secretsmanager.ISecret = self.secret

    def _aurora(self, config: InfraConfig) -> None:
        aurora = config.aurora
        retention = config.log_retention
        vpc = ec2.Vpc(
            self,
            "Vpc",
            max_azs=2,
            nat_gateways=int(aurora["natGateways"]),
            subnet_configuration=[
                ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24),
                ec2.SubnetConfiguration(name="app", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=22),
                ec2.SubnetConfiguration(name="data", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED, cidr_mask=24),
            ],
            gateway_endpoints={"S3": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.S3)},
            restrict_default_security_group=True,
        )
        vpc.add_flow_log(
            "FlowLogs",
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(
                logs.LogGroup(self, "FlowLogsGroup", retention=retention, removal_policy=RemovalPolicy.DESTROY)
            ),
            traffic_type=ec2.FlowLogTrafficType.REJECT,
        )
        lambda_sg = ec2.SecurityGroup(self, "LambdaSg", vpc=vpc, description="batchlane Lambdas (database clients)")
        db_sg = ec2.SecurityGroup(
            self,
            "DatabaseSg",
            vpc=vpc,
            description="batchlane Aurora: PostgreSQL from the Lambdas only",
            allow_all_outbound=False,
        )
        self.network = Network(
            vpc=vpc,
            subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
            security_group=lambda_sg,
        )

        major = str(aurora["engineVersion"]).split(".")[0]
        cluster_identifier = f"{config.stack_name.lower()}-db"
        # Created here (not by cloudwatch_logs_retention, which adds a Node.js custom resource).
        postgres_logs = logs.LogGroup(
            self,
            "PostgresLogs",
            log_group_name=f"/aws/rds/cluster/{cluster_identifier}/postgresql",
            retention=retention,
            removal_policy=RemovalPolicy.DESTROY,
        )
        cluster = rds.DatabaseCluster(
            self,
            "Cluster",
            engine=rds.DatabaseClusterEngine.aurora_postgres(version=rds.AuroraPostgresEngineVersion.of(str(aurora["engineVersion"]), major)),
            credentials=rds.Credentials.from_generated_secret("batchlane"),
            default_database_name=DATABASE_NAME,
            writer=rds.ClusterInstance.serverless_v2("Writer", publicly_accessible=False),
            serverless_v2_min_capacity=float(aurora["minCapacity"]),
            serverless_v2_max_capacity=float(aurora["maxCapacity"]),
            vpc=vpc,
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
            security_groups=[db_sg],
            storage_encrypted=True,
            # Off: every function signs in with the secret through RDS Proxy (docs/deploy.md "Permissions",
            # "Database authentication"); an enabled but unused sign-in method is only attack surface.
            iam_authentication=False,
            deletion_protection=config.retain_data,
            removal_policy=RemovalPolicy.SNAPSHOT if config.retain_data else RemovalPolicy.DESTROY,
            backup=rds.BackupProps(retention=Duration.days(7)),
            cluster_identifier=cluster_identifier,
            cloudwatch_logs_exports=["postgresql"],
            copy_tags_to_snapshot=True,
        )
        cluster.node.add_dependency(postgres_logs)
        acknowledge(
            cluster,
            "AwsSolutions-RDS6",
            "IAM database authentication is off on purpose: every function signs in through RDS Proxy with the rotated "
            "Secrets Manager credentials; an enabled but unused sign-in method is only attack surface (docs/deploy.md).",
        )
        assert cluster.secret is not None
        self.cluster = cluster
        self.secret = cluster.secret  # the master user's: migrate only
        # The application role's (DML only): every other function signs in with it. attach() adds the
        # cluster's host, port and engine, as in the master secret, for the functions and the rotation.
        self.app_secret = rds.DatabaseSecret(self, "AppSecret", username=APP_ROLE).attach(cluster)

        # The functions reach the cluster through the proxy only. It runs in the subnets with
        # egress: it reads the secret from Secrets Manager.
        proxy_sg = ec2.SecurityGroup(self, "ProxySg", vpc=vpc, description="batchlane RDS Proxy: PostgreSQL from the Lambdas")
        self.proxy = cluster.add_proxy(
            "Proxy",
            db_proxy_name=f"{config.stack_name.lower()}-db-proxy",
            secrets=[cluster.secret, self.app_secret],  # one per database user; CDK's proxy role may read these only
            vpc=vpc,
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
            security_groups=[proxy_sg],
            require_tls=True,
            iam_auth=False,
            client_password_auth_type=rds.ClientPasswordAuthType.POSTGRES_SCRAM_SHA_256,
            debug_logging=False,  # would log SQL text
        )
        proxy_sg.add_ingress_rule(lambda_sg, ec2.Port.tcp(5432), "PostgreSQL from the batchlane Lambdas")
        cluster.connections.allow_default_port_from(proxy_sg, "PostgreSQL from the batchlane RDS Proxy")
        self.environment.update(DATABASE_NAME=DATABASE_NAME, DATABASE_HOST=self.proxy.endpoint)

        if config.secret_rotation_days > 0:
            rotation_sg = ec2.SecurityGroup(self, "RotationSg", vpc=vpc, description="batchlane secret rotation Lambda")
            cluster.connections.allow_default_port_from(rotation_sg, "PostgreSQL from the secret rotation Lambda")
            for construct_id, secret in (("Rotation", cluster.secret), ("AppRotation", self.app_secret)):
                schedule = secret.add_rotation_schedule(
                    construct_id,
                    automatically_after=Duration.days(config.secret_rotation_days),
                    hosted_rotation=secretsmanager.HostedRotation.postgre_sql_single_user(
                        vpc=vpc,
                        vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
                        security_groups=[rotation_sg],
                    ),
                )
            self._app_rotation = schedule  # single user: batchlane_app changes its own password
        else:
            for secret in (cluster.secret, self.app_secret):
                acknowledge(
                    secret,
                    "AwsSolutions-SMG4",
                    "Rotation disabled by context secretRotationDays=0 (operator's choice, e.g. during a migration).",
                )

        acknowledge(
            cluster,
            "AwsSolutions-RDS11",
            "The default PostgreSQL port is kept: the cluster sits in isolated subnets and admits only the Lambdas' "
            "security group, so a non-standard port would add no protection.",
        )

    def add_migrations(self, migrate: lambda_.IFunction, log_retention: logs.RetentionDays) -> CustomResource:
        """Run ``functions/migrate`` on deploy, after the database exists, again when the SQL changes."""
        provider = cr.Provider(
            self,
            "MigrationsProvider",
            on_event_handler=migrate,
            log_group=logs.LogGroup(self, "MigrationsProviderLogs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY),
        )
        resource = CustomResource(
            self,
            "Migrations",
            service_token=provider.service_token,
            resource_type="Custom::BatchlaneMigrations",
            # A new app secret re-runs migrate, which sets that password on the role.
            properties={"MigrationsHash": migrations_hash(), "SecretArn": self.secret.secret_arn, "AppSecretArn": self.app_secret.secret_arn},
        )
        if self._app_rotation is not None:  # the first rotation signs in as batchlane_app: migrate creates it first
            self._app_rotation.node.add_dependency(resource)
        if self.cluster is not None:
            resource.node.add_dependency(self.cluster)
        if self.proxy is not None:  # the migrate function connects through it, like every function
            resource.node.add_dependency(self.proxy)
        framework = provider.node.find_child("framework-onEvent")
        acknowledge(
            framework,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
            "CDK's custom-resource provider framework Lambda (not our code) logs with the AWS-maintained basic execution policy.",
        )
        acknowledge(
            framework,
            f"AwsSolutions-IAM5[Resource::{arn_token(migrate)}:*]",
            "CDK's provider framework may invoke any version of the migrate function it forwards the event to.",
        )
        acknowledge(
            framework,
            "AwsSolutions-L1",
            "The provider framework's runtime is chosen and updated by aws-cdk-lib, not by this app.",
        )
        return resource
