"""conversion_start: pending → processing, and the chunk list the Map iterates."""

from typing import Any

from batchlane.filejob.start import start_conversion
from batchlane.handlers import JobRef, lambda_handler, parse
from batchlane.runtime import services


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    ref = parse(event, JobRef)
    return start_conversion(services().uow(), str(ref.jobId))
