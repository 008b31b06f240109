"""The object store port and its S3 adapter."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from botocore.exceptions import ClientError

from batchlane.domain.errors import NotFound


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

    def download_to(self, key: str, path: Path) -> None:
        """Stream an object to a local file (boto3's managed transfer): a 500 MB upload never sits in memory."""
        try:
            self._s3.download_file(self.bucket, key, str(path))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
                raise NotFound(f"no object s3://{self.bucket}/{key}") from exc
            raise

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
        """Delete these objects, 1,000 a request (DeleteObjects); a key already gone is not an error
        (S3 reports it deleted), any other per-key failure raises."""
        for start in range(0, len(keys), 1000):
            batch = [{"Key": key} for key in keys[start : start + 1000]]
            answer = self._s3.delete_objects(Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True})
            if errors := answer.get("Errors"):
                raise RuntimeError(f"{len(errors)} object(s) not deleted from s3://{self.bucket}: {errors[0].get('Code')} on {errors[0].get('Key')}")
