"""batch_submit: {"laneId"} creates (or adopts) the lane's Bedrock job.

Raises BatchSubmitBusy when Bedrock throttles or the quota is full (the state machine retries).
"""

from typing import Any

from batchlane.batch.submit import submit_batch_job
from batchlane.handlers import LaneRef, lambda_handler, parse
from batchlane.runtime import services


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    ref = parse(event, LaneRef)
    return submit_batch_job(services(), ref.lane)
