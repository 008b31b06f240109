"""S3 adapters: the object store, presigned uploads and downloads (ports in batchlane.ports).

Downloads are signed with SigV4 (the composition root gives them an ``s3v4`` client: botocore's
default presign for S3 may be SigV2, which newer regions refuse). When an object expires is
S3's own answer where it gives one (HeadObject ``Expiration``, present when a lifecycle rule
applies); otherwise it is computed as S3 does: creation time plus the rule's days, rounded up
to the next midnight UTC (S3 User Guide, "Lifecycle configuration elements").
"""

from __future__ import annotations

import email.utils
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from batchlane.domain.errors import NotFound
from batchlane.keys import OBJECT_EXPIRY_DAYS
from batchlane.ports import DOWNLOAD_URL_TTL_S, UPLOAD_URL_TTL_S, ObjectStoreError, StoredObject


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
            code = exc.response.get("Error", {}).get("Code")
            if code in ("NoSuchKey", "404"):
                raise NotFound(f"no object s3://{self.bucket}/{key}") from exc
            raise ObjectStoreError(f"{code}: s3://{self.bucket}/{key}") from exc

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


class S3Uploads:
    def __init__(self, s3: Any, bucket: str) -> None:
        self._s3 = s3
        self._bucket = bucket

    def presigned_put(self, key: str, *, ttl_s: int = UPLOAD_URL_TTL_S) -> str:
        return str(self._s3.generate_presigned_url("put_object", Params={"Bucket": self._bucket, "Key": key}, ExpiresIn=ttl_s))

    def delete(self, key: str) -> None:
        try:
            self._s3.delete_object(Bucket=self._bucket, Key=key)
        except ClientError:  # already gone, or never uploaded: the file row is what matters
            pass


def lifecycle_expiry(last_modified: datetime, days: int = OBJECT_EXPIRY_DAYS) -> datetime:
    """Creation + ``days``, rounded up to the next midnight UTC (how S3 schedules a lifecycle expiration)."""
    moment = last_modified.astimezone(UTC) + timedelta(days=days)
    midnight = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return midnight if midnight == moment else midnight + timedelta(days=1)


def _expiry_header(value: str | None) -> datetime | None:
    """``expiry-date="Sun, 14 Oct 2018 00:00:00 GMT", rule-id="..."`` → the date."""
    if not value or 'expiry-date="' not in value:
        return None
    date = value.split('expiry-date="', 1)[1].split('"', 1)[0]
    try:
        return email.utils.parsedate_to_datetime(date).astimezone(UTC)
    except (TypeError, ValueError):
        return None


class S3Downloads:
    def __init__(self, s3: Any, bucket: str) -> None:
        self._s3 = s3
        self._bucket = bucket

    def head(self, key: str) -> StoredObject:
        try:
            head = self._s3.head_object(Bucket=self._bucket, Key=key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
                raise NotFound(f"no object {key}") from exc
            raise
        expires = _expiry_header(head.get("Expiration")) or lifecycle_expiry(head["LastModified"])
        return StoredObject(int(head["ContentLength"]), expires)

    def presigned_get(self, key: str, *, filename: str, ttl_s: int = DOWNLOAD_URL_TTL_S) -> str:
        params = {"Bucket": self._bucket, "Key": key, "ResponseContentDisposition": f'attachment; filename="{filename}"'}
        return str(self._s3.generate_presigned_url("get_object", Params=params, ExpiresIn=ttl_s))
