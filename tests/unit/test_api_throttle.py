"""api/throttle.py: the per-user rate limit answers 429 with a Retry-After a client can trust (never too early)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from batchlane.api import app as api_app
from batchlane.api import throttle


def _event(method: str = "GET", path: str = "/api/files", *, user: str | None = "alice", query: dict[str, str] | None = None) -> dict[str, Any]:
    authorizer = {"claims": {"sub": user}} if user else None
    return {
        "resource": path, "path": path, "httpMethod": method, "headers": {}, "multiValueHeaders": {},
        "queryStringParameters": query, "multiValueQueryStringParameters": None, "pathParameters": None,
        "stageVariables": None, "body": None, "isBase64Encoded": False,
        "requestContext": {"resourcePath": path, "httpMethod": method, "path": path, "stage": "v1", "requestId": "r1",
                           "identity": {"sourceIp": "127.0.0.1"}, "authorizer": authorizer},
    }  # fmt: skip


class Buckets:
    """A bucket that answers the wait it is told to, and records what it was asked to take."""

    def __init__(self, wait_s: float) -> None:
        self.wait_s = wait_s
        self.taken: list[tuple[str, int, float, int]] = []

    def take(self, owner: str, *, cost: int, rate_per_s: float, burst: int) -> float:
        self.taken.append((owner, cost, rate_per_s, burst))
        return self.wait_s


def _limited(monkeypatch: pytest.MonkeyPatch, wait_s: float, *, rate: float = 2.0, burst: int = 5, dry_run_cost: int = 3) -> Buckets:
    buckets = Buckets(wait_s)
    limits = SimpleNamespace(
        batchlane_api_rate_per_s=rate, batchlane_api_burst=burst, batchlane_api_dry_run_cost=dry_run_cost, batchlane_api_folder_dry_run_cost=2 * dry_run_cost
    )
    monkeypatch.setattr(throttle, "services", lambda: SimpleNamespace(settings=limits, uow=lambda: SimpleNamespace(rate_limits=buckets)))
    monkeypatch.setattr(api_app, "services", lambda: None)
    monkeypatch.setattr(api_app.usecases, "list_files", lambda *_, **__: {"files": []})
    return buckets


@pytest.mark.parametrize(("wait_s", "retry_after"), [(0.2, 1), (1.0, 1), (1.2, 2), (2.01, 3), (59.5, 60)])
def test_retry_after_is_the_wait_rounded_up_never_down(monkeypatch: pytest.MonkeyPatch, wait_s: float, retry_after: int) -> None:
    # A client that waits Retry-After seconds must find a token: a fractional wait rounds up (1.2 s -> 2, never 1)
    _limited(monkeypatch, wait_s)
    response = api_app.app.resolve(_event(), None)
    body = json.loads(response["body"])
    assert response["statusCode"] == 429 and body["error"]["code"] == "RATE_LIMITED"
    assert response["multiValueHeaders"]["Retry-After"] == [str(retry_after)]
    assert body["error"]["retryAfterSeconds"] == retry_after
    assert f"retry after {retry_after} s" in body["error"]["message"]


def test_a_request_with_a_token_left_is_answered_and_takes_one_from_its_callers_bucket(monkeypatch: pytest.MonkeyPatch) -> None:
    buckets = _limited(monkeypatch, 0.0, rate=2.0, burst=5)
    response = api_app.app.resolve(_event(user="bob"), None)
    assert response["statusCode"] == 200
    assert buckets.taken == [("bob", 1, 2.0, 5)]


@pytest.mark.parametrize(
    ("method", "query", "cost"),
    [("POST", {"dry_run": "true"}, 3), ("POST", {"dry_run": "1"}, 3), ("POST", {"dry_run": "TRUE"}, 3), ("POST", {"dry_run": "no"}, 1),
     ("POST", None, 1), ("GET", {"dry_run": "true"}, 1)],
)  # fmt: skip
def test_a_dry_run_costs_more_tokens_than_a_read(method: str, query: dict[str, str] | None, cost: int) -> None:
    assert throttle.request_cost(method, "/api/v1/files/x/convert", query, file_cost=3, folder_cost=7) == cost
    assert throttle.request_cost(method, "/api/v1/folder-jobs/", query, file_cost=3, folder_cost=7) == (7 if cost == 3 else 1)


def test_a_dry_run_never_costs_more_than_the_burst(monkeypatch: pytest.MonkeyPatch) -> None:
    # A cost above the burst could never be paid: the bucket is asked for at most the burst
    buckets = _limited(monkeypatch, 0.0, burst=4, dry_run_cost=10)
    api_app.app.resolve(_event("POST", "/api/files", query={"dry_run": "true"}), None)
    assert buckets.taken[0][1] == 4


@pytest.mark.parametrize(("user", "rate"), [(None, 2.0), ("alice", 0.0)])
def test_no_caller_or_no_rate_takes_nothing_from_any_bucket(monkeypatch: pytest.MonkeyPatch, user: str | None, rate: float) -> None:
    buckets = _limited(monkeypatch, 99.0, rate=rate)
    api_app.app.resolve(_event(user=user), None)
    assert buckets.taken == []
