"""batch_packer: on the "job parked" event and every minute, pack the pool into lanes (Bedrock jobs) under the quota."""

from typing import Any

from batchlane.batch.packer import pack_pool
from batchlane.handlers import lambda_handler
from batchlane.runtime import services


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return pack_pool(services())
