"""The database secret in AWS Secrets Manager: the production :class:`SecretSource`."""

from __future__ import annotations

import json
from typing import Any

from batchlane.aws.clients import client
from batchlane.domain.errors import StoreUnavailable


class SecretsManagerSource:
    """Reads the RDS secret JSON through Powertools' cache (``max_age_s``); ``force`` reads the current version.

    After a rotation the cached password is refused; :class:`batchlane.db.connection.Database`
    then calls ``fetch(force=True)`` once.
    """

    def __init__(self, secret_id: str, *, max_age_s: int = 300, secretsmanager: Any = None) -> None:
        self.secret_id = secret_id
        self._max_age_s = max_age_s
        self._client = secretsmanager
        self._provider: Any = None

    def fetch(self, *, force: bool = False) -> dict[str, Any]:
        if self._provider is None:
            from aws_lambda_powertools.utilities.parameters import SecretsProvider

            self._provider = SecretsProvider(boto3_client=self._client or client("secretsmanager"))
        try:
            value = self._provider.get(self.secret_id, max_age=self._max_age_s, force_fetch=force)
        except Exception as exc:  # Powertools wraps boto3's errors in GetParameterError
            raise StoreUnavailable(f"cannot read the database secret {self.secret_id}: {exc}") from exc
        return json.loads(value) if isinstance(value, str | bytes) else dict(value)
