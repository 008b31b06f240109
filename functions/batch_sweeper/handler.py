"""batch_sweeper: on a slow schedule, ask Bedrock about rows still waiting (lost events strand nothing)."""

from typing import Any

from batchlane.batch.sweeper import sweep
from batchlane.handlers import lambda_handler
from batchlane.observability import metrics
from batchlane.runtime import services


@metrics.log_metrics
@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return sweep(services())
