"""Routes: Powertools' APIGatewayRestResolver over the use cases; errors as JSON with stable codes.

The route table: docs/api/openapi.yaml and docs/architecture.md "Module notes".
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from batchlane.api import results, usecases, webhook_usecases
from batchlane.api.downloads import S3Downloads, presign_client
from batchlane.api.uploads import S3Uploads
from batchlane.aws.clients import client
from batchlane.db import jobs as job_repo
from batchlane.domain.errors import BatchlaneError, Conflict, InputError, NotFound, StoreUnavailable
from batchlane.observability import logger
from batchlane.runtime import services

app = APIGatewayRestResolver()

JOB_STATUSES = job_repo.JOB_STATUSES


class Unauthorized(BatchlaneError):
    error_id = "UNAUTHORIZED"


class BadRequest(BatchlaneError):
    error_id = "BAD_REQUEST"


class RegisterUpload(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=255)
    sizeBytes: int = Field(ge=1)


class ConvertRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    options: dict[str, Any] = Field(default_factory=dict)


class RetryRequest(BaseModel):
    """Which failed pages to retry: all of them unless narrowed by reason and/or page number."""

    model_config = ConfigDict(extra="forbid")
    errorIds: list[str] | None = Field(default=None, max_length=50)
    pages: list[int] | None = Field(default=None, max_length=10_000)


class JobGuard(BaseModel):
    """Optional body of cancel / process-now: act only if this is still the file's current job."""

    model_config = ConfigDict(extra="forbid")
    jobId: str | None = None


class SendTestDelivery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str = Field(min_length=1, max_length=2048)
    headers: dict[str, str] | None = None


def _error(status: int, code: str, message: str, **extra: Any) -> Response:
    return Response(status_code=status, content_type="application/json", body=json.dumps({"code": code, "message": message, **extra}))


def _caller() -> str:
    claims = (app.current_event.request_context.authorizer.claims or {}) if app.current_event.request_context.authorizer else {}
    sub = claims.get("sub")
    if not sub:
        raise Unauthorized("No caller identity: send a Cognito token.")
    return str(sub)


def _groups() -> set[str]:
    """The caller's Cognito groups (REST API authorizers pass the claim as text: "a,b" or "[a b]")."""
    claims = (app.current_event.request_context.authorizer.claims or {}) if app.current_event.request_context.authorizer else {}
    raw = str(claims.get("cognito:groups") or "")
    return {g for g in raw.strip("[]").replace(",", " ").split() if g}


def _body(model: type[BaseModel]) -> Any:
    raw = app.current_event.body
    try:
        data = json.loads(raw) if raw else {}
        return model.model_validate(data)
    except ValueError as exc:  # ValidationError is a ValueError; so is bad JSON
        if isinstance(exc, ValidationError):
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "body"
            raise BadRequest(f"{where}: {first.get('msg')}") from None
        raise BadRequest("The body is not valid JSON.") from None


def _uploads() -> S3Uploads:
    return S3Uploads(client("s3"), services().settings.batchlane_bucket)


# -- routes ------------------------------------------------------------------------------
@app.get("/api/files")
def list_files() -> dict[str, Any]:
    owner = _caller()
    params = app.current_event.query_string_parameters or {}
    status = params.get("status") or None
    if status is not None and status not in JOB_STATUSES:
        raise BadRequest(f"status must be one of {', '.join(JOB_STATUSES)}")
    try:
        limit = max(1, min(500, int(params.get("limit") or 100)))
    except ValueError:
        raise BadRequest("limit must be a number") from None
    return usecases.list_files(services(), owner, job_status=status, limit=limit)


@app.post("/api/v1/files")
def register_upload() -> tuple[dict[str, Any], int]:
    owner = _caller()
    request = _body(RegisterUpload)
    return usecases.register_upload(services(), _uploads(), owner, name=request.name, size_bytes=request.sizeBytes), 201


@app.post("/api/v1/files/<fileId>/convert")
def convert(fileId: str) -> tuple[dict[str, Any], int]:
    owner = _caller()
    request = _body(ConvertRequest)
    dry = ((app.current_event.query_string_parameters or {}).get("dry_run") or "").lower()
    if dry not in ("", "true", "false", "1", "0"):
        raise BadRequest("dry_run must be true or false")
    if dry in ("true", "1"):
        return results.dry_run_file(services(), owner, fileId, options=request.options), 200
    return usecases.convert_file(services(), owner, fileId, options=request.options), 202


@app.delete("/api/v1/files/<fileId>")
def delete_file(fileId: str) -> dict[str, Any]:
    return usecases.delete_file(services(), _uploads(), _caller(), fileId)


@app.get("/api/v1/files/<fileId>/conversion")
def conversion(fileId: str) -> dict[str, Any]:
    return usecases.file_conversion(services(), _caller(), fileId)


@app.post("/api/v1/files/<fileId>/cancel")
def cancel(fileId: str) -> dict[str, Any]:
    owner = _caller()
    return usecases.cancel_file(services(), owner, fileId, job_id=_body(JobGuard).jobId)


@app.post("/api/v1/files/<fileId>/process-now")
def process_now(fileId: str) -> dict[str, Any]:
    owner = _caller()
    return usecases.process_now_file(services(), owner, fileId, job_id=_body(JobGuard).jobId)


@app.get("/api/v1/jobs/<jobId>")
def job(jobId: str) -> dict[str, Any]:
    return usecases.job_conversion(services(), _caller(), jobId)


@app.get("/api/v1/webhook-config")
def webhook_config() -> dict[str, Any]:
    _caller()
    return webhook_usecases.webhook_config(services())


@app.post("/api/v1/webhook-config/secret")
def rotate_webhook_secret() -> dict[str, Any]:
    return webhook_usecases.rotate_secret(services(), _caller(), _groups())


@app.post("/api/v1/webhook-config/test")
def test_webhook() -> tuple[dict[str, Any], int]:
    owner = _caller()
    request = _body(SendTestDelivery)
    return webhook_usecases.send_test_delivery(services(), owner, url=request.url, headers=request.headers), 202


@app.get("/api/v1/deliveries")
def list_deliveries() -> dict[str, Any]:
    owner = _caller()
    params = app.current_event.query_string_parameters or {}
    try:
        limit = max(1, min(500, int(params.get("limit") or 100)))
    except ValueError:
        raise BadRequest("limit must be a number") from None
    return webhook_usecases.list_deliveries(services(), owner, job_id=params.get("job_id") or None, limit=limit)


@app.get("/api/v1/jobs/<jobId>/markdown")
def markdown(jobId: str) -> dict[str, Any]:
    owner = _caller()
    return results.markdown_download(services(), S3Downloads(presign_client(), services().settings.batchlane_bucket), owner, jobId)


@app.get("/api/v1/jobs/<jobId>/pages")
def pages(jobId: str) -> dict[str, Any]:
    owner = _caller()
    status = (app.current_event.query_string_parameters or {}).get("status") or "failed"
    if status != "failed":
        raise BadRequest("status must be failed (the only page listing so far)")
    return results.job_pages(services(), owner, jobId, status=status)


@app.post("/api/v1/jobs/<jobId>/retry")
def retry(jobId: str) -> tuple[dict[str, Any], int]:
    owner = _caller()
    request = _body(RetryRequest)
    started = results.retry_job(services(), owner, jobId, error_ids=request.errorIds, pages=request.pages)
    return started, 200 if started["alreadyRunning"] else 202


@app.get("/api/v1/jobs/<jobId>/retries")
def job_retries(jobId: str) -> dict[str, Any]:
    return results.job_retries(services(), _caller(), jobId)


# -- errors ------------------------------------------------------------------------------
_STATUS_BY_TYPE: tuple[tuple[type[BatchlaneError], int], ...] = (
    (Unauthorized, 401),
    (BadRequest, 400),
    (webhook_usecases.Forbidden, 403),
    (usecases.ConversionRejected, 422),
    (InputError, 400),
    (NotFound, 404),
    (results.ObjectExpired, 410),
    (Conflict, 409),
    (StoreUnavailable, 503),
)


@app.exception_handler(BatchlaneError)
def _known(exc: BatchlaneError) -> Response:
    status = next((code for kind, code in _STATUS_BY_TYPE if isinstance(exc, kind)), 500)
    extra = {"jobId": exc.job_id} if isinstance(exc, usecases.ConversionRejected) else {}
    if status >= 500:
        logger.exception("request failed", code=exc.error_id)
    return _error(status, exc.error_id, str(exc), **extra)


@app.not_found
def _no_route(exc: NotFoundError) -> Response:
    return _error(404, "ROUTE_NOT_FOUND", f"No route {app.current_event.http_method} {app.current_event.path}.")


@app.exception_handler(Exception)
def _unexpected(exc: Exception) -> Response:
    logger.exception("unexpected error")
    return _error(500, "INTERNAL", "Internal error; the request id is in the logs.")
