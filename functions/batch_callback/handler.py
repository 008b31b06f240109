"""batch_callback: EventBridge target for aws.bedrock "Batch Inference Job State Change"."""

from typing import Any

from pydantic import BaseModel, ConfigDict

from batchlane.batch.callback import on_state_change
from batchlane.handlers import lambda_handler, parse
from batchlane.observability import metrics
from batchlane.runtime import services


class StateChangeEvent(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    source: str
    detail: dict[str, Any]


@metrics.log_metrics  # BatchBillEstimated when a stopped job is billed without its manifest
@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse(event, StateChangeEvent)
    if request.source != "aws.bedrock":
        return {"known": False, "ignored": request.source}
    return on_state_change(services(), request.detail)
