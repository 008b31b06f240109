"""batch_submit: {"jobId"} creates (or adopts) the Bedrock job; {"jobId", "action": "stop", "reason"} stops it.

Raises BatchSubmitBusy when Bedrock throttles or the quota is full (the state machine retries).
"""

from typing import Any, Literal

from batchlane.batch.submit import stop_batch_job, submit_batch_job
from batchlane.handlers import JobRef, lambda_handler, parse
from batchlane.runtime import services


class SubmitRequest(JobRef):
    action: Literal["submit", "stop"] = "submit"
    reason: str = "overdue"


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse(event, SubmitRequest)
    if request.action == "stop":
        return {"stopRequested": stop_batch_job(services(), str(request.jobId), reason=request.reason)}
    return submit_batch_job(services(), str(request.jobId))
