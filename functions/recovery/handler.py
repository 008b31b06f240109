"""recovery: on a schedule, resume jobs stranded in waiting_batch behind a closed batch row."""

from typing import Any

from batchlane.batch.resume import resume_stranded
from batchlane.handlers import lambda_handler
from batchlane.runtime import services


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return resume_stranded(services())
