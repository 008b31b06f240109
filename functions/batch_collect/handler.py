"""batch_collect: {"laneId"} collects a terminal Bedrock job: results per member chunk, the batch ledger row and the members' shares.

Raises CollectNotReady while the Bedrock job is not terminal (the state machine retries).
"""

from typing import Any

from batchlane.batch.collect import collect
from batchlane.handlers import LaneRef, lambda_handler, parse
from batchlane.observability import metrics
from batchlane.runtime import services


@metrics.log_metrics
@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    ref = parse(event, LaneRef)
    return collect(services(), ref.lane)
