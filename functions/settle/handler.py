"""settle: end the job. {"jobId"} settles a completed job; {"jobId", "failed": true, "error": {...}, "errorId"?} fails it."""

from typing import Any

from pydantic import BaseModel

from batchlane.filejob.settle import fail_job, settle_job
from batchlane.handlers import JobRef, lambda_handler, parse
from batchlane.observability import logger
from batchlane.runtime import services


class SettleEvent(JobRef):
    failed: bool = False
    error: dict[str, Any] | None = None
    errorId: str = "CONVERSION_FAILED"  # the intake's FailJob says SPLIT_FAILED


GENERIC_FAILURES = {
    "CONVERSION_FAILED": "The conversion failed after its retries; no further pages are converted. Try again, or contact support with the job id.",
    "SPLIT_FAILED": "The PDF could not be split after several attempts; try again, or contact support with the job id.",
}


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
        detail = _Cause.model_validate_json(cause).errorMessage or cause
    except ValueError:
        detail = cause
    # The raw cause (a Lambda's exception text: hosts, keys, stack frames) stays in the logs;
    # the job, which its owner reads through the API, keeps a stable code and a generic message.
    logger.error("job failed by its workflow", job_id=str(request.jobId), error_id=request.errorId, error=error.get("Error"), cause=detail[:2000])
    message = GENERIC_FAILURES.get(request.errorId, GENERIC_FAILURES["CONVERSION_FAILED"])
    return fail_job(services(), str(request.jobId), error_id=request.errorId, message=message)
