"""The adapters a handler needs, built once per process from the settings.

Handlers call :func:`services`; tests and the offline stack call :func:`reset_services`
after changing the environment.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from batchlane.aws.clients import client, reset_clients
from batchlane.aws.events import EventBus
from batchlane.aws.folders import FolderBuckets, S3FolderBuckets
from batchlane.aws.s3 import S3Store
from batchlane.aws.workflows import Workflows
from batchlane.config import Settings, reload_settings
from batchlane.db.connection import Database, SecretConnection, connect_params_from_url
from batchlane.db.secrets import SecretsManagerSource
from batchlane.domain.cost import PriceTable
from batchlane.webhooks.secret import SigningSecret


@dataclass
class Services:
    settings: Settings
    db: Database
    store: S3Store
    workflows: Workflows
    bus: EventBus
    prices: PriceTable

    def bedrock_runtime(self) -> Any:
        return client("bedrock-runtime", max_attempts=self.settings.batchlane_converse_max_attempts)

    def bedrock(self) -> Any:
        return client("bedrock")

    def folder_buckets(self) -> FolderBuckets:
        """The user's buckets a folder job reads and writes (within the configured folder sources)."""
        return S3FolderBuckets(client("s3"))

    def signing_secret(self) -> SigningSecret:
        return SigningSecret(client("secretsmanager"), self.settings.webhook_secret_arn)


_lock = threading.Lock()
_services: Services | None = None


def _database(settings: Settings) -> Database:
    """DATABASE_URL (offline, tests) or the secret, read once per process and again after a rotation."""
    if settings.database_url:
        return Database(connect_params_from_url(settings.database_url, ssl_mode=settings.batchlane_db_ssl_mode, ssl_ca_file=settings.batchlane_db_ssl_ca_file))
    if settings.database_secret_arn:
        secret = SecretConnection(
            SecretsManagerSource(settings.database_secret_arn),
            database=settings.database_name,
            host=settings.database_host,
            ssl_mode=settings.batchlane_db_ssl_mode,
            ssl_ca_file=settings.batchlane_db_ssl_ca_file,
        )
        return Database(secret.params())
    raise RuntimeError("no database configured: set DATABASE_URL or DATABASE_SECRET_ARN")


def services() -> Services:
    global _services
    with _lock:
        if _services is None:
            settings = reload_settings()
            _services = Services(
                settings=settings,
                db=_database(settings),
                store=S3Store(client("s3"), settings.batchlane_bucket),
                workflows=Workflows(
                    client("stepfunctions"),
                    conversion_arn=settings.conversion_state_machine_arn,
                    batch_lane_arn=settings.batch_lane_state_machine_arn,
                    intake_arn=settings.intake_state_machine_arn,
                    webhook_delivery_arn=settings.webhook_delivery_state_machine_arn,
                    folder_job_arn=settings.folder_job_state_machine_arn,
                ),
                bus=EventBus(client("events"), settings.event_bus_name),
                prices=PriceTable(settings.batchlane_prices),
            )
        return _services


def reset_services() -> None:
    global _services
    with _lock:
        if _services is not None:
            _services.db.close()
        _services = None
        reset_clients()
