"""batch_wait: the WaitForBatch task (.waitForTaskToken) stores its token on the lane."""

from typing import Any

from batchlane.batch.wait import register_wait
from batchlane.handlers import LaneRef, lambda_handler, parse
from batchlane.runtime import services


class WaitRequest(LaneRef):
    taskToken: str


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse(event, WaitRequest)
    return register_wait(services(), request.lane, request.taskToken)
