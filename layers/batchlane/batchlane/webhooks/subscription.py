"""A job's webhook subscription: ``callbackUrl``, ``callbackEvents``, ``callbackHeaders`` in its options.

Validated when the job is created (400 CALLBACK_INVALID with the reason) and again, for the
address the host resolves to, before each POST. In AWS only ``https`` to a public host is
accepted unless the deployment sets BATCHLANE_WEBHOOK_ALLOW_PRIVATE (the offline stack does,
for a receiver on 127.0.0.1); credentials in the URL are always refused.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from batchlane.domain.errors import InputError
from batchlane.naming import camel

JOB_EVENTS = ("job.completed", "job.waiting_batch", "job.paused")
FILE_EVENTS = ("file.error", "file.completed")
EVENTS = JOB_EVENTS + FILE_EVENTS
# A paused job waits for its owner (issue 38.5): like its end, its owner is told unless they chose other events.
DEFAULT_EVENTS = ("job.completed", "job.paused")
OPTION_KEYS = ("callbackUrl", "callbackEvents", "callbackHeaders")
MAX_HEADERS = 10
_TOKEN = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$")
# Ours to set: a receiver must be able to trust them.
RESERVED_HEADERS = frozenset({"host", "content-type", "content-length", "user-agent", "connection", "transfer-encoding"})


class CallbackInvalid(InputError):
    error_id = "CALLBACK_INVALID"


@dataclass(frozen=True)
class Callback:
    url: str
    events: tuple[str, ...] = DEFAULT_EVENTS
    headers: dict[str, str] = field(default_factory=dict)


def _bad(message: str) -> CallbackInvalid:
    return CallbackInvalid(message)


def _private(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    return not ip.is_global or ip.is_multicast


def check_url(url: str, *, allow_private: bool) -> str:
    """The URL if a webhook may be sent to it; CallbackInvalid (a one-line reason) otherwise."""
    if not isinstance(url, str) or len(url) > 2048:
        raise _bad("callbackUrl must be a URL of at most 2,048 characters.")
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise _bad("callbackUrl must be an https:// URL.")
    if parts.username or parts.password:
        raise _bad("callbackUrl must not carry credentials; send them in callbackHeaders.")
    if parts.fragment:
        raise _bad("callbackUrl must not have a #fragment.")
    host = parts.hostname
    try:
        literal_private = _private(host)
    except ValueError:  # a name, not an address
        literal_private = host == "localhost" or host.endswith((".localhost", ".internal", ".local"))
    if not allow_private:
        if parts.scheme != "https":
            raise _bad("callbackUrl must use https (plain http is allowed only where the deployment allows private receivers).")
        if literal_private:
            raise _bad("callbackUrl points to a private, loopback or link-local address, which this deployment does not allow.")
    return url


def resolve(host: str, port: int, *, allow_private: bool) -> str:
    """Before a POST: the address to connect to, checked once and then pinned (the POST connects to exactly it,
    so a name that answers a public address to the check and a private one to the connect gains nothing).
    Refuses a host that resolves to any private address (a public name pointed inward)."""
    infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    addresses = [str(info[4][0]) for info in infos]
    if not allow_private:
        for address in addresses:
            if _private(address):
                raise _bad(f"{host} resolves to a private address ({address}); this deployment does not allow private receivers.")
    if not addresses:
        raise OSError(f"{host} has no address")
    return addresses[0]


def check_headers(headers: Any) -> dict[str, str]:
    if headers is None:
        return {}
    if not isinstance(headers, dict) or len(headers) > MAX_HEADERS:
        raise _bad(f"callbackHeaders must be an object of at most {MAX_HEADERS} headers.")
    clean: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not _TOKEN.match(name):
            raise _bad(f"callbackHeaders: {name!r} is not a valid header name.")
        if name.lower() in RESERVED_HEADERS or name.lower().startswith("batchlane-"):
            raise _bad(f"callbackHeaders: {name} is set by batchlane and cannot be overridden.")
        if not isinstance(value, str) or len(value) > 1024 or any(c in value for c in "\r\n\0"):
            raise _bad(f"callbackHeaders: the value of {name} must be one line of at most 1,024 characters.")
        clean[name] = value
    return clean


def check_events(events: Any) -> tuple[str, ...]:
    if events is None:
        return DEFAULT_EVENTS
    if isinstance(events, str):
        events = [e.strip() for e in events.split(",") if e.strip()]
    if not isinstance(events, list | tuple) or not events:
        raise _bad(f"callbackEvents must be a non-empty list of: {', '.join(EVENTS)}.")
    unknown = sorted({str(e) for e in events} - set(EVENTS))
    if unknown:
        raise _bad(f"callbackEvents: unknown event(s) {', '.join(unknown)}; known: {', '.join(EVENTS)}.")
    return tuple(dict.fromkeys(events))


def validate_options(options: dict[str, Any], *, allow_private: bool) -> dict[str, Any]:
    """The options with the callback normalised (events a list, headers checked); unchanged without one."""
    if not any(key in options for key in OPTION_KEYS):
        return options
    if "callbackUrl" not in options:
        raise _bad("callbackEvents and callbackHeaders need a callbackUrl.")
    return {
        **options,
        "callbackUrl": check_url(options["callbackUrl"], allow_private=allow_private),
        "callbackEvents": list(check_events(options.get("callbackEvents"))),
        "callbackHeaders": check_headers(options.get("callbackHeaders")),
    }


def from_options(options: dict[str, Any] | None) -> Callback | None:
    """The subscription a (validated) job carries, or None."""
    options = options or {}
    if not options.get("callbackUrl"):
        return None
    return Callback(str(options["callbackUrl"]), tuple(options.get("callbackEvents") or DEFAULT_EVENTS), dict(options.get("callbackHeaders") or {}))


class NotificationsSpec(BaseModel):
    """A folder job's own webhook (its spec's ``notifications``, checked like a single file's callback); here, not in
    folders/spec.py, because dispatch reads it back and folders import webhooks, never the other way."""

    # as folders/spec.py's models: posted camelCase only (parse_spec validates by alias), stored specs read back by name
    model_config = ConfigDict(extra="forbid", alias_generator=camel, validate_by_name=True, validate_by_alias=True)

    callback_url: str
    callback_events: list[str] = Field(default_factory=lambda: ["job.completed"])
    callback_headers: dict[str, str] = Field(default_factory=dict)

    def as_options(self) -> dict[str, Any]:
        """The single-file option names, which webhooks/subscription.py reads."""
        return {"callbackUrl": self.callback_url, "callbackEvents": self.callback_events, "callbackHeaders": self.callback_headers}
