"""batch_abandon: {"laneId", "reason", "error"?} leaves the lane without results (stops and bills a submitted job; its members go on-demand)."""

from typing import Any

from batchlane.batch.abandon import abandon
from batchlane.handlers import LaneRef, lambda_handler, parse
from batchlane.observability import metrics
from batchlane.runtime import services


class AbandonRequest(LaneRef):
    reason: str = "failed"
    error: dict[str, Any] | None = None


@metrics.log_metrics  # BatchBillEstimated when a stopped job is billed without its manifest
@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse(event, AbandonRequest)
    return abandon(services(), request.lane, reason=request.reason, error=request.error)
