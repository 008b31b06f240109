"""The webhook signing secret in Secrets Manager (port ``batchlane.ports.SigningSecret``): read to sign, described and rotated by admins.

Rotation is ``PutSecretValue`` with a fresh random value: Secrets Manager moves AWSCURRENT to
it and AWSPREVIOUS to the old one. For ``grace`` after the current version was created,
deliveries are signed with both, so receivers can switch secrets without dropping any.
"""

from __future__ import annotations

import secrets as token_source
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from batchlane.domain.errors import StoreUnavailable


class SecretsManagerSigningSecret:
    def __init__(self, secretsmanager: Any, secret_id: str | None) -> None:
        self._sm = secretsmanager
        self._id = secret_id

    def _secret_id(self) -> str:
        if not self._id:
            raise StoreUnavailable("No webhook signing secret is configured (WEBHOOK_SECRET_ARN).", error_id="WEBHOOK_SECRET_MISSING")
        return self._id

    def signing_keys(self, *, grace: timedelta, now: datetime | None = None) -> list[str]:
        """The current secret, then the previous one while the rotation's grace period lasts."""
        now = now or datetime.now(UTC)
        current = self._sm.get_secret_value(SecretId=self._secret_id(), VersionStage="AWSCURRENT")
        keys = [current["SecretString"]]
        if now - current["CreatedDate"] < grace:
            try:
                previous = self._sm.get_secret_value(SecretId=self._secret_id(), VersionStage="AWSPREVIOUS")
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                    raise
            else:
                keys.append(previous["SecretString"])
        return keys

    def describe(self, *, grace: timedelta) -> dict[str, Any]:
        """Id, creation and rotation dates: never the value."""
        secret = self._sm.describe_secret(SecretId=self._secret_id())
        versions = self._sm.list_secret_version_ids(SecretId=self._secret_id())["Versions"]
        current = next((v for v in versions if "AWSCURRENT" in v.get("VersionStages", [])), None)
        rotated = current["CreatedDate"] if current and any("AWSPREVIOUS" in v.get("VersionStages", []) for v in versions) else None
        grace_until = rotated + grace if rotated is not None else None
        return {
            "secretId": secret["ARN"],
            "name": secret["Name"],
            "createdAt": secret["CreatedDate"].isoformat(),
            "rotatedAt": rotated.isoformat() if rotated else None,
            "previousValidUntil": grace_until.isoformat() if grace_until and grace_until > datetime.now(UTC) else None,
            "graceHours": grace.total_seconds() / 3600,
            "signatureHeader": "Batchlane-Signature: t=<unix seconds>,v2=<hex HMAC-SHA256 of '<t>.<callbackUrl>.<raw body>'>[,v2=<previous secret>]",
        }

    def rotate(self) -> None:
        self._sm.put_secret_value(SecretId=self._secret_id(), SecretString=token_source.token_urlsafe(32))
