"""recovery: on a schedule, resume jobs stranded in waiting_batch behind a closed lane, end jobs and
folder jobs whose workflow ended without recording their end, and fail jobs left splitting long after
their intake must have ended."""

from typing import Any

from batchlane.folders.recovery import settle_ended_folder_jobs
from batchlane.handlers import lambda_handler
from batchlane.operations.recovery import recover
from batchlane.runtime import services


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    svc = services()
    return {**recover(svc), "folderJobsEnded": settle_ended_folder_jobs(svc)}
