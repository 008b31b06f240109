"""settle: end the job. {"jobId"} settles a completed job; {"jobId", "failed": true, "error": {...}, "errorId"?} fails it."""

from typing import Any

from pydantic import BaseModel

from batchlane.conversion.settle import fail_job, settle_job
from batchlane.handlers import JobRef, lambda_handler, parse
from batchlane.runtime import services


class SettleEvent(JobRef):
    failed: bool = False
    error: dict[str, Any] | None = None
    errorId: str = "CONVERSION_FAILED"  # the intake's FailJob says SPLIT_FAILED


class _Cause(BaseModel):
    errorMessage: str | None = None


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse(event, SettleEvent)
    if not request.failed:
        return settle_job(services(), str(request.jobId))
    error = request.error or {}
    cause = str(error.get("Cause") or "")
    try:
        message = _Cause.model_validate_json(cause).errorMessage or cause
    except ValueError:
        message = cause
    return fail_job(services(), str(request.jobId), error_id=request.errorId, message=f"{error.get('Error', 'Error')}: {message}")
