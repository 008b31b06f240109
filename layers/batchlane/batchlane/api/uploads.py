"""Uploads go straight to S3 with a presigned POST: a PDF can be hundreds of MB, over the
API Gateway (10 MB) and Lambda (6 MB) payload limits, so the API never carries it.

The POST policy (SigV4) binds what S3 accepts: this one key, ``Content-Type: application/pdf``,
and at most the size the user declared (``content-length-range``); it lives 10 minutes. A
presigned PUT could carry neither condition, and botocore signs it SigV2 by default.
"""

from __future__ import annotations

from typing import Any, Protocol

UPLOAD_URL_TTL_S = 600
PDF_CONTENT_TYPE = "application/pdf"


class UploadPort(Protocol):
    def presigned_post(self, key: str, *, max_bytes: int, ttl_s: int = UPLOAD_URL_TTL_S) -> dict[str, Any]: ...


class S3Uploads:
    def __init__(self, s3: Any, bucket: str) -> None:
        self._s3 = s3  # a client with signature_version s3v4 (api.downloads.presign_client)
        self._bucket = bucket

    def presigned_post(self, key: str, *, max_bytes: int, ttl_s: int = UPLOAD_URL_TTL_S) -> dict[str, Any]:
        """``{"url", "fields"}``: a multipart/form-data POST of ``fields`` then ``file`` to ``url``."""
        post = self._s3.generate_presigned_post(
            Bucket=self._bucket,
            Key=key,
            Fields={"Content-Type": PDF_CONTENT_TYPE},
            Conditions=[{"Content-Type": PDF_CONTENT_TYPE}, ["content-length-range", 1, max_bytes]],
            ExpiresIn=ttl_s,
        )
        return {"url": str(post["url"]), "fields": dict(post["fields"])}
