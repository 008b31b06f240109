"""Webhook signing: the KMS key that seals each owner's secret, and the deployment's shared secret of before.

Each owner's signing secret is a row of webhook_secrets sealed with ``key`` (the owner in the encryption context;
issue 40.4, decision 0037): the API seals (kms:Encrypt), ``webhook_deliver`` opens (kms:Decrypt), both only under an
owner's context for this purpose (deployment/grants.py). The deployment's shared secret (Secrets Manager) still signs
beside the owner's for the migration's days (BATCHLANE_WEBHOOK_MIGRATION_DAYS); only ``webhook_deliver`` reads it.
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_kms as kms
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
            "The deployment's shared secret signs only during the migration to per-owner secrets (each owner rotates their own, "
            "POST /api/v1/webhook-config/secret); rotating it on a schedule would break the receivers still on it.",
        )
        # One customer managed key for every owner's secret: $1 a month and $0.03 per 10,000 calls, against a Secrets
        # Manager secret per owner at $0.40 a month each (decision 0037). Its key material rotates yearly (KMS keeps the
        # old material to decrypt what it sealed); the key outlives a stack deleted with retainData.
        self.key = kms.Key(
            self,
            "SecretKey",
            description="batchlane: seals each owner's webhook signing secret (encryption context: the owner)",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.RETAIN if config.retain_data else RemovalPolicy.DESTROY,
        )
