"""recovery: on a schedule, resume jobs stranded in waiting_batch behind a closed batch row,
and fail jobs left splitting long after their intake must have ended."""

from typing import Any

from batchlane.handlers import lambda_handler
from batchlane.operations.recovery import recover
from batchlane.runtime import services


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return recover(services())
