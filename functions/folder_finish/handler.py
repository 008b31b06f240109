"""folder_finish: a folder job's final status, report.jsonl and manifest.json. {"jobId", "failed"?, "error"?} → {"jobId", "status"}."""

from typing import Any

from batchlane.folders import finish
from batchlane.folders.refs import FolderEnd
from batchlane.handlers import lambda_handler, parse
from batchlane.observability import logger
from batchlane.runtime import services


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse(event, FolderEnd)
    svc = services()
    if request.failed:
        error_id, message = finish.loop_failure(request.error)
        logger.warning("folder job loop failed", job_id=request.jobId, error=str((request.error or {}).get("Error"))[:100])
        return finish.fail(svc.uow(), svc.folder_buckets, svc.bus, request.jobId, error_id=error_id, message=message)
    return finish.finish(svc.uow(), svc.folder_buckets, svc.bus, request.jobId)
