"""The offline servers answer loopback host names only and send no CORS headers (issue 15, offline stack)."""

from __future__ import annotations

import pytest
from werkzeug.test import Client
from werkzeug.wrappers import Response

from batchlane_dev.local.loopback import LoopbackOnly, is_loopback_host


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.1:4566", "localhost:8080", "LOCALHOST", "[::1]:9000", "bucket.localhost:4566"])
def test_loopback_names_are_answered(host: str) -> None:
    assert is_loopback_host(host)


@pytest.mark.parametrize("host", ["", "attacker.example", "attacker.example:4566", "127.0.0.1.attacker.example", "localhost.attacker.example", "10.0.0.5:80"])
def test_other_names_are_not(host: str) -> None:
    assert not is_loopback_host(host)


def _permissive_app(environ, start_response):  # type: ignore[no-untyped-def]
    """What moto's server does: reflect any Origin."""
    headers = {"Access-Control-Allow-Origin": environ.get("HTTP_ORIGIN", "*"), "Access-Control-Allow-Credentials": "true"}
    return Response(b"secret", headers=headers)(environ, start_response)


def test_a_rebound_host_is_refused_and_no_origin_is_ever_allowed() -> None:
    client = Client(LoopbackOnly(_permissive_app))
    rebound = client.get("/", headers={"Host": "attacker.example:4566", "Origin": "http://attacker.example:4566"})
    assert rebound.status_code == 421 and b"secret" not in rebound.data
    local = client.get("/", headers={"Host": "127.0.0.1:4566", "Origin": "https://evil.example"})
    assert local.status_code == 200 and not [k for k in local.headers.keys() if k.lower().startswith("access-control-")]
    preflight = client.options("/", headers={"Host": "127.0.0.1:4566", "Origin": "https://evil.example", "Access-Control-Request-Method": "PUT"})
    assert preflight.status_code == 403 and "Access-Control-Allow-Origin" not in preflight.headers
