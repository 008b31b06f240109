"""Uploads go straight to S3 with a presigned PUT: a PDF can be hundreds of MB, over the
API Gateway (10 MB) and Lambda (6 MB) payload limits, so the API never carries it."""

from __future__ import annotations

from typing import Any, Protocol

from botocore.exceptions import ClientError

UPLOAD_URL_TTL_S = 3600


class UploadPort(Protocol):
    def presigned_put(self, key: str, *, ttl_s: int = UPLOAD_URL_TTL_S) -> str: ...
    def delete(self, key: str) -> None: ...


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
