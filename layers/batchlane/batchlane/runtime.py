"""The composition root: the one place that builds the adapters, once per process, as a ``batchlane.ports.Services``.

Only the entry points import it (functions/, the API's routes, devtools); use cases take the ``Services`` they are
given. Handlers call :func:`services`; tests and the offline stack call :func:`reset_services` after changing the
environment; unit tests build theirs on the in-memory fakes (tests/fakes/services.py).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from batchlane.aws.bedrock_batch import BedrockBatchJobs
from batchlane.aws.bedrock_runtime import BedrockRuntime
from batchlane.aws.clients import client, reset_clients
from batchlane.aws.event_bus import EventBridgeBus
from batchlane.aws.folders import FolderBuckets, S3FolderBuckets
from batchlane.aws.kms import KmsSecretCipher
from batchlane.aws.owner_credentials import OwnerScopedClients
from batchlane.aws.s3 import S3Downloads, S3Store, S3Uploads
from batchlane.aws.signing_secret import SecretsManagerSigningSecret
from batchlane.aws.workflows import StepFunctionsWorkflows
from batchlane.config import Settings, reload_settings
from batchlane.db.admission import PgChunkAdmissions
from batchlane.db.connection import Database, SecretConnection, connect_params_from_url
from batchlane.db.database_secret import SecretsManagerSource
from batchlane.db.limiter import SerialPageThreadDatabase
from batchlane.db.uow import PgUnitOfWork
from batchlane.domain.cost import PriceTable
from batchlane.ports import (
    BatchJobs,
    ChunkAdmissions,
    Downloads,
    EventBus,
    ModelRuntime,
    ObjectStore,
    PageThreadDatabase,
    SecretCipher,
    SigningSecret,
    UnitOfWork,
    Uploads,
    Workflows,
)


@dataclass
class RuntimeServices:
    """batchlane.ports.Services on AWS (boto3) and PostgreSQL (``db``, the one database of the process)."""

    settings: Settings
    db: Database
    store: ObjectStore
    workflows: Workflows
    bus: EventBus
    prices: PriceTable
    batch_jobs: BatchJobs
    model_runtime: ModelRuntime

    def uow(self) -> UnitOfWork:
        return PgUnitOfWork(self.db)

    def chunk_admissions(self) -> ChunkAdmissions:
        return PgChunkAdmissions(self.db)

    def page_thread_database(self) -> PageThreadDatabase:
        return SerialPageThreadDatabase(self.db.params, self.settings)

    # Built on demand: only the API and the webhook functions use them (no client made elsewhere).
    def uploads(self) -> Uploads:
        return S3Uploads(client("s3", signature_version="s3v4"), self.settings.batchlane_bucket)  # the POST policy is SigV4

    def downloads(self) -> Downloads:
        return S3Downloads(client("s3", signature_version="s3v4"), self.settings.batchlane_bucket)

    def folder_buckets(self, owner_id: str | None = None) -> FolderBuckets:
        """The user's buckets as ``owner_id``'s folder job may see them: through the folder-access role tagged
        with that owner where one is configured (IAM confines the calls), else the function's own role."""
        role_arn = self.settings.folder_access_role_arn
        if owner_id is None or not role_arn:
            return S3FolderBuckets(client("s3"))
        return S3FolderBuckets(_owner_clients(role_arn).s3(owner_id))

    def owner_downloads(self, bucket: str, owner_id: str) -> Downloads:
        """Presigned GETs of a user's bucket as ``owner_id`` (the folder-access role where configured): a URL signed so
        carries that owner's grants only."""
        role_arn = self.settings.folder_access_role_arn
        s3 = _owner_clients(role_arn).s3(owner_id) if role_arn else client("s3", signature_version="s3v4")
        return S3Downloads(s3, bucket)

    def folder_source(self, bucket: str, owner_id: str) -> ObjectStore:
        """A folder file's bucket, read as its owner (the folder-access role where configured), for the split and its size check."""
        role_arn = self.settings.folder_access_role_arn
        if not role_arn:
            return S3Store(client("s3"), bucket)
        return S3Store(_owner_clients(role_arn).s3(owner_id), bucket)

    def secret_cipher(self) -> SecretCipher:
        """Seals and opens owners' signing secrets with the deployment's KMS key (aws/kms.py)."""
        return KmsSecretCipher(client("kms"), self.settings.webhook_key_arn)

    def signing_secret(self) -> SigningSecret:
        return SecretsManagerSigningSecret(client("secretsmanager"), self.settings.webhook_secret_arn)


_lock = threading.Lock()
_services: RuntimeServices | None = None
_scoped: dict[str, OwnerScopedClients] = {}


def _owner_clients(role_arn: str) -> OwnerScopedClients:
    """One per process and role: the per-owner sessions outlive a handler call (warm Lambdas reuse them)."""
    with _lock:
        if role_arn not in _scoped:
            _scoped[role_arn] = OwnerScopedClients(client("sts"), role_arn)
        return _scoped[role_arn]


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


_admin: Database | None = None


def admin_database() -> Database:
    """The migrator's connection: DATABASE_ADMIN_URL offline; on AWS ``migrate`` alone holds the
    master secret as its DATABASE_SECRET_ARN, so its :func:`services` database is already the owner's."""
    global _admin
    settings = services().settings
    if not settings.database_admin_url:
        return services().db
    with _lock:
        if _admin is None:
            _admin = Database(connect_params_from_url(settings.database_admin_url, ssl_mode=settings.batchlane_db_ssl_mode))
        return _admin


def app_role_password() -> str | None:
    """The application role's current password (its secret, read past the cache), or None without one."""
    arn = services().settings.database_app_secret_arn
    return str(SecretsManagerSource(arn).fetch(force=True)["password"]) if arn else None


def services() -> RuntimeServices:
    global _services
    with _lock:
        if _services is None:
            settings = reload_settings()
            _services = RuntimeServices(
                settings=settings,
                db=_database(settings),
                store=S3Store(client("s3"), settings.batchlane_bucket),
                workflows=StepFunctionsWorkflows(
                    client("stepfunctions"),
                    conversion_arn=settings.conversion_state_machine_arn,
                    batch_lane_arn=settings.batch_lane_state_machine_arn,
                    intake_arn=settings.intake_state_machine_arn,
                    webhook_delivery_arn=settings.webhook_delivery_state_machine_arn,
                    folder_job_arn=settings.folder_job_state_machine_arn,
                    estimate_arn=settings.estimate_state_machine_arn,
                ),
                bus=EventBridgeBus(client("events"), settings.event_bus_name),
                prices=PriceTable(settings.batchlane_prices, flex_discount=settings.batchlane_flex_discount),
                batch_jobs=BedrockBatchJobs(lambda: client("bedrock")),
                # botocore retries off (max_attempts counts retries): the governed transport retries
                # under the global limit (docs/ondemand.md); one client per read timeout.
                model_runtime=BedrockRuntime(lambda seconds: client("bedrock-runtime", max_attempts=0, read_timeout=seconds)),
            )
        return _services


def reset_services() -> None:
    global _services, _admin
    with _lock:
        if _services is not None:
            _services.db.close()
        if _admin is not None:
            _admin.close()
        _services = _admin = None
        _scoped.clear()
        reset_clients()
