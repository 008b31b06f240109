"""batchlane.ports.Services on the in-memory fakes, for the use cases' unit tests: no database, no AWS client.

The repositories share one FakeState (``uow()`` opens a new unit of work over it each time, as PostgreSQL's does
over one database); a port the test did not give fails loudly when a use case asks for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from batchlane.config import Settings
from batchlane.domain.cost import PriceTable
from batchlane.ports import (
    BatchJobs,
    ChunkAdmissions,
    Downloads,
    EventBus,
    FolderBuckets,
    ModelRuntime,
    ObjectStore,
    PageThreadDatabase,
    SecretCipher,
    Services,
    SigningSecret,
    Uploads,
    Workflows,
)
from fakes import FakeState, FakeUnitOfWork
from fakes.admission import FakeChunkAdmissions
from fakes.page_threads import FakePageThreadDatabase

Port = TypeVar("Port")


@dataclass
class FakeServices:
    settings: Settings
    store: ObjectStore
    workflows: Workflows
    bus: EventBus
    prices: PriceTable
    batch_jobs: BatchJobs
    model_runtime: ModelRuntime
    state: FakeState = field(default_factory=FakeState)
    admissions: ChunkAdmissions | None = None  # made on first use, on the state's clock
    page_threads: PageThreadDatabase | None = None  # made on first use, over the state, with no on-demand limit
    buckets: FolderBuckets | None = None
    secret: SigningSecret | None = None
    upload_urls: Uploads | None = None
    download_urls: Downloads | None = None
    cipher: SecretCipher | None = None  # each owner's webhook signing secret sealed (moto's KMS, or a test's own)
    owner_download_urls: dict[tuple[str, str], Downloads] = field(default_factory=dict)  # (bucket, owner) -> presigned GETs there

    def uow(self) -> FakeUnitOfWork:
        return FakeUnitOfWork(self.state)

    def chunk_admissions(self) -> ChunkAdmissions:
        if self.admissions is None:
            self.admissions = FakeChunkAdmissions(self.state.clock.now)
        return self.admissions

    def page_thread_database(self) -> PageThreadDatabase:
        if self.page_threads is None:
            self.page_threads = FakePageThreadDatabase(self.state)
        return self.page_threads

    def uploads(self) -> Uploads:
        return _given(self.upload_urls, "uploads")

    def downloads(self) -> Downloads:
        return _given(self.download_urls, "downloads")

    def folder_buckets(self, owner_id: str | None = None) -> FolderBuckets:
        return _given(self.buckets, "folder buckets")

    def folder_source(self, bucket: str, owner_id: str) -> ObjectStore:
        return self.store.in_bucket(bucket)

    def owner_downloads(self, bucket: str, owner_id: str) -> Downloads:
        return _given(self.owner_download_urls.get((bucket, owner_id)), f"downloads of {bucket} as {owner_id}")

    def signing_secret(self) -> SigningSecret:
        return _given(self.secret, "signing secret")

    def secret_cipher(self) -> SecretCipher:
        return _given(self.cipher, "secret cipher")


def _given(port: Port | None, name: str) -> Port:
    if port is None:
        raise AssertionError(f"a use case asked for the {name} port, which this test did not give (FakeServices)")
    return port


def _held_to_the_port(svc: FakeServices) -> Services:
    return svc  # mypy checks FakeServices against batchlane.ports.Services here
