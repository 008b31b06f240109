"""The webhook signing secret: one random value in Secrets Manager, shared by the deployment.

Only ``webhook_deliver`` reads it (to sign); only the API describes and rotates it (admins:
the Cognito group BATCHLANE_ADMIN_GROUP). Its value never leaves Secrets Manager otherwise:
whoever configures receivers reads it explicitly (secretsmanager:GetSecretValue).
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.config import InfraConfig
from infra.nag import acknowledge


class WebhookSigning(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: InfraConfig) -> None:
        super().__init__(scope, construct_id)
        self.secret = secretsmanager.Secret(
            self,
            "SigningSecret",
            description="batchlane webhook signing secret (HMAC-SHA256 key of the Batchlane-Signature header)",
            generate_secret_string=secretsmanager.SecretStringGenerator(exclude_punctuation=True, password_length=48),
            removal_policy=RemovalPolicy.RETAIN if config.retain_data else RemovalPolicy.DESTROY,
        )
        acknowledge(
            self.secret,
            "AwsSolutions-SMG4",
            "Rotated on purpose by an admin (POST /api/v1/webhook-config/secret), not on a schedule: every receiver "
            "must be given the new value, and deliveries carry both signatures during the grace period meanwhile.",
        )
