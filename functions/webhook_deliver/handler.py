"""webhook_deliver: {"deliveryId"} POSTs it signed (raises DeliveryFailed to be retried);
{"deliveryId", "giveUp": true, "error"} marks it failed once the retry ladder is spent."""

from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from batchlane.handlers import lambda_handler, parse
from batchlane.runtime import services
from batchlane.webhooks.deliver import deliver, give_up, owner_signing_keys


class DeliveryEvent(BaseModel):
    model_config = ConfigDict(extra="ignore")
    deliveryId: UUID
    giveUp: bool = False
    error: dict[str, Any] | None = None


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse(event, DeliveryEvent)
    svc = services()
    if request.giveUp:
        return give_up(svc.uow().deliveries, str(request.deliveryId), request.error)
    settings = svc.settings
    return deliver(
        svc.uow().deliveries,
        str(request.deliveryId),
        signing_keys=lambda owner: owner_signing_keys(svc, owner),
        allow_private=settings.batchlane_webhook_allow_private,
        timeout_s=settings.batchlane_webhook_timeout_s,
    )
