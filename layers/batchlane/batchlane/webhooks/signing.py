"""The signature header: HMAC-SHA256 over ``<timestamp>.<target URL>.<raw body>`` with the signing secret.

``Batchlane-Signature: t=<unix seconds>,v2=<hex>[,v2=<hex>]`` — one ``v2`` per secret in
use (two during a rotation's grace period). The timestamp is the attempt's, so a receiver
rejects anything older than five minutes (a replay) while retries still verify. The URL the
delivery is sent to is signed too (v2; v1 signed only the timestamp and body): a delivery one
user received cannot be replayed to another user's receiver, whose URL differs (issue 21).
"""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_HEADER = "Batchlane-Signature"
DELIVERY_HEADER = "Batchlane-Delivery"
EVENT_HEADER = "Batchlane-Event"
SCHEME = "v2"
REPLAY_WINDOW_S = 300


def signed_bytes(timestamp: int, url: str, body: bytes) -> bytes:
    return f"{timestamp}.{url}.".encode() + body


def signature(secret: str, timestamp: int, url: str, body: bytes) -> str:
    return hmac.new(secret.encode(), signed_bytes(timestamp, url, body), hashlib.sha256).hexdigest()


def signature_header(secrets: list[str], timestamp: int, url: str, body: bytes) -> str:
    """The header value, newest secret first."""
    if not secrets:
        raise ValueError("no signing secret")
    return ",".join([f"t={timestamp}", *(f"{SCHEME}={signature(secret, timestamp, url, body)}" for secret in secrets)])
