"""The signature header: HMAC-SHA256 over ``<timestamp>.<raw body>`` with the signing secret.

``Batchlane-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>]`` — one ``v1`` per secret in
use (two during a rotation's grace period). The timestamp is the attempt's, so a receiver
rejects anything older than five minutes (a replay) while retries still verify.
"""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_HEADER = "Batchlane-Signature"
DELIVERY_HEADER = "Batchlane-Delivery"
EVENT_HEADER = "Batchlane-Event"
REPLAY_WINDOW_S = 300


def signature(secret: str, timestamp: int, body: bytes) -> str:
    return hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()


def signature_header(secrets: list[str], timestamp: int, body: bytes) -> str:
    """The header value, newest secret first."""
    if not secrets:
        raise ValueError("no signing secret")
    return ",".join([f"t={timestamp}", *(f"v1={signature(secret, timestamp, body)}" for secret in secrets)])
