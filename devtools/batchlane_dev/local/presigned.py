"""What S3 checks of a presigned request and moto does not: its SigV4 signature, its expiry and a POST's policy.

The offline console reaches the emulated S3 through the API server's ``/_s3`` proxy (same origin, no CORS). The proxy
forwards only what this module accepts: a GET or HEAD whose query signature (AWS Signature Version 4, "Authenticating
Requests: Using Query Parameters") is right for a key the stack knows and is not expired; a browser POST whose policy
is signed ("Calculating a signature for POST") and not expired, and whose form meets every condition of the policy
(bucket, key, Content-Type, content-length-range: moto enforces none, FACTS "moto accepts a presigned POST that breaks
its policy"). Anything else is 403, as S3 would answer (issue 40.5).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from botocore.auth import S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

SIGV4_TIME = "%Y%m%dT%H%M%SZ"
MAX_EXPIRES_S = 7 * 24 * 3600  # SigV4's own limit (a week)
SecretFor = Callable[[str], str | None]  # access key id → its secret (None: unknown)


def _scope(credential: str) -> tuple[str, str, str, str] | None:
    """``AKID/yyyymmdd/region/s3/aws4_request`` → (key id, date, region, service)."""
    parts = credential.split("/")
    if len(parts) != 5 or parts[4] != "aws4_request":
        return None
    return parts[0], parts[1], parts[2], parts[3]


def _signing_key(secret: str, date: str, region: str, service: str) -> bytes:
    key = ("AWS4" + secret).encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key


def check_query(method: str, origin: str, raw_path: str, raw_query: str, secret_for: SecretFor, *, now: datetime | None = None) -> str | None:
    """None when ``method raw_path?raw_query`` sent to ``origin`` (the emulator's, which the URL was signed for) is a
    valid, unexpired SigV4 presigned request; else why not."""
    now = now or datetime.now(UTC)
    pairs = parse_qsl(raw_query, keep_blank_values=True)
    params = dict(pairs)
    if params.get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256" or "X-Amz-Signature" not in params:
        return "not a SigV4 presigned URL"
    scope = _scope(params.get("X-Amz-Credential", ""))
    if scope is None or scope[3] != "s3":
        return "a credential scope S3 would not take"
    key_id, date, region, _ = scope
    try:
        signed_at = datetime.strptime(params.get("X-Amz-Date", ""), SIGV4_TIME).replace(tzinfo=UTC)
        expires = int(params.get("X-Amz-Expires", ""))
    except ValueError:
        return "no valid X-Amz-Date or X-Amz-Expires"
    if not 1 <= expires <= MAX_EXPIRES_S or signed_at.strftime("%Y%m%d") != date:
        return "an expiry or date S3 would not take"
    if now > signed_at + timedelta(seconds=expires):
        return "expired"
    secret = secret_for(key_id)
    if secret is None:
        return "signed with a key the stack does not know"
    unsigned = "&".join(pair for pair in raw_query.split("&") if not pair.startswith("X-Amz-Signature="))
    request = AWSRequest(method=method, url=f"{origin}{raw_path}" + (f"?{unsigned}" if unsigned else ""), headers={})
    request.context["timestamp"] = params["X-Amz-Date"]
    auth = S3SigV4QueryAuth(Credentials(key_id, secret, params.get("X-Amz-Security-Token")), "s3", region, expires)
    expected = auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)
    return None if hmac.compare_digest(expected, params["X-Amz-Signature"]) else "the signature does not match"


def check_post(bucket: str, fields: Mapping[str, str], file_size: int, secret_for: SecretFor, *, now: datetime | None = None) -> str | None:
    """None when a browser POST of ``fields`` (the form, the file left out) and a file of ``file_size`` bytes to
    ``bucket`` is what its signed policy allows; else why not. Field names are matched case-insensitively, as S3 does."""
    now = now or datetime.now(UTC)
    form = {k.lower(): v for k, v in fields.items()}
    if form.get("x-amz-algorithm") != "AWS4-HMAC-SHA256" or "policy" not in form or "x-amz-signature" not in form:
        return "not a SigV4 POST policy"
    scope = _scope(form.get("x-amz-credential", ""))
    if scope is None or scope[3] != "s3":
        return "a credential scope S3 would not take"
    key_id, date, region, service = scope
    secret = secret_for(key_id)
    if secret is None:
        return "signed with a key the stack does not know"
    expected = hmac.new(_signing_key(secret, date, region, service), form["policy"].encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, form["x-amz-signature"]):
        return "the policy's signature does not match"
    try:
        policy = json.loads(base64.b64decode(form["policy"]))
        expiration = datetime.fromisoformat(str(policy["expiration"]).replace("Z", "+00:00"))
    except (ValueError, KeyError, TypeError):
        return "an unreadable policy"
    if now > expiration:
        return "the policy expired"
    values = {**form, "bucket": bucket}
    for condition in policy.get("conditions", []):
        refused = _refused(condition, values, file_size)
        if refused:
            return refused
    return None


def _refused(condition: Any, values: Mapping[str, str], file_size: int) -> str | None:
    """Why one condition of a POST policy is not met ("Creating a POST policy": exact match, starts-with, content-length-range)."""
    if isinstance(condition, dict):
        ((name, want),) = condition.items()
        got = values.get(name.lower())
        return None if got == str(want) else f"{name} is not {want!r}"
    if isinstance(condition, list) and len(condition) == 3 and condition[0] == "content-length-range":
        low, high = int(condition[1]), int(condition[2])
        return None if low <= file_size <= high else f"{file_size} bytes is outside {low}-{high}"
    if isinstance(condition, list) and len(condition) == 3 and condition[0] in ("eq", "starts-with"):
        name = str(condition[1]).lstrip("$").lower()
        got, want = values.get(name), str(condition[2])
        if got is None:
            return f"{name} is missing"
        return None if (got == want if condition[0] == "eq" else got.startswith(want)) else f"{name} does not meet {condition[0]} {want!r}"
    return f"a condition S3 would not take: {condition!r}"


def moto_secret_for(static: Mapping[str, str]) -> SecretFor:
    """Secrets by key id: the stack's static credentials, then the sessions moto's STS handed out (the folder-access
    role's, which sign a folder file's source PDF), looked up in this process, where the emulator runs."""

    def secret_for(key_id: str) -> str | None:
        if key_id in static:
            return static[key_id]
        try:
            from moto.sts.models import sts_backends
        except ImportError:
            return None
        for account in list(sts_backends):
            for backend in list(sts_backends[account].values()):
                for role in list(getattr(backend, "assumed_roles", [])):
                    if getattr(role, "access_key_id", None) == key_id:
                        return str(role.secret_access_key)
        return None

    return secret_for


def parts(raw_uri: str) -> tuple[str, str]:
    """(raw path, raw query) of a request URI as it arrived (nothing decoded)."""
    split = urlsplit(raw_uri)
    return split.path, split.query
