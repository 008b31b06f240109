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

from batchlane.aws.folders import _ChunkReader
from batchlane.domain.errors import InputError, NotFound
from batchlane.keys import OBJECT_EXPIRY_DAYS
from batchlane.ports import DOWNLOAD_URL_TTL_S, PDF_CONTENT_TYPE, UPLOAD_URL_TTL_S, ObjectStoreError, StoredObject


class S3Store:
    def __init__(self, client: Any, bucket: str) -> None:
        self._s3 = client
        self.bucket = bucket

    def in_bucket(self, bucket: str) -> S3Store:
        """The same client on another bucket (a folder job's file is read where it lies)."""
        return S3Store(self._s3, bucket)

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        self._s3.put_object(Bucket=self.bucket, Key=key, Body=data, ContentType=content_type)

    def put_stream(self, key: str, chunks: Iterator[bytes], content_type: str = "application/octet-stream") -> None:
        """Upload what ``chunks`` yields without holding it (managed transfer: multipart past 8 MB)."""
        self._s3.upload_fileobj(_ChunkReader(chunks), self.bucket, key, ExtraArgs={"ContentType": content_type})

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

    def read_range(self, key: str, start: int, length: int) -> bytes:
        """``length`` bytes from ``start`` (one ranged GET): what a dry run reads of an upload too large to fetch whole."""
        if length <= 0:
            return b""
        try:
            body = self._s3.get_object(Bucket=self.bucket, Key=key, Range=f"bytes={start}-{start + length - 1}")["Body"]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
                raise NotFound(f"no object s3://{self.bucket}/{key}") from exc
            raise
        return bytes(body.read())

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


class S3Uploads:
    """Uploads go straight to S3 with a presigned POST: a PDF can be hundreds of MB, over the API
    Gateway (10 MB) and Lambda (6 MB) payload limits. The POST policy (SigV4: give an ``s3v4``
    client) binds this one key, ``Content-Type: application/pdf`` and at most the declared size
    (``content-length-range``); a presigned PUT could carry neither condition."""

    def __init__(self, s3: Any, bucket: str) -> None:
        self._s3 = s3
        self._bucket = bucket

    def presigned_post(self, key: str, *, max_bytes: int, ttl_s: int = UPLOAD_URL_TTL_S, content_type: str = PDF_CONTENT_TYPE) -> dict[str, Any]:
        """``{"url", "fields"}``: a multipart/form-data POST of ``fields`` then ``file`` to ``url``; ``content_type``
        is the type the file's name claims (domain/file_types.content_type_for): the split trusts only the bytes."""
        post = self._s3.generate_presigned_post(
            Bucket=self._bucket,
            Key=key,
            Fields={"Content-Type": content_type},
            Conditions=[{"Content-Type": content_type}, ["content-length-range", 1, max_bytes]],
            ExpiresIn=ttl_s,
        )
        return {"url": str(post["url"]), "fields": dict(post["fields"])}


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
