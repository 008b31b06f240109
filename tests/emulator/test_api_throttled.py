"""A throttled API request is answered at once, as API Gateway answers it, and the CLI sends it again (issue 21).

The offline API admits each request through the Lambda runtime's concurrency model like any Invoke: the API
shares the account with the workflows, or has its own reservation. Past it Lambda rejects the invocation
(429 TooManyRequestsException) and API Gateway answers the client 500 (its DEFAULT_5XX gateway response, in the
API's error shape: code GATEWAY_ERROR; API Gateway's own default body is ``{"message": "Internal server error"}``)
without running the function and without retrying ("Handling Lambda errors with an API Gateway API", AWS
Lambda Developer Guide). Before, the offline API admitted nothing and queued every request for its one
execution environment: a request behind a slow one waited, unanswered (tests/e2e/test_tenant_isolation.py).
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from batchlane_dev.cli import jobs_commands
from batchlane_dev.cli.jobs_commands import GATEWAY_REJECTED, THROTTLE_RETRIES, ApiClient, retry_wait
from batchlane_dev.local.api_server import LocalApiServer
from batchlane_dev.local.jobs import wait_until
from batchlane_dev.local.lambda_runtime import ConcurrencyLimit, HandlerRegistry, Invocation

ANSWER = {"ok": True}

GATEWAY_ERROR = {"error": {"code": "GATEWAY_ERROR", "message": "Internal server error"}}  # the stack's DEFAULT_5XX


def answered(event: Any, call_real: Any) -> Invocation:
    """The api function's stand-in: a proxy response naming the caller (no handler, no database)."""
    return Invocation(result={"statusCode": 200, "body": json.dumps({**ANSWER, "path": event["path"]})})


@pytest.fixture
def api() -> Iterator[tuple[HandlerRegistry, LocalApiServer]]:
    registry = HandlerRegistry()
    registry.intercept("api", answered)
    server = LocalApiServer(registry)
    server.start()
    yield registry, server
    server.stop()


def get(server: LocalApiServer, path: str, user: str) -> tuple[int, Any]:
    request = urllib.request.Request(server.url + path, headers={"Authorization": f"Bearer local:{user}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # the client's own limit: a queued request fails here
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_request_past_the_apis_reserved_concurrency_is_answered_500_at_once_while_the_slot_is_held(api) -> None:  # type: ignore[no-untyped-def]
    registry, server = api
    registry.concurrency = ConcurrencyLimit(reserved={"api": 1})
    entered, release = threading.Event(), threading.Event()

    def slow(event: Any, call_real: Any) -> Invocation:  # A's slow request: holds the API's one execution
        entered.set()
        release.wait(timeout=60)
        return answered(event, call_real)

    registry.intercept("api", slow)
    first: list[tuple[int, Any]] = []
    holder = threading.Thread(target=lambda: first.append(get(server, "/api/v1/slow", "a")))
    holder.start()
    try:
        assert entered.wait(timeout=30)
        registry.intercept("api", answered)
        # B, while A's request holds the slot: Lambda rejects the invocation, API Gateway answers 500; nothing queued
        assert get(server, "/api/v1/budget", "b") == (500, GATEWAY_ERROR)
        assert registry.throttles == {"api": 1}
        assert registry.running["api"] == 1
    finally:
        release.set()
        holder.join(timeout=30)
    assert first == [(200, {**ANSWER, "path": "/api/v1/slow"})]
    assert get(server, "/api/v1/budget", "b") == (200, {**ANSWER, "path": "/api/v1/budget"})  # the slot is free again
    assert registry.running["api"] == 0


def test_the_api_shares_the_accounts_concurrency_with_every_other_function(api) -> None:  # type: ignore[no-untyped-def]
    registry, server = api
    registry.concurrency = ConcurrencyLimit(account=2)
    with registry.admitted("chunk_processor"), registry.admitted("job_split"):  # the workflows hold the account
        assert get(server, "/api/v1/budget", "b") == (500, GATEWAY_ERROR)
    assert registry.throttles == {"api": 1}
    assert get(server, "/api/v1/budget", "b")[0] == 200


def test_the_cli_sends_a_throttled_request_again_and_is_answered_once_the_account_has_room(api, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    registry, server = api
    registry.concurrency = ConcurrencyLimit(account=1)
    monkeypatch.setattr(jobs_commands, "THROTTLE_BACKOFF_S", (0.01, 0.05))  # the ladder's shape, not its length, is under test
    # ...nor its count: the CLI keeps trying until this thread has seen two throttles and freed the account, however late
    # a loaded machine wakes it (a CI run's CLI spent its 8 tries in the 0.1 s between two polls and gave up).
    monkeypatch.setattr(jobs_commands, "THROTTLE_RETRIES", 100_000)
    held, release = threading.Event(), threading.Event()

    def workflow() -> None:  # another function holds the account's one execution until the CLI was throttled twice
        with registry.admitted("assemble"):
            held.set()
            release.wait(timeout=60)

    holder = threading.Thread(target=workflow)
    holder.start()
    assert held.wait(timeout=30)
    got: list[dict[str, Any]] = []
    client = threading.Thread(target=lambda: got.append(ApiClient(server.url, "local:b", timeout_s=30).call("GET", "/api/v1/budget")))
    client.start()
    try:
        wait_until(lambda: registry.throttles.get("api", 0) >= 2, timeout_s=30, what="the CLI throttled twice")
    finally:
        release.set()
        holder.join(timeout=30)
    client.join(timeout=30)
    assert got == [{**ANSWER, "path": "/api/v1/budget"}]


def test_which_refusals_are_sent_again() -> None:
    assert retry_wait(429, "3", {"error": {"code": "RATE_LIMITED"}}, 0) == 3.0  # the per-user rate limit: as it says
    assert retry_wait(429, "300", {"error": {"code": "RATE_LIMITED"}}, 0) == 30.0  # at most 30 s
    assert retry_wait(500, None, GATEWAY_ERROR, 0) is not None  # the stack's gateway response for it, too
    backoff = retry_wait(500, None, GATEWAY_REJECTED, 0)  # Lambda rejected the invocation: backing off, full jitter
    assert backoff is not None and 0 <= backoff <= 0.5
    backoff = retry_wait(429, None, {"message": "Too Many Requests"}, 3)  # the stage's throttle (no Retry-After)
    assert backoff is not None and 0 <= backoff <= 4.0
    assert retry_wait(503, "2", {}, 0) == 2.0
    assert retry_wait(500, None, GATEWAY_REJECTED, THROTTLE_RETRIES) is None  # then the CLI gives up and says so
    assert retry_wait(500, None, {"error": {"code": "INTERNAL", "message": "Internal error; the request id is in the logs."}}, 0) is None  # the function ran
    assert retry_wait(502, None, GATEWAY_REJECTED, 0) is None  # the function ran and failed: not sent again
    assert retry_wait(404, None, {"error": {"code": "NOT_FOUND"}}, 0) is None
