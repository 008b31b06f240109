"""The user's buckets, as a folder job sees them: list one page, test, copy, write, read lines.

A folder job's calls go through credentials scoped to its owner (runtime.Services.folder_buckets:
the folder-access role tagged ``owner=<sub>``), so IAM itself keeps them inside that owner's folder
sources; folders/spec.check_allowed refuses the rest before anything is listed.
S3 errors are translated once, here: a bucket the role may not read is FOLDER_NOT_READABLE; one
object that cannot be read or written (anything but missing or a throttle) is ObjectUnreadable, so
that file fails and the rest of the folder goes on. Every object written carries its owner in the
``batchlane-owner`` metadata (the folder job's owner, a Cognito sub).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from botocore.exceptions import ClientError

from batchlane.domain.errors import InputError, NotFound, ObjectUnreadable
from batchlane.ports import FolderBuckets, ListedPage, ObjectHead

__all__ = ["OWNER_METADATA", "FolderBuckets", "ListedPage", "ObjectHead", "S3FolderBuckets"]

_MISSING = ("NoSuchKey", "404", "NotFound")
_REFUSED = ("AccessDenied", "AccessDeniedException", "NoSuchBucket", "AllAccessDisabled", "403")
# Worth the Lambda's retry (the whole step again): the service, not this object.
_TRANSIENT = ("SlowDown", "ServiceUnavailable", "InternalError", "RequestTimeout", "503", "500", "Throttling", "ThrottlingException")
OWNER_METADATA = "batchlane-owner"


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code") or exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or "")


def _object_error(exc: ClientError, what: str) -> Exception:
    """NotFound, the ClientError itself for a transient one, else ObjectUnreadable naming the code (never the message)."""
    code = _code(exc)
    if code in _MISSING:
        return NotFound(f"no object {what}")
    if code in _TRANSIENT:
        return exc
    return ObjectUnreadable(f"{what} cannot be read or written ({code or 'refused'}).")


class S3FolderBuckets:
    def __init__(self, client: Any) -> None:
        self._s3 = client

    def list_page(self, bucket: str, prefix: str, *, token: str | None, recursive: bool, max_keys: int) -> ListedPage:
        """One ListObjectsV2 page from the checkpoint ``token``: memory holds one page, never the folder."""
        params: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": max_keys}
        if token:
            params["ContinuationToken"] = token
        if not recursive:
            params["Delimiter"] = "/"
        try:
            page = self._s3.list_objects_v2(**params)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            if code in _REFUSED:
                raise InputError(f"s3://{bucket}/{prefix} cannot be listed ({code}).", error_id="FOLDER_NOT_READABLE") from exc
            raise
        objects = [(item["Key"], int(item.get("Size", 0))) for item in page.get("Contents", [])]
        return ListedPage(objects, page.get("NextContinuationToken") if page.get("IsTruncated") else None)

    def size(self, bucket: str, key: str) -> int | None:
        """The object's size, None when there is none."""
        head = self.head(bucket, key)
        return head.size if head is not None else None

    def head(self, bucket: str, key: str) -> ObjectHead | None:
        """Size and the owner who wrote it (None: not written by a folder job); None when there is no object."""
        try:
            response = self._s3.head_object(Bucket=bucket, Key=key)
        except ClientError as exc:
            error = _object_error(exc, f"s3://{bucket}/{key}")
            if isinstance(error, NotFound) or (_code(exc) in ("403", "AccessDenied") and self._absent(bucket, key)):
                return None
            raise error from exc
        return ObjectHead(int(response["ContentLength"]), (response.get("Metadata") or {}).get(OWNER_METADATA))

    def _absent(self, bucket: str, key: str) -> bool:
        """A 403 HEAD under a prefix-conditioned ListBucket may mean "no such key" (S3 answers 404 only with
        ListBucket on the key): listing exactly that key, within the same grant, tells which."""
        try:
            page = self._s3.list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1)
        except ClientError:
            return False
        return not any(item["Key"] == key for item in page.get("Contents", []))

    def copy(self, source: tuple[str, str], target: tuple[str, str], *, owner: str, content_type: str = "text/markdown; charset=utf-8") -> None:
        """Server-side copy (boto3's managed copy: multipart past 5 GB) stamped with its owner; nothing passes through the function."""
        try:
            self._s3.copy(
                {"Bucket": source[0], "Key": source[1]},
                target[0],
                target[1],
                ExtraArgs={"Metadata": {OWNER_METADATA: owner}, "MetadataDirective": "REPLACE", "ContentType": content_type},
            )
        except ClientError as exc:
            raise _object_error(exc, f"s3://{source[0]}/{source[1]} → s3://{target[0]}/{target[1]}") from exc

    def put_bytes(self, bucket: str, key: str, data: bytes, content_type: str, *, owner: str) -> None:
        self._s3.put_object(Bucket=bucket, Key=key, Body=data, ContentType=content_type, Metadata={OWNER_METADATA: owner})

    def put_stream(self, bucket: str, key: str, chunks: Iterator[bytes], content_type: str, *, owner: str) -> None:
        """Upload what ``chunks`` yields without holding it (boto3's managed transfer: multipart past 8 MB)."""
        self._s3.upload_fileobj(_ChunkReader(chunks), bucket, key, ExtraArgs={"ContentType": content_type, "Metadata": {OWNER_METADATA: owner}})

    def iter_lines(self, bucket: str, key: str) -> Iterator[bytes]:
        try:
            body = self._s3.get_object(Bucket=bucket, Key=key)["Body"]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _MISSING:
                raise NotFound(f"no object s3://{bucket}/{key}") from exc
            raise
        yield from body.iter_lines(chunk_size=1 << 20)

    def list_keys(self, bucket: str, prefix: str) -> list[str]:
        """Small listings only (a job's report parts)."""
        keys: list[str] = []
        for page in self._s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            keys.extend(item["Key"] for item in page.get("Contents", []))
        return keys


class _ChunkReader:
    """A read()-able view of an iterator of byte strings (what upload_fileobj takes)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buffer = b""

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._buffer) < size:
            try:
                self._buffer += next(self._chunks)
            except StopIteration:
                break
        if size < 0:
            out, self._buffer = self._buffer, b""
        else:
            out, self._buffer = self._buffer[:size], self._buffer[size:]
        return out
