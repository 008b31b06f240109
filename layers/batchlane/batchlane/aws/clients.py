"""boto3 clients, made once per process and shared across threads (clients are thread-safe).

Every client comes from one boto3 session per process and Region: a session's loader reads each service's
model files (endpoints, the service's API) once. A new session per client read them again: 116 ms of CPU
for a bedrock-runtime client and 160 ms for an S3 one, against 9 and 25 from a shared session (measured
2026-12-03), paid at every cold start and by every read timeout the model transport needs.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import boto3
from botocore.config import Config

_lock = threading.Lock()
_clients: dict[str, Any] = {}
_sessions: dict[str, boto3.session.Session] = {}


# S3 URLs the console reaches name the bucket's regional endpoint (<bucket>.s3.<region>.amazonaws.com): the console's
# CSP allows that one host (infra/console.py). botocore presigns for the global <bucket>.s3.amazonaws.com in some
# Regions (eu-west-1 here, us-east-1 by default), so S3 clients get the regional endpoint, virtual-hosted. A custom
# endpoint (the offline stack's AWS_ENDPOINT_URL) is left as it is.
# Virtual-hosted: the working bucket's name has no dot (CDK names it). Users' buckets (a dotted name would fail TLS
# virtual-hosted) are reached through the folder-access role's clients, which keep botocore's addressing.
S3_ADDRESSING = {"addressing_style": "virtual", "us_east_1_regional_endpoint": "regional"}


def s3_endpoint() -> dict[str, str]:
    """``endpoint_url`` for an S3 client: the Region's own, unless the environment names an endpoint."""
    if os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL"):
        return {}
    return {"endpoint_url": f"https://s3.{_region()}.amazonaws.com"}


def _region() -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


def _session() -> boto3.session.Session:
    """This process's session for the current Region; call with ``_lock`` held (a session is not thread-safe)."""
    region = _region()
    if region not in _sessions:
        _sessions[region] = boto3.session.Session(region_name=region)
    return _sessions[region]


def client(service: str, *, max_attempts: int = 5, read_timeout: float = 120, signature_version: str | None = None) -> Any:
    """A boto3 client with standard retries (exponential backoff with jitter on throttling).

    ``read_timeout`` is per client in botocore, so a caller that needs several (the model
    transport sizes it per request, claude.transports.ReadTimeoutPolicy) gets one client per value.
    ``signature_version="s3v4"`` for S3 URLs that must be SigV4 (botocore may presign SigV2).
    """
    key = f"{service}:{max_attempts}:{read_timeout:g}:{signature_version or ''}"
    with _lock:
        if key not in _clients:
            config = Config(
                retries={"mode": "standard", "max_attempts": max_attempts},
                connect_timeout=10,
                read_timeout=read_timeout,
                max_pool_connections=64,
                **({"signature_version": signature_version} if signature_version else {}),
                **({"s3": S3_ADDRESSING} if service == "s3" and s3_endpoint() else {}),
            )
            _clients[key] = _session().client(service, config=config, **(s3_endpoint() if service == "s3" else {}))  # type: ignore[call-overload]
        return _clients[key]


def client_with_credentials(service: str, config: Config, *, access_key_id: str, secret_access_key: str, session_token: str) -> Any:
    """A client that signs with these credentials (an assumed role's), from the process's shared session; not cached."""
    with _lock:
        return _session().client(  # type: ignore[call-overload]
            service,
            config=config,
            aws_access_key_id=access_key_id,
            aws_secret_access_key=secret_access_key,
            aws_session_token=session_token,
        )


def reset_clients() -> None:
    """Forget cached clients (the offline stack and tests change endpoints)."""
    with _lock:
        _clients.clear()
        _sessions.clear()
