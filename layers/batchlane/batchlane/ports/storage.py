"""The deployment's bucket (object store, presigned uploads and downloads) and the users' buckets a folder job reads and writes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

UPLOAD_URL_TTL_S = 600  # a presigned POST lives 10 minutes
PDF_CONTENT_TYPE = "application/pdf"
DOWNLOAD_URL_TTL_S = 900


class ObjectStoreError(Exception):
    """S3 refused a read for another reason than a missing object (AccessDenied, ...)."""


class ObjectStore(Protocol):
    """Objects of the deployment's bucket. A missing object raises ``domain.errors.NotFound``,
    another refused read ``ObjectStoreError``."""

    bucket: str

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None: ...
    def put_stream(self, key: str, chunks: Iterator[bytes], content_type: str = "application/octet-stream") -> None: ...  # never held whole
    def get_bytes(self, key: str) -> bytes: ...
    def put_json(self, key: str, value: Any) -> None: ...
    def get_json(self, key: str) -> Any: ...
    def iter_lines(self, key: str) -> Iterator[bytes]: ...
    def download_to(self, key: str, path: Path, *, max_bytes: int | None = None) -> int: ...  # streamed to a file; its size
    def read_range(self, key: str, start: int, length: int) -> bytes: ...  # one ranged GET
    def list_keys(self, prefix: str) -> list[str]: ...
    def size(self, key: str) -> int: ...
    def delete_keys(self, keys: list[str]) -> None: ...  # a key already gone is not an error
    def in_bucket(self, bucket: str) -> ObjectStore: ...  # the same store on another bucket (a folder job's source)


class Uploads(Protocol):
    """Uploads go straight to the bucket with a presigned POST (never through the API)."""

    def presigned_post(self, key: str, *, max_bytes: int, ttl_s: int = UPLOAD_URL_TTL_S, content_type: str = PDF_CONTENT_TYPE) -> dict[str, Any]: ...


@dataclass(frozen=True)
class StoredObject:
    size_bytes: int
    expires_at: datetime


class Downloads(Protocol):
    """A short-lived presigned GET, and when the object expires (NotFound when it is gone)."""

    def head(self, key: str) -> StoredObject: ...
    def presigned_get(self, key: str, *, filename: str, ttl_s: int = DOWNLOAD_URL_TTL_S) -> str: ...


@dataclass(frozen=True)
class ListedPage:
    objects: list[tuple[str, int]]  # (key, size)
    next_token: str | None  # None: this was the last page


@dataclass(frozen=True)
class ObjectHead:
    size: int
    owner: str | None  # the owner whose folder job wrote it (object metadata); None: not written by batchlane


class FolderBuckets(Protocol):
    """The user's buckets, within the configured folder sources: list one page, test, copy, write, read lines.
    A bucket the role may not list raises InputError FOLDER_NOT_READABLE; a missing object NotFound; an object
    that cannot be read or written for another reason (AccessDenied under KMS, a key too long) ObjectUnreadable.
    What a folder job writes carries its owner (``owner``), so another owner's job never takes it for its own."""

    def list_page(self, bucket: str, prefix: str, *, token: str | None, recursive: bool, max_keys: int) -> ListedPage: ...
    def size(self, bucket: str, key: str) -> int | None: ...
    def head(self, bucket: str, key: str) -> ObjectHead | None: ...
    def copy(self, source: tuple[str, str], target: tuple[str, str], *, owner: str, content_type: str = "text/markdown; charset=utf-8") -> None: ...
    def put_bytes(self, bucket: str, key: str, data: bytes, content_type: str, *, owner: str) -> None: ...
    def put_stream(self, bucket: str, key: str, chunks: Iterator[bytes], content_type: str, *, owner: str) -> None: ...
    def iter_lines(self, bucket: str, key: str) -> Iterator[bytes]: ...
    def list_keys(self, bucket: str, prefix: str) -> list[str]: ...
