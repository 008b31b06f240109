"""job_split: the intake's Split task. {"jobId"} → the job after its split (failed with an error id on a bad PDF)."""

from typing import Any

from batchlane.filejob.split import split_job
from batchlane.handlers import JobRef, lambda_handler, parse
from batchlane.runtime import services


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse(event, JobRef)
    return split_job(services(), str(request.jobId)).to_json()
