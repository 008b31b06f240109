"""The API's routes (api/app.py) on the fakes: the REST resolver's own event in, status and JSON out, no server.

What the routes add to the use cases: the caller from the token, path ids checked, bodies and query parameters
validated with stable error ids, the admin and priority groups, and each error type's HTTP status. The use cases
themselves are tested beside this file; tests/integration/test_api.py runs the same routes over HTTP on PostgreSQL.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from typing import Any

import pytest

from batchlane.api import app as api_app
from batchlane.api import folder_routes, throttle, usecases
from batchlane.domain import errors
from batchlane.ports import Services
from batchlane_dev.local.pdfgen import make_pdf

ALICE, BOB = "alice-1", "bob-2"
MISSING = "123e4567-e89b-12d3-a456-426614174000"
PDF = make_pdf(3)


class Uploads:
    """The presigned POST port, without signing."""

    def presigned_post(self, key: str, *, max_bytes: int, **_: Any) -> dict[str, Any]:
        return {"url": "http://127.0.0.1:1/upload", "fields": {"key": key}, "maxBytes": max_bytes}


class Api:
    """Calls the resolver as API Gateway would, with the caller's claims."""

    def __init__(self, svc: Services) -> None:
        self.svc = svc

    def __call__(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        user: str | None = ALICE,
        groups: str | None = None,
        query: dict[str, str] | None = None,
        raw: str | None = None,
    ) -> tuple[int, dict[str, Any], dict[str, Any]]:
        claims = {"sub": user} if user else {}
        if groups is not None:
            claims["cognito:groups"] = groups
        event = {
            "resource": path, "path": path, "httpMethod": method, "headers": {"Content-Type": "application/json"},
            "multiValueHeaders": {}, "queryStringParameters": query, "multiValueQueryStringParameters": None,
            "pathParameters": None, "stageVariables": None, "isBase64Encoded": False,
            "body": raw if raw is not None else (json.dumps(body) if body is not None else None),
            "requestContext": {"resourcePath": path, "httpMethod": method, "path": path, "stage": "v1", "requestId": "r1",
                               "identity": {"sourceIp": "127.0.0.1"}, "authorizer": {"claims": claims} if claims else None},
        }  # fmt: skip
        response = api_app.app.resolve(event, None)
        headers = {k: v[0] for k, v in (response.get("multiValueHeaders") or {}).items()}
        return response["statusCode"], json.loads(response["body"]) if response["body"] else {}, headers


@pytest.fixture
def api(svc_on_fakes: Services, monkeypatch: pytest.MonkeyPatch) -> Api:
    svc = dataclasses.replace(svc_on_fakes, upload_urls=Uploads())  # type: ignore[type-var]
    svc = dataclasses.replace(svc, settings=svc.settings.model_copy(update={"batchlane_api_rate_per_s": 0.0}))  # type: ignore[type-var]
    for module in (api_app, folder_routes, throttle):
        monkeypatch.setattr(module, "services", lambda: svc)
    return Api(svc)


def _upload(api: Api, name: str = "book.pdf", user: str = ALICE, *, stored: bool = False) -> str:
    status, body, _ = api("POST", "/api/v1/files", {"name": name, "sizeBytes": len(PDF)}, user=user)
    assert status == 201, body
    if stored:  # what the client's POST to the presigned URL does
        api.svc.store.put_bytes(body["upload"]["fields"]["key"], PDF)
    return str(body["fileId"])


def _error(answer: tuple[int, dict[str, Any], dict[str, Any]]) -> tuple[int, str]:
    status, body, _ = answer
    return status, body["error"]["code"]


# -- the caller ------------------------------------------------------------------------
def test_no_caller_identity_is_401_on_every_kind_of_route(api: Api) -> None:
    assert _error(api("GET", "/api/v1/files", user=None)) == (401, "UNAUTHORIZED")
    assert _error(api("POST", "/api/v1/files", {"name": "a.pdf", "sizeBytes": 1}, user=None)) == (401, "UNAUTHORIZED")
    assert _error(api("GET", "/api/v1/webhook-config", user=None)) == (401, "UNAUTHORIZED")
    assert _error(api("GET", "/api/v1/folder-jobs", user=None)) == (401, "UNAUTHORIZED")


def test_an_unknown_route_is_a_json_404_naming_it(api: Api) -> None:
    status, body, _ = api("GET", "/api/v1/nothing-here")
    assert (status, body["error"]["code"]) == (404, "ROUTE_NOT_FOUND")
    assert body["error"]["message"] == "No route GET /api/v1/nothing-here."


# -- uploads ---------------------------------------------------------------------------
def test_an_upload_is_registered_for_its_caller_and_listed_for_them_only(api: Api) -> None:
    status, body, _ = api("POST", "/api/v1/files", {"name": "Book One.pdf", "sizeBytes": 1000})
    assert status == 201 and body["upload"]["fields"]["key"] and body["fileId"]
    status, listing, _ = api("GET", "/api/v1/files")
    assert status == 200 and [f["fileId"] for f in listing["files"]] == [body["fileId"]]
    assert listing["files"][0]["name"] == "Book One.pdf"
    assert api("GET", "/api/v1/files", user=BOB)[1] == {"files": []}
    assert api("GET", "/api/files")[1]["files"][0]["fileId"] == body["fileId"]  # the deprecated alias


@pytest.mark.parametrize(
    ("body", "raw", "code"),
    [
        ({"name": "a.pdf", "sizeBytes": 0}, None, "PDF_EMPTY"),
        ({"name": "a\u202epdf.exe", "sizeBytes": 10}, None, "NAME_INVALID"),
        ({"name": "a\x00.pdf", "sizeBytes": 10}, None, "NAME_INVALID"),
        ({"name": " a.pdf", "sizeBytes": 10}, None, "NAME_INVALID"),
        ({"name": "a.pdf ", "sizeBytes": 10}, None, "NAME_INVALID"),
        ({"name": "", "sizeBytes": 10}, None, "BAD_REQUEST"),
        ({"name": "a.pdf", "sizeBytes": -1}, None, "BAD_REQUEST"),
        ({"name": "a.pdf", "sizeBytes": 10, "extra": 1}, None, "BAD_REQUEST"),
        (None, "{not json", "BAD_REQUEST"),
    ],
)
def test_a_bad_upload_request_is_a_400_with_its_own_id(api: Api, body: Any, raw: str | None, code: str) -> None:
    status, answer, _ = api("POST", "/api/v1/files", body, raw=raw)
    assert (status, answer["error"]["code"]) == (400, code)
    assert api("GET", "/api/v1/files")[1] == {"files": []}  # nothing registered


def test_a_bad_json_body_and_a_bad_field_say_which(api: Api) -> None:
    assert api("POST", "/api/v1/files", raw="{nope")[1]["error"]["message"] == "The body is not valid JSON."
    message = api("POST", "/api/v1/files", {"name": "a.pdf"})[1]["error"]["message"]
    assert message == "sizeBytes: Field required"
    assert "U+202E" in api("POST", "/api/v1/files", {"name": "a\u202e.pdf", "sizeBytes": 1})[1]["error"]["message"]


@pytest.mark.parametrize(
    ("query", "ok"),
    [({"status": "completed"}, True), ({"status": "done"}, False), ({"limit": "x"}, False), ({"limit": "0"}, True), ({"limit": "9999"}, True), (None, True)],
)
def test_the_file_listings_filters_are_checked(api: Api, query: dict[str, str] | None, ok: bool) -> None:
    status, body, _ = api("GET", "/api/v1/files", query=query)
    assert status == (200 if ok else 400), body
    if not ok:
        assert body["error"]["code"] == "BAD_REQUEST"


def test_the_listing_limit_is_clamped_to_1_through_500(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str | None, int]] = []
    monkeypatch.setattr(usecases, "list_files", lambda svc, owner, *, job_status, limit: asked.append((job_status, limit)) or {"files": []})
    for limit in ("0", "-5", "1", "250", "500", "501", "", None):
        api("GET", "/api/v1/files", query={"limit": limit} if limit is not None else None)
    api("GET", "/api/v1/files", query={"status": "failed"})
    assert asked == [(None, 1), (None, 1), (None, 1), (None, 250), (None, 500), (None, 500), (None, 100), (None, 100), ("failed", 100)]


# -- path ids --------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["not-a-uuid", MISSING.upper(), "{" + MISSING + "}", "urn:uuid:" + MISSING, MISSING + "0"])
def test_a_path_id_that_is_not_a_canonical_uuid_is_refused_before_any_route(api: Api, bad: str) -> None:
    assert _error(api("GET", f"/api/v1/files/{bad}/conversion")) == (400, "ID_INVALID")
    assert _error(api("GET", f"/api/v1/jobs/{bad}")) == (400, "ID_INVALID")
    assert "jobId must be a UUID" in api("GET", f"/api/v1/jobs/{bad}/markdown")[1]["error"]["message"]


def test_another_owners_file_is_the_same_404_as_a_missing_one(api: Api) -> None:
    file_id = _upload(api)
    for path in (f"/api/v1/files/{file_id}/conversion", f"/api/v1/files/{MISSING}/conversion"):
        assert _error(api("GET", path, user=BOB)) == (404, "FILE_NOT_FOUND")
    assert _error(api("DELETE", f"/api/v1/files/{file_id}", user=BOB)) == (404, "FILE_NOT_FOUND")
    assert _error(api("GET", f"/api/v1/files/{file_id}/conversion")) == (404, "CONVERSION_NOT_FOUND")  # the owner: never converted


# -- convert ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({"parser": "x" * 40}, "OPTIONS_INVALID"),
        ({"unknown": True}, "OPTIONS_INVALID"),
        ({"modelId": "anthropic.not-enabled-v1:0"}, "MODEL_NOT_ALLOWED"),
        ({"callbackEvents": ["x" * 300]}, "OPTIONS_INVALID"),
        ({"callbackHeaders": {"X": "v" * 3000}}, "OPTIONS_INVALID"),
        ({"callbackHeaders": {"H" * 300: "v"}}, "OPTIONS_INVALID"),
        ({"assembly": "pages"}, "OPTIONS_INVALID"),
    ],
)
def test_bad_conversion_options_are_refused_with_their_id(api: Api, options: dict[str, Any], code: str) -> None:
    file_id = _upload(api)
    status, body, _ = api("POST", f"/api/v1/files/{file_id}/convert", {"options": options})
    assert (status, body["error"]["code"]) == (400, code)
    if code == "OPTIONS_INVALID":
        assert body["error"]["message"].startswith("options.")
    else:
        assert api.svc.settings.allowed_model_ids[0] in body["error"]["message"]


def test_a_model_this_deployment_enabled_and_short_texts_are_accepted(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(usecases, "convert_file", lambda svc, owner, file_id, *, options, priority_group: seen.append(options) or {"jobId": "j"})
    file_id = _upload(api)
    options = {"modelId": api.svc.settings.allowed_model_ids[0], "callbackEvents": ["e" * 256], "callbackHeaders": {"H" * 256: "v" * 2048}}
    status, _, _ = api("POST", f"/api/v1/files/{file_id}/convert", {"options": options})
    assert status == 202 and seen == [options]  # only what was set, by its own names


@pytest.mark.parametrize(
    ("dry", "outcome"), [("maybe", 400), ("true", "estimate"), ("1", "estimate"), ("TRUE", "estimate"), ("false", "convert"), ("0", "convert"), ("", "convert")]
)
def test_dry_run_is_true_or_false(api: Api, monkeypatch: pytest.MonkeyPatch, dry: str, outcome: object) -> None:
    monkeypatch.setattr(api_app.estimates, "start_file_estimate", lambda *a, **k: {"estimateId": "e"})
    monkeypatch.setattr(usecases, "convert_file", lambda *a, **k: {"jobId": "j"})
    file_id = _upload(api)
    status, body, _ = api("POST", f"/api/v1/files/{file_id}/convert", {}, query={"dry_run": dry})
    if outcome == 400:
        assert (status, body["error"]["message"]) == (400, "dry_run must be true or false")
    else:
        assert (status, body) == (202, {"estimateId": "e"} if outcome == "estimate" else {"jobId": "j"})


@pytest.mark.parametrize(
    ("groups", "lacking"),
    [
        (None, "batchlane-priority"),
        ("batchlane-priority", None),
        ("[ops batchlane-priority]", None),
        ("ops,batchlane-priority", None),
        ("ops", "batchlane-priority"),
    ],
)
def test_convert_and_process_now_pass_the_priority_group_only_to_a_caller_lacking_it(
    api: Api, monkeypatch: pytest.MonkeyPatch, groups: str | None, lacking: str | None
) -> None:
    passed: list[tuple[str, str | None]] = []
    monkeypatch.setattr(usecases, "convert_file", lambda svc, owner, file_id, *, options, priority_group: passed.append(("convert", priority_group)) or {})
    monkeypatch.setattr(usecases, "process_now_file", lambda svc, owner, file_id, *, job_id, priority_group: passed.append((job_id, priority_group)) or {})
    file_id = _upload(api)
    assert api("POST", f"/api/v1/files/{file_id}/convert", {}, groups=groups)[0] == 202
    assert api("POST", f"/api/v1/files/{file_id}/process-now", {"jobId": "j-1"}, groups=groups)[0] == 200
    assert passed == [("convert", lacking), ("j-1", lacking)]


def test_no_priority_group_configured_means_no_caller_lacks_it(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    svc = dataclasses.replace(api.svc, settings=api.svc.settings.model_copy(update={"batchlane_priority_group": ""}))  # type: ignore[type-var]
    monkeypatch.setattr(api_app, "services", lambda: svc)
    passed: list[str | None] = []
    monkeypatch.setattr(usecases, "convert_file", lambda svc, owner, file_id, *, options, priority_group: passed.append(priority_group) or {})
    api("POST", f"/api/v1/files/{_upload(api)}/convert", {})
    assert passed == [None]


def test_a_conversion_is_started_cancelled_and_its_guard_checked(api: Api) -> None:
    file_id = _upload(api, stored=True)
    status, started, _ = api("POST", f"/api/v1/files/{file_id}/convert", {"options": {"highFidelity": True}})
    assert status == 202 and started["jobId"]
    status, conversion, _ = api("GET", f"/api/v1/files/{file_id}/conversion")
    assert status == 200 and conversion["jobId"] == started["jobId"]
    assert api("GET", f"/api/v1/jobs/{started['jobId']}")[1]["jobId"] == started["jobId"]
    assert _error(api("GET", f"/api/v1/jobs/{started['jobId']}", user=BOB)) == (404, "JOB_NOT_FOUND")
    assert _error(api("POST", f"/api/v1/files/{file_id}/cancel", {"jobId": MISSING})) == (409, "JOB_NOT_CURRENT")
    assert _error(api("POST", f"/api/v1/files/{file_id}/cancel", {"jobId": 5})) == (400, "BAD_REQUEST")
    status, cancelled, _ = api("POST", f"/api/v1/files/{file_id}/cancel", {"jobId": started["jobId"]})
    assert status == 200 and cancelled["status"] == "cancelled"


# -- results ---------------------------------------------------------------------------
def test_pages_lists_failed_pages_only_and_retry_checks_its_body(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api_app.results, "job_pages", lambda svc, owner, job_id, *, status: {"status": status})
    assert api("GET", f"/api/v1/jobs/{MISSING}/pages")[1] == {"status": "failed"}
    assert _error(api("GET", f"/api/v1/jobs/{MISSING}/pages", query={"status": "done"})) == (400, "BAD_REQUEST")
    asked: list[tuple[Any, Any]] = []

    def retry(svc: Any, owner: str, job_id: str, *, error_ids: Any, pages: Any) -> dict[str, Any]:
        asked.append((error_ids, pages))
        return {"alreadyRunning": bool(pages)}

    monkeypatch.setattr(api_app.results, "retry_job", retry)
    assert api("POST", f"/api/v1/jobs/{MISSING}/retry", {"errorIds": ["E"]})[0] == 202
    assert api("POST", f"/api/v1/jobs/{MISSING}/retry", {"pages": [3]})[0] == 200  # one already running: 200, not 202
    assert _error(api("POST", f"/api/v1/jobs/{MISSING}/retry", {"errorIds": ["E"] * 51})) == (400, "BAD_REQUEST")
    assert asked == [(["E"], None), (None, [3])]


# -- budgets and groups ----------------------------------------------------------------
def test_setting_a_budget_needs_the_admin_group_and_a_valid_owner_id(api: Api) -> None:
    admin = api.svc.settings.batchlane_admin_group
    status, body, _ = api("PUT", f"/api/v1/admin/budgets/{BOB}", {"usdPerMonth": "12.5"})
    assert (status, body["error"]["code"]) == (403, "FORBIDDEN") and admin in body["error"]["message"]
    assert _error(api("PUT", "/api/v1/admin/budgets/bad%00id", {"usdPerMonth": "1"}, groups=admin)) == (400, "OWNER_ID_INVALID")
    assert _error(api("PUT", f"/api/v1/admin/budgets/{BOB}", {"usdPerMonth": "-1"}, groups=admin)) == (400, "BAD_REQUEST")
    status, body, _ = api("PUT", f"/api/v1/admin/budgets/{BOB}", {"usdPerMonth": "12.5", "maxLiveJobs": 3}, groups=f"[ops {admin}]")
    assert status == 200, body
    assert api("GET", "/api/v1/budget", user=BOB)[1]["usdPerMonth"] == "12.5"


@pytest.mark.parametrize(
    ("query", "answer"),
    [
        ({"limit": "x"}, (400, "BAD_REQUEST")),
        ({"job_id": "nope"}, (400, "ID_INVALID")),
        ({"job_id": MISSING, "limit": "3"}, (404, "JOB_NOT_FOUND")),
        (None, (200, None)),
    ],
)
def test_the_delivery_listing_checks_its_filters(api: Api, query: dict[str, str] | None, answer: tuple[int, str | None]) -> None:
    status, body, _ = api("GET", "/api/v1/deliveries", query=query)
    assert (status, body.get("error", {}).get("code")) == answer, body
    if status == 200:
        assert body["deliveries"] == []


def test_a_test_delivery_body_is_checked(api: Api) -> None:
    assert _error(api("POST", "/api/v1/webhook-config/test", {"url": ""})) == (400, "BAD_REQUEST")
    assert _error(api("POST", "/api/v1/webhook-config/test", {"url": "https://127.0.0.1/x"})) == (400, "CALLBACK_INVALID")


# -- errors ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("error", "status"),
    [
        (errors.Unauthorized("x"), 401), (errors.Forbidden("x"), 403), (errors.BudgetExceeded("x"), 402), (errors.LimitReached("x"), 429),
        (errors.InputError("x"), 400), (errors.NotFound("x"), 404), (errors.Conflict("x"), 409), (api_app.results.ObjectExpired("x"), 410),
        (usecases.ConversionRejected("too big", error_id="PDF_TOO_LARGE", job_id="j-9"), 422),
    ],
)  # fmt: skip
def test_each_error_type_answers_its_status_and_its_own_message(api: Api, monkeypatch: pytest.MonkeyPatch, error: Exception, status: int) -> None:
    def fail(*_: Any, **__: Any) -> Any:
        raise error

    monkeypatch.setattr(usecases, "owner_budget", fail)
    answer_status, body, _ = api("GET", "/api/v1/budget")
    assert answer_status == status and body["error"]["message"] == str(error)
    assert body["error"]["code"] == error.error_id  # type: ignore[attr-defined]
    assert ("jobId" in body["error"]) == isinstance(error, usecases.ConversionRejected)
    if isinstance(error, usecases.ConversionRejected):
        assert body["error"]["jobId"] == "j-9"


@pytest.mark.parametrize(
    ("error", "code"), [(errors.StoreUnavailable("db at 10.0.0.9 refused"), "STORE_UNAVAILABLE"), (RuntimeError("secret at 10.0.0.9"), "INTERNAL")]
)
def test_a_server_side_failure_answers_a_generic_message_with_a_stable_code(api: Api, monkeypatch: pytest.MonkeyPatch, error: Exception, code: str) -> None:
    def fail(*_: Any, **__: Any) -> Any:
        raise error

    monkeypatch.setattr(usecases, "owner_budget", fail)
    status, body, _ = api("GET", "/api/v1/budget")
    assert (status, body["error"]["code"]) == (503 if code == "STORE_UNAVAILABLE" else 500, code)
    assert "10.0.0.9" not in json.dumps(body) and "request id is in the logs" in body["error"]["message"]


def test_a_batchlane_error_of_no_listed_type_is_a_500_with_its_id(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    class Odd(errors.BatchlaneError):
        error_id = "ODD"

    def fail(*_: Any, **__: Any) -> Any:
        raise Odd("internal detail")

    monkeypatch.setattr(usecases, "owner_budget", fail)
    status, body, _ = api("GET", "/api/v1/budget")
    assert (status, body["error"]["code"]) == (500, "ODD") and "internal detail" not in body["error"]["message"]


def test_a_file_can_be_deleted_by_its_owner(api: Api) -> None:
    file_id = _upload(api, f"{uuid.uuid4().hex}.pdf")
    status, _, _ = api("DELETE", f"/api/v1/files/{file_id}")
    assert status == 200
    assert api("GET", "/api/v1/files")[1] == {"files": []}


# -- folder jobs -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("dry", "outcome"), [("true", "estimate"), ("1", "estimate"), ("TRUE", "estimate"), ("false", "submit"), ("0", "submit"), ("", "submit"), ("yes", 400)]
)
def test_a_folder_job_is_estimated_or_submitted_by_its_dry_run_flag(api: Api, monkeypatch: pytest.MonkeyPatch, dry: str, outcome: object) -> None:
    calls: list[tuple[str, Any, Any]] = []
    monkeypatch.setattr(
        folder_routes.estimates, "start_folder_estimate", lambda svc, owner, body, *, groups: calls.append(("estimate", body, groups)) or {"estimateId": "e"}
    )
    monkeypatch.setattr(
        folder_routes.usecases,
        "submit",
        lambda svc, owner, body, *, priority_group, groups: calls.append(("submit", priority_group, groups)) or ({"jobId": "fj-1"}, True),
    )
    status, body, _ = api("POST", "/api/v1/folder-jobs", {"source": "s3://in/a/"}, query={"dry_run": dry}, groups="[ops, batchlane-priority]")
    if outcome == 400:
        assert (status, body["error"]["code"], body["error"]["message"]) == (400, "BAD_REQUEST", "dry_run must be true or false") and calls == []
    elif outcome == "estimate":
        assert status == 202 and calls == [("estimate", {"source": "s3://in/a/"}, {"ops", "batchlane-priority"})]
    else:
        assert status == 201 and calls == [("submit", None, {"ops", "batchlane-priority"})]


def test_a_folder_job_submitted_again_is_200_and_a_caller_lacking_priority_is_named(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    monkeypatch.setattr(
        folder_routes.usecases, "submit", lambda svc, owner, body, *, priority_group, groups: seen.append((owner, priority_group)) or ({"jobId": "fj-1"}, False)
    )
    status, body, _ = api("POST", "/api/v1/folder-jobs", {"source": "s3://in/a/"}, groups="ops")
    assert (status, body, seen) == (200, {"jobId": "fj-1"}, [(ALICE, "batchlane-priority")])


def test_folder_routes_refuse_a_body_that_is_not_json_and_a_missing_caller(api: Api) -> None:
    status, body, _ = api("POST", "/api/v1/folder-jobs", raw="{not json")
    assert (status, body["error"]["code"], body["error"]["message"]) == (400, "BAD_REQUEST", "The body is not valid JSON.")
    status, body, _ = api("POST", "/api/v1/folder-jobs", {}, user=None)
    assert (status, body["error"]["code"], body["error"]["message"]) == (401, "UNAUTHORIZED", "No caller identity: send a Cognito token.")


def test_error_answers_are_json_and_the_401_says_what_to_send(api: Api) -> None:
    status, body, headers = api("GET", "/api/v1/budget", user=None)
    assert (status, body["error"]["message"], headers["Content-Type"]) == (401, "No caller identity: send a Cognito token.", "application/json")


def test_group_claims_are_read_in_both_of_the_authorizers_spellings(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    admin = api.svc.settings.batchlane_admin_group
    monkeypatch.setattr(usecases, "set_owner_budget", lambda *a, **k: {})
    for raw in (f"[Xray {admin}]", f"Xray,{admin}", f"{admin} Xray", f"[{admin}X]"):
        assert api("PUT", f"/api/v1/admin/budgets/{BOB}", {"usdPerMonth": "1"}, groups=raw)[0] == (403 if raw.endswith("X]") else 200)


def test_a_body_that_is_not_an_object_is_refused_and_an_absent_body_is_an_empty_one(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    status, body, _ = api("POST", "/api/v1/files", raw="[1]")
    assert (status, body["error"]["code"]) == (400, "BAD_REQUEST") and body["error"]["message"].startswith("body")
    guarded: list[Any] = []
    monkeypatch.setattr(usecases, "cancel_file", lambda svc, owner, file_id, *, job_id: guarded.append(job_id) or {"status": "cancelled"})
    assert api("POST", f"/api/v1/files/{MISSING}/cancel")[0] == 200 and guarded == [None]


def test_a_name_with_white_space_at_an_end_and_a_model_not_enabled_say_what_is_allowed(api: Api) -> None:
    assert api("POST", "/api/v1/files", {"name": "a.pdf ", "sizeBytes": 1})[1]["error"]["message"] == "name may not start or end with white space."
    file_id = _upload(api)
    message = api("POST", f"/api/v1/files/{file_id}/convert", {"options": {"modelId": "anthropic.other-v1:0"}})[1]["error"]["message"]
    allowed = api.svc.settings.allowed_model_ids
    assert message == f"Model anthropic.other-v1:0 is not enabled in this deployment; use one of: {', '.join(allowed)}."


def test_a_rate_below_one_a_second_still_limits_and_no_caller_is_401_not_limited(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    slow = dataclasses.replace(api.svc, settings=api.svc.settings.model_copy(update={"batchlane_api_rate_per_s": 0.5, "batchlane_api_burst": 1}))  # type: ignore[type-var]
    monkeypatch.setattr(throttle, "services", lambda: slow)
    assert api("GET", "/api/v1/budget")[0] == 200
    assert _error(api("GET", "/api/v1/budget")) == (429, "RATE_LIMITED")
    assert _error(api("GET", "/api/v1/budget", user=None)) == (401, "UNAUTHORIZED")


def test_test_deliveries_are_capped_an_hour_and_pass_the_callers_headers(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    from batchlane.api import webhook_usecases

    capped = dataclasses.replace(
        api.svc, settings=api.svc.settings.model_copy(update={"batchlane_max_test_deliveries_per_hour": 1, "batchlane_webhook_allow_private": True})
    )  # type: ignore[type-var]
    asked: list[Any] = []
    real = capped.uow().caps.recent_test_deliveries
    monkeypatch.setattr(
        type(capped.uow().caps),
        "recent_test_deliveries",
        lambda self, caller, *, event, hours: asked.append((caller, event, hours)) or real(caller, event=event, hours=hours),
    )
    sent = webhook_usecases.send_test_delivery(capped, ALICE, url="http://127.0.0.1:9/h", headers={"X-A": "1"})
    assert capped.uow().deliveries.get(sent["deliveryId"]).headers == {"X-A": "1"}
    with pytest.raises(errors.LimitReached) as refused:
        webhook_usecases.send_test_delivery(capped, ALICE, url="http://127.0.0.1:9/h", headers=None)
    assert refused.value.error_id == "TEST_DELIVERIES_LIMIT"
    assert (
        str(refused.value)
        == "You have 1 test deliveries in the last hour; the limit is 1. Wait a while, or ask an operator to raise BATCHLANE_MAX_TEST_DELIVERIES_PER_HOUR."
    )
    assert asked[0] == (ALICE, "webhook.test", 1)


def test_the_deliveries_of_a_folder_job_need_its_owner(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    from batchlane.api import webhook_usecases

    checked: list[Any] = []
    monkeypatch.setattr(webhook_usecases.folder_usecases, "owned", lambda svc, caller, job_id: checked.append((caller, job_id)))
    limits: list[Any] = []
    monkeypatch.setattr(type(api.svc.uow().deliveries), "for_owner", lambda self, owner, *, job_id, limit=100: limits.append((owner, job_id, limit)) or [])
    assert webhook_usecases.list_deliveries(api.svc, ALICE, job_id="fj-abc", limit=7) == {"deliveries": []}
    assert checked == [(ALICE, "fj-abc")] and limits == [(ALICE, "fj-abc", 7)]
