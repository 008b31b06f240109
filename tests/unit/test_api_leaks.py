"""The API's error answers never carry what only operators should see (issue 15, "Leaks")."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from batchlane.api import app as api_app
from batchlane.api import throttle
from batchlane.domain.errors import StoreUnavailable

DATABASE_URL = "postgresql://batchlane_admin@db.internal.example:5432/batchlane"


def _event(path: str, user: str = "alice") -> dict[str, Any]:
    return {
        "resource": path, "path": path, "httpMethod": "GET", "headers": {}, "multiValueHeaders": {},
        "queryStringParameters": None, "multiValueQueryStringParameters": None, "pathParameters": None,
        "stageVariables": None, "body": None, "isBase64Encoded": False,
        "requestContext": {"resourcePath": path, "httpMethod": "GET", "path": path, "stage": "v1", "requestId": "r1",
                           "identity": {"sourceIp": "127.0.0.1"}, "authorizer": {"claims": {"sub": user}}},
    }  # fmt: skip


def test_a_503_answers_a_stable_code_and_keeps_the_database_url_in_the_logs(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # Given a database that cannot be reached (the error names its URL, as db.connection's does)
    def unreachable(*_: Any, **__: Any) -> Any:
        raise StoreUnavailable(f"cannot connect to {DATABASE_URL}")

    monkeypatch.setattr(api_app, "services", lambda: None)
    monkeypatch.setattr(api_app.usecases, "list_files", unreachable)
    # (the per-user rate limit asks the same database first: api/throttle.py)
    limits = SimpleNamespace(batchlane_api_rate_per_s=5.0, batchlane_api_burst=60, batchlane_api_dry_run_cost=10, batchlane_api_folder_dry_run_cost=20)
    buckets = SimpleNamespace(take=unreachable)
    monkeypatch.setattr(throttle, "services", lambda: SimpleNamespace(settings=limits, uow=lambda: SimpleNamespace(rate_limits=buckets)))
    # When a user lists their files
    response = api_app.app.resolve(_event("/api/files"), None)
    # Then the answer is a 503 with the stable code and nothing about the database
    body = json.loads(response["body"])
    assert response["statusCode"] == 503 and body["error"]["code"] == "STORE_UNAVAILABLE"
    assert "db.internal.example" not in response["body"] and "batchlane_admin" not in response["body"]
    # And the operator still finds the cause in the logs
    assert "db.internal.example" in caplog.text
