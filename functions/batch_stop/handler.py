"""batch_stop: {"laneId", "reason"} asks Bedrock to stop the lane's batch job (the wait timed out)."""

from typing import Any

from batchlane.batch.stop import stop_batch_job
from batchlane.handlers import LaneRef, lambda_handler, parse
from batchlane.runtime import services


class StopRequest(LaneRef):
    reason: str = "overdue"


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse(event, StopRequest)
    return {"stopRequested": stop_batch_job(services(), request.lane, reason=request.reason)}
