"""batch_resume: job + chunks back to pending in one transaction, then the conversion starts."""

from typing import Any

from batchlane.batch.resume import resume_job
from batchlane.handlers import JobRef, lambda_handler, parse
from batchlane.runtime import services


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return resume_job(services(), str(parse(event, JobRef).jobId))
