"""The object store port and its S3 adapter."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from botocore.exceptions import ClientError

from batchlane.domain.errors import InputError, NotFound


class ObjectStore(Protocol):
    bucket: str

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None: ...
    def get_bytes(self, key: str) -> bytes: ...
    def put_json(self, key: str, value: Any) -> None: ...
    def get_json(self, key: str) -> Any: ...
    def iter_lines(self, key: str) -> Iterator[bytes]: ...
    def list_keys(self, prefix: str) -> list[str]: ...
    def size(self, key: str) -> int: ...
    def delete_keys(self, keys: list[str]) -> None: ...


class S3Store:
    def __init__(self, client: Any, bucket: str) -> None:
        self._s3 = client
        self.bucket = bucket

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        self._s3.put_object(Bucket=self.bucket, Key=key, Body=data, ContentType=content_type)

    def get_bytes(self, key: str) -> bytes:
        try:
            return self._s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                raise NotFound(f"no object s3://{self.bucket}/{key}") from exc
            raise

    def put_json(self, key: str, value: Any) -> None:
        self.put_bytes(key, json.dumps(value, separators=(",", ":")).encode(), "application/json")

    def get_json(self, key: str) -> Any:
        return json.loads(self.get_bytes(key))

    def iter_lines(self, key: str) -> Iterator[bytes]:
        """Stream an object line by line: memory stays bounded whatever its size."""
        try:
            body = self._s3.get_object(Bucket=self.bucket, Key=key)["Body"]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                raise NotFound(f"no object s3://{self.bucket}/{key}") from exc
            raise
        yield from body.iter_lines(chunk_size=1 << 20)

    def download_to(self, key: str, path: Path, *, max_bytes: int | None = None) -> int:
        """Stream an object to a local file (a 500 MB upload never sits in memory); returns its size.

        The size is checked before a byte is loaded (HeadObject) and the GET is bound to the ETag
        the check saw (``IfMatch``): an object replaced in between answers 412, never unchecked bytes.
        """
        try:
            head = self._s3.head_object(Bucket=self.bucket, Key=key)
            size, etag = int(head["ContentLength"]), str(head["ETag"])
            if max_bytes is not None and size > max_bytes:
                raise ObjectTooLarge(f"s3://{self.bucket}/{key} is {size} bytes; at most {max_bytes} are read")
            body = self._s3.get_object(Bucket=self.bucket, Key=key, IfMatch=etag)["Body"]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
                raise NotFound(f"no object s3://{self.bucket}/{key}") from exc
            raise
        written = 0
        with path.open("wb") as out:
            for block in body.iter_chunks(chunk_size=1 << 20):
                written += len(block)
                if written > size:  # more than HeadObject promised: not the object that was checked
                    raise ObjectTooLarge(f"s3://{self.bucket}/{key} grew past {size} bytes while being read")
                out.write(block)
        return written

    def list_keys(self, prefix: str) -> list[str]:
        keys: list[str] = []
        for page in self._s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            keys.extend(item["Key"] for item in page.get("Contents", []))
        return keys

    def size(self, key: str) -> int:
        try:
            return int(self._s3.head_object(Bucket=self.bucket, Key=key)["ContentLength"])
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
                raise NotFound(f"no object s3://{self.bucket}/{key}") from exc
            raise

    def delete_keys(self, keys: list[str]) -> None:
        """Delete every key (1,000 a request). Only "already gone" is ignored: a refusal raises, so a
        delete the user asked for is never answered "deleted" while the objects stay."""
        for start in range(0, len(keys), 1000):
            batch = [{"Key": key} for key in keys[start : start + 1000]]
            try:
                answer = self._s3.delete_objects(Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True})
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") == "NoSuchKey":
                    continue
                raise
            # DeleteObjects answers 200 with per-key errors (AccessDenied among them): they are failures too.
            failed = [e for e in answer.get("Errors", []) if e.get("Code") != "NoSuchKey"]
            if failed:
                first = failed[0]
                raise ObjectDeleteFailed(f"{len(failed)} object(s) not deleted, e.g. {first.get('Key')}: {first.get('Code')}")


class ObjectTooLarge(InputError):
    """An object over the size its reader accepts (a PDF over BATCHLANE_MAX_FILE_MB)."""

    error_id = "PDF_TOO_LARGE"


class ObjectDeleteFailed(RuntimeError):
    """S3 refused to delete some objects (DeleteObjects' per-key errors)."""
