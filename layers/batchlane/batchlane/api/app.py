"""Routes: Powertools' APIGatewayRestResolver over the use cases; errors as JSON with stable codes.

The route table: docs/api/openapi.yaml and docs/module-notes.md "batchlane.api.app".
"""

from __future__ import annotations

import json
import re
import unicodedata
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from batchlane.api import estimates, folder_routes, live, results, usecases, webhook_usecases
from batchlane.api.throttle import RateLimited, rate_limit
from batchlane.domain.errors import BatchlaneError, BudgetExceeded, Conflict, Forbidden, InputError, LimitReached, NotFound, StoreUnavailable, Unauthorized
from batchlane.domain.status import JobStatus
from batchlane.folders.spec import valid_owner_id
from batchlane.observability import logger
from batchlane.ports import Uploads
from batchlane.runtime import services
from batchlane.validation import first_error

app = APIGatewayRestResolver()

JOB_STATUSES: tuple[str, ...] = tuple(JobStatus)  # in the order a job passes through them


class BadRequest(BatchlaneError):
    error_id = "BAD_REQUEST"


class RegisterUpload(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=255)
    sizeBytes: int = Field(ge=0)  # 0: refused as PDF_EMPTY, in the split's own words (register_upload)


# Unicode categories a file name may not hold: controls (NUL included: PostgreSQL refuses it in
# text), format characters (bidi overrides and isolates, zero-width joiners: a name that displays
# as something else), surrogates, private use, unassigned, line and paragraph separators.
_FORBIDDEN_IN_NAMES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_CANONICAL_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_SHORT_TEXT = 256  # an option's text (parser, model id, an event name)
_LONG_TEXT = 2048  # a callback URL or header value


class ConvertOptions(BaseModel):
    """What a conversion may be asked for, each bounded (a 1 MB ``parser`` was once stored as is)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    highFidelity: bool | None = None
    parser: str | None = Field(None, pattern=r"^[A-Za-z0-9_.-]{1,32}$")
    mathpix: bool | None = None
    modelId: str | None = Field(None, min_length=1, max_length=_SHORT_TEXT, pattern=r"^[A-Za-z0-9.:_/-]+$")
    batchLane: bool | None = None  # the bulk opt-in (its first spelling, _batchLane, went with decision 0031)
    assembly: Literal["document", "none"] | None = None  # none: page-by-page Markdown, no document pass
    deadline: datetime | None = None  # leave the batch lane for on-demand in time to finish by then
    conversionFormats: dict[Literal["md", "docx", "html", "json"], bool] | None = None  # renderings beside the Markdown (docs/formats.md)
    describeFigures: bool | None = None  # a born-digital document's pictures described by Claude (docs/formats.md "Pictures described")
    callbackUrl: str | None = Field(None, min_length=1, max_length=_LONG_TEXT)
    callbackEvents: list[str] | None = Field(None, max_length=10)
    callbackHeaders: dict[str, str] | None = Field(None, max_length=10)

    @field_validator("callbackEvents")
    @classmethod
    def _short_events(cls, events: list[str] | None) -> list[str] | None:
        if events and any(len(e) > _SHORT_TEXT for e in events):
            raise ValueError(f"an event name is longer than {_SHORT_TEXT} characters")
        return events

    @field_validator("callbackHeaders")
    @classmethod
    def _short_headers(cls, headers: dict[str, str] | None) -> dict[str, str] | None:
        if headers and any(len(k) > _SHORT_TEXT or len(v) > _LONG_TEXT for k, v in headers.items()):
            raise ValueError(f"a header name is over {_SHORT_TEXT} or a value over {_LONG_TEXT} characters")
        return headers


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


class BudgetOverride(BaseModel):
    """A user's budget and caps; a field left out (or null) falls back to the deployment's default."""

    model_config = ConfigDict(extra="forbid")
    usdPerMonth: Decimal | None = Field(default=None, ge=0, le=10_000_000)
    maxLiveJobs: int | None = Field(default=None, ge=0, le=100_000)
    maxLivePages: int | None = Field(default=None, ge=0, le=100_000_000)


class SendTestDelivery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str = Field(min_length=1, max_length=2048)
    headers: dict[str, str] | None = None


def _error(status: int, code: str, message: str, **extra: Any) -> Response:
    """The one error shape (decision 0031): ``{"error": {"code", "message", ...}}``, the extras (``jobId``, ``retryAfterSeconds``) inside."""
    return Response(status_code=status, content_type="application/json", body=json.dumps({"error": {"code": code, "message": message, **extra}}))


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
            raise BadRequest(first_error(exc, where="body")) from None
        raise BadRequest("The body is not valid JSON.") from None


def _path_id(value: str, name: str) -> str:
    """A path id in the canonical UUID form (``urn:uuid:…``, braces or upper case once reached SQL as is)."""
    if not _CANONICAL_UUID.match(value or ""):
        raise BadRequest(f"{name} must be a UUID like 123e4567-e89b-12d3-a456-426614174000.", error_id="ID_INVALID")
    return value


def _file_name(name: str) -> str:
    bad = next((ch for ch in name if unicodedata.category(ch) in _FORBIDDEN_IN_NAMES), None)
    if bad is not None:
        raise BadRequest(f"name may not contain control, format (bidirectional) or invisible characters; found U+{ord(bad):04X}.", error_id="NAME_INVALID")
    if name != name.strip():
        raise BadRequest("name may not start or end with white space.", error_id="NAME_INVALID")
    return name


def _options(raw: dict[str, Any]) -> dict[str, Any]:
    """The conversion options, bounded and typed; the model must be one this deployment configured and granted."""
    try:
        options = ConvertOptions.model_validate(raw)
    except ValidationError as exc:
        raise BadRequest(f"options.{first_error(exc, where='options')}", error_id="OPTIONS_INVALID") from None
    allowed = services().settings.allowed_model_ids
    if options.modelId is not None and options.modelId not in allowed:
        raise BadRequest(f"Model {options.modelId} is not enabled in this deployment; use one of: {', '.join(allowed)}.", error_id="MODEL_NOT_ALLOWED")
    return options.model_dump(by_alias=True, exclude_unset=True)


def _uploads() -> Uploads:
    return services().uploads()


def _canonical_ids(app: APIGatewayRestResolver, next_middleware: NextMiddleware) -> Response:
    """Every ``fileId`` / ``jobId`` / ``estimateId`` path parameter is a canonical UUID before any route runs (400 ID_INVALID)."""
    for name, value in (app.context.get("_route_args") or {}).items():
        if name in ("fileId", "jobId", "estimateId"):
            _path_id(value, name)
    return next_middleware(app)


app.use(middlewares=[rate_limit, _canonical_ids])


# -- routes ------------------------------------------------------------------------------
@app.get("/api/v1/files")
@app.get("/api/files")  # deprecated alias (before the one /api/v1 prefix); docs/api/openapi.yaml
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
    return live.files_with_live(services(), usecases.list_files(services(), owner, job_status=status, limit=limit))


@app.post("/api/v1/files")
def register_upload() -> tuple[dict[str, Any], int]:
    owner = _caller()
    request = _body(RegisterUpload)
    if request.sizeBytes == 0:  # the split's id and words, not a validator's ("greater than or equal to 1")
        raise InputError("The file is empty: it has no bytes to convert.", error_id="PDF_EMPTY")
    return usecases.register_upload(services(), _uploads(), owner, name=_file_name(request.name), size_bytes=request.sizeBytes), 201


@app.post("/api/v1/files/<fileId>/convert")
def convert(fileId: str) -> tuple[dict[str, Any], int]:
    owner = _caller()
    request = _body(ConvertRequest)
    options = _options(request.options)
    dry = ((app.current_event.query_string_parameters or {}).get("dry_run") or "").lower()
    if dry not in ("", "true", "false", "1", "0"):
        raise BadRequest("dry_run must be true or false")
    if dry in ("true", "1"):  # an estimate the worker answers: GET /api/v1/estimates/{estimateId}
        # the request is stored as JSON for the estimate's worker: a deadline as the ISO 8601 string the client sent
        stored = {key: value.isoformat() if isinstance(value, datetime) else value for key, value in options.items()}
        return estimates.start_file_estimate(services(), owner, fileId, options=stored), 202
    return usecases.convert_file(services(), owner, fileId, options=options, priority_group=_lacking(services().settings.batchlane_priority_group)), 202


@app.delete("/api/v1/files/<fileId>")
def delete_file(fileId: str) -> dict[str, Any]:
    return usecases.delete_file(services(), _caller(), fileId)


@app.get("/api/v1/files/<fileId>/conversion")
def conversion(fileId: str) -> dict[str, Any]:
    return live.with_live(services(), usecases.file_conversion(services(), _caller(), fileId))


@app.post("/api/v1/files/<fileId>/cancel")
def cancel(fileId: str) -> dict[str, Any]:
    owner = _caller()
    return usecases.cancel_file(services(), owner, fileId, job_id=_body(JobGuard).jobId)


@app.post("/api/v1/files/<fileId>/process-now")
def process_now(fileId: str) -> dict[str, Any]:
    owner = _caller()
    return usecases.process_now_file(
        services(), owner, fileId, job_id=_body(JobGuard).jobId, priority_group=_lacking(services().settings.batchlane_priority_group)
    )


@app.get("/api/v1/jobs/<jobId>")
def job(jobId: str) -> dict[str, Any]:
    return live.with_live(services(), usecases.job_conversion(services(), _caller(), jobId))


@app.get("/api/v1/jobs/<jobId>/source")
def job_source(jobId: str) -> dict[str, Any]:
    owner = _caller()
    return live.source_read(services(), services().downloads(), owner, jobId)


@app.get("/api/v1/estimates/<estimateId>")
def estimate(estimateId: str) -> dict[str, Any]:
    """A dry run's estimate: running (with its progress), completed (with the dry run's answer) or failed (with why)."""
    return estimates.owned_estimate(services(), _caller(), estimateId)


@app.get("/api/v1/webhook-config")
def webhook_config() -> dict[str, Any]:
    """The caller's own signing secret: created, and shown in this answer only, at their first read."""
    return webhook_usecases.webhook_config(services(), _caller())


@app.post("/api/v1/webhook-config/secret")
def rotate_webhook_secret() -> dict[str, Any]:
    """A new version of the caller's own secret, shown in this answer only; no other owner's changes."""
    return webhook_usecases.rotate_secret(services(), _caller())


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
    job_id = params.get("job_id") or None
    return webhook_usecases.list_deliveries(services(), owner, job_id=job_id and _path_id(job_id, "job_id"), limit=limit)


@app.get("/api/v1/jobs/<jobId>/markdown")
def markdown(jobId: str) -> dict[str, Any]:
    owner = _caller()
    return results.markdown_download(services(), services().downloads(), owner, jobId)


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


@app.post("/api/v1/jobs/<jobId>/resume")
def resume(jobId: str) -> dict[str, Any]:
    return usecases.resume_job(services(), _caller(), jobId)


@app.get("/api/v1/budget")
def budget() -> dict[str, Any]:
    return usecases.owner_budget(services(), _caller())


@app.put("/api/v1/admin/budgets/<ownerId>")
def set_budget(ownerId: str) -> dict[str, Any]:
    admin = _caller()
    _require_group(services().settings.batchlane_admin_group, "Setting a user's budget")
    if not valid_owner_id(ownerId):  # a NUL once reached SQL and answered 500
        raise InputError("ownerId must be a user id (a Cognito sub): letters, digits and ._@+-, at most 128.", error_id="OWNER_ID_INVALID")
    request = _body(BudgetOverride)
    return usecases.set_owner_budget(
        services(), admin, ownerId, usd_per_month=request.usdPerMonth, max_live_jobs=request.maxLiveJobs, max_live_pages=request.maxLivePages
    )


def _lacking(group: str) -> str | None:
    """``group`` when the caller is not a member (None: a member, or no group configured)."""
    return group if group and group not in _groups() else None


def _require_group(group: str, action: str) -> None:
    """403 FORBIDDEN unless the caller is in ``group`` (an empty group name: everyone may)."""
    if group and group not in _groups():
        raise Forbidden(f"{action} needs membership of the {group} group.")


app.include_router(folder_routes.router)


# -- errors ------------------------------------------------------------------------------
_STATUS_BY_TYPE: tuple[tuple[type[BatchlaneError], int], ...] = (
    (Unauthorized, 401),
    (BadRequest, 400),
    (Forbidden, 403),
    (BudgetExceeded, 402),
    (LimitReached, 429),
    (usecases.ConversionRejected, 422),
    (InputError, 400),
    (NotFound, 404),
    (results.ObjectExpired, 410),
    (Conflict, 409),
    (StoreUnavailable, 503),
)


_GENERIC_5XX = {
    503: "The service is temporarily unavailable; try again in a minute (the request id is in the logs).",
    500: "Internal error; the request id is in the logs.",
}


@app.exception_handler(BatchlaneError)
def _known(exc: BatchlaneError) -> Response:
    status = next((code for kind, code in _STATUS_BY_TYPE if isinstance(exc, kind)), 500)
    extra = {"jobId": exc.job_id} if isinstance(exc, usecases.ConversionRejected) else {}
    if isinstance(exc, RateLimited):
        response = _error(status, exc.error_id, str(exc), retryAfterSeconds=exc.retry_after_s)
        response.headers["Retry-After"] = str(exc.retry_after_s)
        return response
    if status >= 500:  # the cause (hosts, user names, database URLs) goes to the logs, never to the caller
        logger.exception("request failed", code=exc.error_id, cause=str(exc))
        return _error(status, exc.error_id, _GENERIC_5XX.get(status, _GENERIC_5XX[500]))
    return _error(status, exc.error_id, str(exc), **extra)


@app.not_found
def _no_route(exc: NotFoundError) -> Response:
    return _error(404, "ROUTE_NOT_FOUND", f"No route {app.current_event.http_method} {app.current_event.path}.")


@app.exception_handler(Exception)
def _unexpected(exc: Exception) -> Response:
    logger.exception("unexpected error")
    return _error(500, "INTERNAL", "Internal error; the request id is in the logs.")
