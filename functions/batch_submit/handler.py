"""batch_submit: {"jobId"} creates (or adopts) the Bedrock job.

Raises BatchSubmitBusy when Bedrock throttles or the quota is full (the state machine retries).
"""

from typing import Any

from batchlane.batch.submit import submit_batch_job
from batchlane.handlers import JobRef, lambda_handler, parse
from batchlane.runtime import services


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    ref = parse(event, JobRef)
    return submit_batch_job(services(), str(ref.jobId))
