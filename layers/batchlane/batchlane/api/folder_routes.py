"""Folder-job routes (docs/operations.md "Folder jobs"), included by api/app.py.

| method | path                                        | use case |
|--------|---------------------------------------------|----------|
| POST   | /api/v1/folder-jobs (?dry_run=true)          | submit a spec (201 new, 200 the same spec again) or start its estimate (202) |
| GET    | /api/v1/folder-jobs                                | your folder jobs, newest first |
| GET    | /api/v1/folder-jobs/{folderJobId}                  | status: counts, throughput, eta_seconds, URIs |
| GET    | /api/v1/folder-jobs/{folderJobId}/files?status=    | files by status (paged with ?after=) |
| POST   | /api/v1/folder-jobs/{folderJobId}/retry            | requeue failed files (all, or ``errorIds``) |
| POST   | /api/v1/folder-jobs/{folderJobId}/cancel           | skip queued files; in-flight ones finish |
| GET    | /api/v1/folder-jobs/{folderJobId}/report           | report.jsonl as it stands, a page at a time (?after=, X-Next-After) |
Every route checks the owner: another owner's job answers 404 as a missing one. Answers are camelCase,
with the older snake_case names beside them until release 0.3.0 (``batchlane.naming``).
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import BaseModel, ConfigDict, Field

from batchlane.api import estimates
from batchlane.domain.errors import InputError, Unauthorized
from batchlane.folders import usecases
from batchlane.runtime import services

router = Router()
REPORT_PAGE_LINES = 1000  # report lines a page: the API never holds the whole report (issue 21.2)


class FolderRetry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    errorIds: list[str] | None = Field(default=None, max_length=50)


def _caller() -> str:
    context = router.current_event.request_context  # type: ignore[attr-defined]  # the REST resolver's event
    claims = (context.authorizer.claims or {}) if context.authorizer else {}
    if not claims.get("sub"):
        raise Unauthorized("No caller identity: send a Cognito token.")
    return str(claims["sub"])


def _groups() -> set[str]:
    """The caller's Cognito groups (as app._groups reads them)."""
    context = router.current_event.request_context  # type: ignore[attr-defined]  # the REST resolver's event
    claims = (context.authorizer.claims or {}) if context.authorizer else {}
    raw = str(claims.get("cognito:groups") or "")
    return {g for g in raw.strip("[]").replace(",", " ").split() if g}


def _json_body() -> Any:
    raw = router.current_event.body
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        raise InputError("The body is not valid JSON.", error_id="BAD_REQUEST") from None


def _flag(name: str) -> bool:
    value = ((router.current_event.query_string_parameters or {}).get(name) or "").lower()
    if value not in ("", "true", "false", "1", "0"):
        raise InputError(f"{name} must be true or false", error_id="BAD_REQUEST")
    return value in ("true", "1")


@router.post("/api/v1/folder-jobs")
def submit_folder_job() -> tuple[dict[str, Any], int]:
    owner = _caller()
    body = _json_body()
    if _flag("dry_run"):  # an estimate the worker answers: GET /api/v1/estimates/{estimateId}
        return estimates.start_folder_estimate(services(), owner, body, groups=_groups()), 202
    group = services().settings.batchlane_priority_group
    groups = _groups()
    status, created = usecases.submit(services(), owner, body, priority_group=group if group and group not in groups else None, groups=groups)
    return (status), 201 if created else 200


@router.get("/api/v1/folder-grants")
def folder_grants() -> dict[str, Any]:
    """The folders the caller may convert and write to (the deployment's folderSources, ``{owner}`` filled in)."""
    return usecases.grants(services(), _caller(), groups=_groups())


@router.get("/api/v1/folder-jobs")
def list_folder_jobs() -> dict[str, Any]:
    return (usecases.list_jobs(services(), _caller()))


@router.get("/api/v1/folder-jobs/<folderJobId>")
def folder_job(folderJobId: str) -> dict[str, Any]:
    return (usecases.status(services(), _caller(), folderJobId))


@router.get("/api/v1/folder-jobs/<folderJobId>/files")
def folder_job_files(folderJobId: str) -> dict[str, Any]:
    owner = _caller()
    params = router.current_event.query_string_parameters or {}
    try:
        limit = max(1, min(1000, int(params.get("limit") or 1000)))
    except ValueError:
        raise InputError("limit must be a number", error_id="BAD_REQUEST") from None
    return (
        usecases.files(services(), owner, folderJobId, status_filter=params.get("status") or None, after=params.get("after") or None, limit=limit)
    )


@router.post("/api/v1/folder-jobs/<folderJobId>/retry")
def retry_folder_job(folderJobId: str) -> tuple[dict[str, Any], int]:
    owner = _caller()
    try:
        request = FolderRetry.model_validate(_json_body())
    except ValueError as exc:
        raise InputError(f"body: {exc}", error_id="BAD_REQUEST") from None
    group = services().settings.batchlane_priority_group
    lacking = group if group and group not in _groups() else None  # the lane rights are decided again, from the groups now
    return usecases.retry(services(), owner, folderJobId, error_ids=request.errorIds, priority_group=lacking), 202


@router.post("/api/v1/folder-jobs/<folderJobId>/cancel")
def cancel_folder_job(folderJobId: str) -> dict[str, Any]:
    return (usecases.cancel(services(), _caller(), folderJobId))


@router.get("/api/v1/folder-jobs/<folderJobId>/report")
def folder_job_report(folderJobId: str) -> Response:
    """A page of report.jsonl (``?after=KEY&limit=N``, at most 1,000 lines); ``X-Next-After`` names the next page."""
    owner = _caller()
    params = router.current_event.query_string_parameters or {}
    try:
        limit = max(1, min(REPORT_PAGE_LINES, int(params.get("limit") or REPORT_PAGE_LINES)))
    except ValueError:
        raise InputError("limit must be a number", error_id="BAD_REQUEST") from None
    lines, next_after = usecases.report_page(services(), owner, folderJobId, after=params.get("after") or None, limit=limit)
    headers = {"X-Next-After": next_after} if next_after is not None else {}
    return Response(status_code=200, content_type="application/x-ndjson", body="".join(lines), headers=headers)
