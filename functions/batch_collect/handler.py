"""batch_collect: {"jobId"} collects a terminal Bedrock job; {"jobId", "step": "abandon", "reason", "error"?} leaves the lane.

Raises CollectNotReady while the Bedrock job is not terminal (the state machine retries).
"""

from typing import Any, Literal

from batchlane.batch.collect import abandon, collect
from batchlane.handlers import JobRef, lambda_handler, parse
from batchlane.observability import metrics
from batchlane.runtime import services


class CollectRequest(JobRef):
    step: Literal["collect", "abandon"] = "collect"
    reason: str = "failed"
    error: dict[str, Any] | None = None


@metrics.log_metrics
@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse(event, CollectRequest)
    if request.step == "abandon":
        return abandon(services(), str(request.jobId), reason=request.reason, error=request.error)
    return collect(services(), str(request.jobId))
