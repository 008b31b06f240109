"""recovery: on a schedule, resume jobs stranded in waiting_batch behind a closed batch row,
and fail jobs left splitting long after their intake must have ended."""

from typing import Any

from batchlane.batch.resume import resume_stranded
from batchlane.conversion.create import fail_stalled_splits
from batchlane.handlers import lambda_handler
from batchlane.runtime import services


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    svc = services()
    return {**resume_stranded(svc), "splitsFailed": fail_stalled_splits(svc)}
