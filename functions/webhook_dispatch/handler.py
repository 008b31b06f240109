"""webhook_dispatch: EventBridge target for "Conversion Job State Change" → the job's webhook deliveries."""

from typing import Any

from batchlane.handlers import lambda_handler
from batchlane.runtime import services
from batchlane.webhooks.dispatch import dispatch


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    svc = services()
    return {"deliveries": dispatch(svc.uow(), svc.workflows, event)}
