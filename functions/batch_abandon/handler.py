"""batch_abandon: {"jobId", "reason", "error"?} leaves the lane without results (stops and bills a submitted job)."""

from typing import Any

from batchlane.batch.abandon import abandon
from batchlane.handlers import JobRef, lambda_handler, parse
from batchlane.runtime import services


class AbandonRequest(JobRef):
    reason: str = "failed"
    error: dict[str, Any] | None = None


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse(event, AbandonRequest)
    return abandon(services(), str(request.jobId), reason=request.reason, error=request.error)
