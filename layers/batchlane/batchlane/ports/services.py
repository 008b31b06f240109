"""What a use case is given: every port, as one ``Services``. ``runtime.py`` builds the deployed one (AWS and
PostgreSQL adapters, once per process) and only the entry points (functions/, the API's routes, devtools) call it;
unit tests build one on the in-memory fakes (tests/fakes/services.py)."""

from __future__ import annotations

from typing import Protocol

from batchlane.config import Settings
from batchlane.domain.cost import PriceTable
from batchlane.ports.bedrock import BatchJobs, ModelRuntime
from batchlane.ports.ondemand import ChunkAdmissions, PageThreadDatabase
from batchlane.ports.storage import Downloads, FolderBuckets, ObjectStore, Uploads
from batchlane.ports.uow import UnitOfWork
from batchlane.ports.webhooks import SecretCipher, SigningSecret
from batchlane.ports.workflows import EventBus, Workflows


class Services(Protocol):
    @property
    def settings(self) -> Settings: ...
    @property
    def store(self) -> ObjectStore: ...  # the deployment's bucket
    @property
    def workflows(self) -> Workflows: ...
    @property
    def bus(self) -> EventBus: ...
    @property
    def prices(self) -> PriceTable: ...
    @property
    def batch_jobs(self) -> BatchJobs: ...
    @property
    def model_runtime(self) -> ModelRuntime: ...

    def uow(self) -> UnitOfWork: ...  # a new unit of work over the repositories: use cases take this, never a database
    def chunk_admissions(self) -> ChunkAdmissions: ...  # the chunk processor's admission slots (filejob/admission.py)
    def page_thread_database(self) -> PageThreadDatabase: ...  # what a chunk's page threads reach the database through
    def uploads(self) -> Uploads: ...
    def downloads(self) -> Downloads: ...
    def folder_buckets(self, owner_id: str | None = None) -> FolderBuckets: ...  # the user's buckets as ``owner_id``'s folder job may see them
    def folder_source(self, bucket: str, owner_id: str) -> ObjectStore: ...  # a folder file's bucket, read as its owner
    def owner_downloads(self, bucket: str, owner_id: str) -> Downloads: ...  # presigned GETs of a user's bucket, as its owner
    def signing_secret(self) -> SigningSecret: ...  # the deployment's (the migration's)
    def secret_cipher(self) -> SecretCipher: ...  # seals and opens each owner's signing secret
