"""An in-memory FolderBuckets (batchlane.ports) for the folder use cases' unit tests: objects with their owner stamp,
listed a page at a time as ListObjectsV2 does (key order, a continuation token)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from batchlane.domain.errors import NotFound
from batchlane.ports import ListedPage, ObjectHead


@dataclass
class MemoryBuckets:
    objects: dict[tuple[str, str], tuple[bytes, str | None]] = field(default_factory=dict)  # (bucket, key) -> (body, owner)

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

    def put_bytes(self, bucket: str, key: str, data: bytes, content_type: str, *, owner: str) -> None:
        self.objects[(bucket, key)] = (data, owner)

    def put_stream(self, bucket: str, key: str, chunks: Iterator[bytes], content_type: str, *, owner: str) -> None:
        self.objects[(bucket, key)] = (b"".join(chunks), owner)

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
