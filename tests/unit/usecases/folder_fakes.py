"""An in-memory FolderBuckets (batchlane.ports) for the folder use cases' unit tests: objects with their owner stamp,
listed a page at a time as ListObjectsV2 does (key order, a continuation token)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from usecase_fakes import FakeBus, store_of

from batchlane.config import Settings
from batchlane.domain.errors import NotFound
from batchlane.folders import usecases
from batchlane.folders.enumerate import enumerate_step
from batchlane.ports import ListedPage, ObjectHead, Services
from fakes import FakeUnitOfWork

ALICE = "alice"
LISTING = Settings(batchlane_folder_list_page_size=100, batchlane_folder_list_pages_per_step=1)


@dataclass
class MemoryBuckets:
    objects: dict[tuple[str, str], tuple[bytes, str | None]] = field(default_factory=dict)  # (bucket, key) -> (body, owner)
    content_types: dict[tuple[str, str], str] = field(default_factory=dict)  # what batchlane wrote, with its Content-Type
    read_as: list[str | None] = field(default_factory=list)  # the owner each Services.folder_buckets call asked for

    def put(self, bucket: str, key: str, data: bytes = b"%PDF-1.7", *, owner: str | None = None) -> None:
        self.objects[(bucket, key)] = (data, owner)

    def list_page(self, bucket: str, prefix: str, *, token: str | None, recursive: bool, max_keys: int) -> ListedPage:
        keys = sorted(k for b, k in self.objects if b == bucket and k.startswith(prefix) and (recursive or "/" not in k[len(prefix) :]))
        keys = [k for k in keys if token is None or k > token]
        page = keys[:max_keys]
        return ListedPage([(k, len(self.objects[(bucket, k)][0])) for k in page], page[-1] if len(keys) > max_keys else None)

    def size(self, bucket: str, key: str) -> int | None:
        found = self.objects.get((bucket, key))
        return len(found[0]) if found else None

    def head(self, bucket: str, key: str) -> ObjectHead | None:
        found = self.objects.get((bucket, key))
        return ObjectHead(len(found[0]), found[1]) if found else None

    def copy(self, source: tuple[str, str], target: tuple[str, str], *, owner: str, content_type: str = "text/markdown; charset=utf-8") -> None:
        if source not in self.objects:
            raise NotFound(source[1])
        self.objects[target] = (self.objects[source][0], owner)
        self.content_types[target] = content_type

    def put_bytes(self, bucket: str, key: str, data: bytes, content_type: str, *, owner: str) -> None:
        self.objects[(bucket, key)] = (data, owner)
        self.content_types[(bucket, key)] = content_type

    def put_stream(self, bucket: str, key: str, chunks: Iterator[bytes], content_type: str, *, owner: str) -> None:
        self.objects[(bucket, key)] = (b"".join(chunks), owner)
        self.content_types[(bucket, key)] = content_type

    def iter_lines(self, bucket: str, key: str) -> Iterator[bytes]:
        if (bucket, key) not in self.objects:
            raise NotFound(key)
        yield from self.objects[(bucket, key)][0].splitlines()

    def list_keys(self, bucket: str, prefix: str) -> list[str]:
        return sorted(k for b, k in self.objects if b == bucket and k.startswith(prefix))


@dataclass
class BucketStore:
    """One of the buckets as the ObjectStore a folder's files are read through (Services.folder_source): what a
    conversion sizes and the dry run downloads. A missing object is NotFound, as aws/s3.py answers S3's 404."""

    buckets: MemoryBuckets
    bucket: str

    def _body(self, key: str) -> bytes:
        if (self.bucket, key) not in self.buckets.objects:
            raise NotFound(f"no object s3://{self.bucket}/{key}")
        return self.buckets.objects[(self.bucket, key)][0]

    def size(self, key: str) -> int:
        return len(self._body(key))

    def download_to(self, key: str, path: Path, *, max_bytes: int | None = None) -> int:
        path.write_bytes(self._body(key))
        return path.stat().st_size


# -- a folder job driven on the fakes ------------------------------------------------------------------------------
def on_folders(svc: Services, buckets: MemoryBuckets, **settings: Any) -> Services:
    """``svc`` with the bucket ``folders`` granted and ``buckets`` as its folder buckets and its folders' source store."""
    svc = dataclasses.replace(svc, settings=svc.settings.model_copy(update={"batchlane_folder_sources": "folders", **settings}))  # type: ignore[type-var]

    def as_owner(owner_id: str | None = None) -> MemoryBuckets:
        buckets.read_as.append(owner_id)
        return buckets

    svc.folder_buckets = as_owner  # type: ignore[method-assign, assignment]
    svc.buckets = buckets  # type: ignore[attr-defined]  # the same objects, for a test to seed (not a read as anyone)
    svc.folder_source = lambda bucket, owner_id: BucketStore(buckets, bucket)  # type: ignore[method-assign, assignment, return-value]
    return svc


def listed_job(svc: Services, fake_uow: FakeUnitOfWork, buckets: MemoryBuckets, names: list[str], *, folder: str = "in", **spec: Any) -> str:
    """A job over ``s3://folders/<folder>/`` holding ``names`` (mirrored to ``out/``, or ``<folder>-out/``), listed."""
    for name in names:
        buckets.put("folders", f"{folder}/{name}", b"%PDF-1.7 " + name.encode())
    out = "out" if folder == "in" else f"{folder}-out"
    body = {"input": {"folder": f"s3://folders/{folder}/"}, "output": {"layout": "mirror", "folder": f"s3://folders/{out}/"}, **spec}
    job, created = usecases.submit(svc, ALICE, body)
    assert created
    while not enumerate_step(fake_uow, svc.folder_buckets, FakeBus(), LISTING, job["id"])["enumerationDone"]:
        pass
    return str(job["id"])


def end_conversion(fake_uow: FakeUnitOfWork, svc: Services, job_id: str, key: str, status: str, **columns: Any) -> str:
    """The file's conversion ends (as the conversion's own workflow would leave its row); its Markdown in our bucket."""
    f = next(f for f in fake_uow.folder_jobs.list_files(job_id) if f.source_key == key)
    assert f.conversion_job_id is not None
    row = fake_uow.jobs.get_job(f.conversion_job_id)
    assert row is not None
    markdown_key = f"jobs/{row.id}/output.md"
    fake_uow.jobs.put_job(dataclasses.replace(row, status=status, markdown_key=markdown_key, **columns))
    if status == "completed":
        ours(svc, markdown_key, f"# {key}".encode())
    return row.id


def ours(svc: Services, key: str, data: bytes) -> None:
    """An object in our bucket, seen both through the store and by the folder buckets' copy (one S3 bucket)."""
    store_of(svc).put_bytes(key, data)
    svc.buckets.put(svc.store.bucket, key, data)  # type: ignore[attr-defined]


def file_of(fake_uow: FakeUnitOfWork, job_id: str, key: str) -> Any:
    return next(f for f in fake_uow.folder_jobs.list_files(job_id) if f.source_key == key)
