"""batch_claimer: on the "job parked" event and every minute, pack the pool into lanes (Bedrock jobs) under the quota."""

from typing import Any

from batchlane.batch.claimer import claim_parked_jobs
from batchlane.handlers import lambda_handler
from batchlane.runtime import services


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return claim_parked_jobs(services())
