"""Credentials scoped to one owner: the folder-access role assumed with the session tag ``owner=<sub>``.

The role's policy names ``${aws:PrincipalTag/owner}`` in its resource ARNs, so a folder job's S3 calls
reach only its owner's folder sources whatever the use-case code asks (docs/operations.md "Folder jobs").
One AssumeRole per owner and credential lifetime, not per object: each owner's client is kept until
shortly before its credentials expire.
"""

from __future__ import annotations

import datetime
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from botocore.config import Config

from batchlane.aws.clients import client_with_credentials
from batchlane.contract import OWNER_TAG

DURATION_S = 3600  # STS's default role-chaining maximum is 1 h; a Lambda's role session counts as chaining
REFRESH_BEFORE_S = 300  # a new session this long before expiry: no call starts with credentials about to lapse
MAX_OWNERS = 256  # clients kept per process (an LRU): a warm function serves a few owners at a time


class OwnerScopedClients:
    """Per-owner S3 clients on assumed-role credentials, cached for their lifetime."""

    def __init__(self, sts: Any, role_arn: str, *, clock: Callable[[], datetime.datetime] | None = None) -> None:
        self._sts = sts
        self._role_arn = role_arn
        self._clock = clock or (lambda: datetime.datetime.now(datetime.UTC))
        self._lock = threading.Lock()
        self._clients: OrderedDict[str, tuple[Any, datetime.datetime]] = OrderedDict()
        self.assumed = 0  # AssumeRole calls made (tests read it)

    def s3(self, owner_id: str) -> Any:
        """An S3 client acting as the folder-access role for ``owner_id`` (a fresh session once the last nears expiry)."""
        with self._lock:
            cached = self._clients.get(owner_id)
            if cached is not None and (cached[1] - self._clock()).total_seconds() > REFRESH_BEFORE_S:
                self._clients.move_to_end(owner_id)
                return cached[0]
            client, expires = self._assume(owner_id)
            self._clients[owner_id] = (client, expires)
            self._clients.move_to_end(owner_id)
            while len(self._clients) > MAX_OWNERS:
                self._clients.popitem(last=False)
            return client

    def _assume(self, owner_id: str) -> tuple[Any, datetime.datetime]:
        # The session name shows in CloudTrail; a digest keeps it within 64 characters of [\w+=,.@-].
        session_name = "folder-" + hashlib.sha256(owner_id.encode()).hexdigest()[:32]
        response = self._sts.assume_role(
            RoleArn=self._role_arn, RoleSessionName=session_name, DurationSeconds=DURATION_S, Tags=[{"Key": OWNER_TAG, "Value": owner_id}]
        )
        self.assumed += 1
        creds = response["Credentials"]
        # SigV4 for the URLs it presigns too (a folder file's source read: api/live.source_read); botocore may presign SigV2.
        config = Config(
            retries={"mode": "standard", "max_attempts": 5},
            connect_timeout=10,
            read_timeout=120,
            max_pool_connections=64,
            signature_version="s3v4",
        )
        expires = creds["Expiration"]
        if isinstance(expires, str):
            expires = datetime.datetime.fromisoformat(expires.replace("Z", "+00:00"))
        s3 = client_with_credentials(
            "s3", config, access_key_id=creds["AccessKeyId"], secret_access_key=creds["SecretAccessKey"], session_token=creds["SessionToken"]
        )
        return s3, expires
