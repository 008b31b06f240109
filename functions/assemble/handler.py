"""assemble: chunk results → the job's Markdown, in page order, every page marked."""

from typing import Any

from batchlane.filejob.assemble import assemble_job
from batchlane.handlers import JobRef, lambda_handler, parse
from batchlane.observability import metrics
from batchlane.runtime import services


@metrics.log_metrics
@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    ref = parse(event, JobRef)
    return assemble_job(services(), str(ref.jobId))
