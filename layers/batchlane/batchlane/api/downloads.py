"""Downloads leave the API the way uploads come in: a short-lived presigned GET straight to S3.

The URL is signed with SigV4 (botocore's default presign for S3 may be SigV2, which
newer regions refuse). When the object expires is S3's own answer where it gives one
(HeadObject ``Expiration: expiry-date="...", rule-id="..."``, present when a lifecycle
rule applies); otherwise it is computed as S3 does: creation time plus the rule's days,
rounded up to the next midnight UTC (S3 User Guide, "Lifecycle configuration elements").
"""

from __future__ import annotations

import email.utils
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from botocore.exceptions import ClientError

from batchlane.aws.clients import client
from batchlane.domain.errors import NotFound
from batchlane.keys import OBJECT_EXPIRY_DAYS

DOWNLOAD_URL_TTL_S = 900


@dataclass(frozen=True)
class StoredObject:
    size_bytes: int
    expires_at: datetime


class DownloadPort(Protocol):
    def head(self, key: str) -> StoredObject: ...
    def presigned_get(self, key: str, *, filename: str, ttl_s: int = DOWNLOAD_URL_TTL_S) -> str: ...


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


def presign_client() -> Any:
    """The process's S3 client that signs URLs with SigV4 (botocore's default presign may be SigV2)."""
    return client("s3", signature_version="s3v4")


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
