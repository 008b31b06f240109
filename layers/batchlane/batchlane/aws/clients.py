"""boto3 clients, made once per process and shared across threads (clients are thread-safe)."""

from __future__ import annotations

import os
import threading
from typing import Any

import boto3
from botocore.config import Config

_lock = threading.Lock()
_clients: dict[str, Any] = {}


def client(service: str, *, max_attempts: int = 5, read_timeout: float = 120, signature_version: str | None = None) -> Any:
    """A boto3 client with standard retries (exponential backoff with jitter on throttling).

    ``read_timeout`` is per client in botocore, so a caller that needs several (the model
    transport sizes it per request, converter.transports.ReadTimeoutPolicy) gets one client per value.
    ``signature_version="s3v4"`` for S3 URLs that must be SigV4 (botocore may presign SigV2).
    """
    key = f"{service}:{max_attempts}:{read_timeout:g}:{signature_version or ''}"
    with _lock:
        if key not in _clients:
            session = boto3.session.Session(region_name=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1")
            config = Config(
                retries={"mode": "standard", "max_attempts": max_attempts},
                connect_timeout=10,
                read_timeout=read_timeout,
                max_pool_connections=64,
                **({"signature_version": signature_version} if signature_version else {}),
            )
            _clients[key] = session.client(service, config=config)  # type: ignore[call-overload]
        return _clients[key]


def reset_clients() -> None:
    """Forget cached clients (the offline stack and tests change endpoints)."""
    with _lock:
        _clients.clear()
