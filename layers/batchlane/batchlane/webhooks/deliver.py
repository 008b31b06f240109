"""One webhook POST: sign, send, record the attempt; raise :class:`DeliveryFailed` to be retried.

The ``webhook_delivery`` state machine retries on ``DeliveryFailed`` along its ladder and,
once the ladder is spent, calls :func:`give_up`. A delivery already delivered or failed is
not sent again (a retried task after a lost answer). A receiver that answers 2xx has it;
anything else (3xx included: redirects are not followed) or no answer in time is a failure.
"""

from __future__ import annotations

import functools
import http.client
import json
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol
from urllib.parse import urlsplit

from batchlane.domain import status as st
from batchlane.domain.errors import InputError
from batchlane.observability import logger
from batchlane.ports import DeliveryRepository, Services
from batchlane.webhooks import owner_secrets, subscription
from batchlane.webhooks.signing import DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, signature_header

USER_AGENT = "batchlane-webhooks/1"


class DeliveryFailed(Exception):
    """The receiver did not take the delivery (the state machine's Retry matches this name)."""


@dataclass(frozen=True)
class Answer:
    status: int | None  # None: no HTTP answer (connection refused, timeout, TLS)
    error: str | None = None


class Poster(Protocol):
    def __call__(self, url: str, body: bytes, headers: dict[str, str], timeout_s: float, address: str) -> Answer: ...


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # a 3xx stays an answer (a failure), never a second request elsewhere


class _PinnedHTTP(http.client.HTTPConnection):
    """Connects to the address the SSRF check resolved, not to whatever the name resolves to now."""

    def __init__(self, host: str, *, address: str, timeout: float | None = None) -> None:
        super().__init__(host, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """The pinned address, with TLS still verified for the URL's host name (SNI and certificate)."""

    def __init__(self, host: str, *, address: str, timeout: float | None = None, context: ssl.SSLContext | None = None) -> None:
        super().__init__(host, timeout=timeout, context=context)
        self._address = address

    def connect(self) -> None:
        raw = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(raw, server_hostname=self.host)  # type: ignore[attr-defined]


class _PinnedHandler(urllib.request.HTTPHandler, urllib.request.HTTPSHandler):
    def __init__(self, address: str) -> None:
        urllib.request.HTTPHandler.__init__(self)
        urllib.request.HTTPSHandler.__init__(self, context=ssl.create_default_context())
        self._pinned = address

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_PinnedHTTP, address=self._pinned), req)  # type: ignore[arg-type]

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_PinnedHTTPS, address=self._pinned), req, context=self._context)  # type: ignore[arg-type, attr-defined]


def http_post(url: str, body: bytes, headers: dict[str, str], timeout_s: float, address: str) -> Answer:
    """POST to ``address`` (pinned by the check), no proxy from the environment, no redirect followed."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect, _PinnedHandler(address))
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")  # noqa: S310 - scheme checked by subscription.check_url
    try:
        with opener.open(request, timeout=timeout_s) as response:
            return Answer(response.status)
    except urllib.error.HTTPError as exc:
        return Answer(exc.code, f"HTTP {exc.code}")
    except (OSError, ValueError) as exc:  # URLError, timeouts, TLS, connection refused
        return Answer(None, f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}")


def owner_signing_keys(svc: Services, owner_id: str) -> list[str]:
    """``owner_id``'s keys (webhooks/owner_secrets.signing_keys) with the deployment's settings, its KMS key and,
    during the migration, its shared secret."""
    settings = svc.settings
    grace = timedelta(hours=settings.batchlane_webhook_grace_hours)
    return owner_secrets.signing_keys(
        svc.uow(),
        svc.secret_cipher(),
        owner_id,
        grace=grace,
        migration_days=settings.batchlane_webhook_migration_days,
        deployment_keys=lambda: svc.signing_secret().signing_keys(grace=grace),
    )


def deliver(
    rows: DeliveryRepository,
    delivery_id: str,
    *,
    signing_keys: Callable[[str], list[str]],
    post: Poster = http_post,
    allow_private: bool,
    timeout_s: float,
    clock: Callable[[], float] = time.time,
) -> dict[str, object]:
    """One attempt of an open delivery (a delivered or failed one is answered as it is, not sent again)."""
    row = rows.get(delivery_id)
    if row is None:
        raise LookupError(f"no webhook delivery {delivery_id}")
    if not st.deliver().allows(row.status):
        return {"deliveryId": delivery_id, "status": row.status, "attempts": row.attempts}
    parts = urlsplit(row.url)
    try:
        subscription.check_url(row.url, allow_private=allow_private)
        address = subscription.resolve(parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80), allow_private=allow_private)
    except InputError as exc:  # refused for good: no retry changes the address rules
        rows.record_attempt(delivery_id, delivered=False, response_code=None, latency_ms=0, error=str(exc))
        rows.give_up(delivery_id, str(exc))
        logger.warning("webhook refused", delivery_id=delivery_id, reason=str(exc))
        return {"deliveryId": delivery_id, "status": "failed", "attempts": row.attempts + 1}
    except OSError as exc:  # the name does not resolve (yet): an attempt that failed, retried like any other
        rows.record_attempt(delivery_id, delivered=False, response_code=None, latency_ms=0, error=f"DNS: {exc}")
        raise DeliveryFailed(f"{parts.hostname} does not resolve: {exc}") from None
    keys = signing_keys(row.owner_id)
    if not keys:  # the owner never created a secret and the migration's days are over: refused for good
        reason = "WEBHOOK_SECRET_MISSING: the owner has no signing secret yet; `batchlane webhooks config` creates it (shown once)."
        rows.record_attempt(delivery_id, delivered=False, response_code=None, latency_ms=0, error=reason)
        rows.give_up(delivery_id, reason)
        logger.warning("webhook refused", delivery_id=delivery_id, reason="WEBHOOK_SECRET_MISSING")
        return {"deliveryId": delivery_id, "status": "failed", "attempts": row.attempts + 1}
    body = json.dumps(row.payload, separators=(",", ":"), sort_keys=True).encode()
    timestamp = int(clock())
    headers = {
        **row.headers,
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        DELIVERY_HEADER: delivery_id,
        EVENT_HEADER: row.event,
        SIGNATURE_HEADER: signature_header(keys, timestamp, row.url, body),
    }
    started = time.monotonic()
    answer = post(row.url, body, headers, timeout_s, address)
    latency_ms = int((time.monotonic() - started) * 1000)
    ok = answer.status is not None and 200 <= answer.status < 300
    updated = rows.record_attempt(delivery_id, delivered=ok, response_code=answer.status, latency_ms=latency_ms, error=None if ok else answer.error)
    attempts = updated.attempts if updated else row.attempts + 1
    logger.info("webhook attempt", delivery_id=delivery_id, event=row.event, status_code=answer.status, latency_ms=latency_ms, attempt=attempts, delivered=ok)
    if not ok:
        raise DeliveryFailed(f"attempt {attempts}: {answer.error or f'HTTP {answer.status}'}")
    return {"deliveryId": delivery_id, "status": "delivered", "attempts": attempts, "responseCode": answer.status}


def give_up(rows: DeliveryRepository, delivery_id: str, error: dict[str, object] | None) -> dict[str, object]:
    """The ladder is spent (or the task failed otherwise): the delivery is failed, visibly."""
    reason = str((error or {}).get("Error") or "gave up")
    row = rows.give_up(delivery_id, reason)
    logger.warning("webhook given up", delivery_id=delivery_id, reason=reason)
    current = row or rows.get(delivery_id)
    return {"deliveryId": delivery_id, "status": current.status if current else "missing"}
