"""batch_stop: {"jobId", "reason"} asks Bedrock to stop the job's batch job (the wait timed out)."""

from typing import Any

from batchlane.batch.stop import stop_batch_job
from batchlane.handlers import JobRef, lambda_handler, parse
from batchlane.runtime import services


class StopRequest(JobRef):
    reason: str = "overdue"


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse(event, StopRequest)
    return {"stopRequested": stop_batch_job(services(), str(request.jobId), reason=request.reason)}
