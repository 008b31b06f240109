"""folder_finish: a folder job's final status, report.jsonl and manifest.json. {"jobId", "failed"?, "error"?} → {"jobId", "status"}."""

import json
from typing import Any

from batchlane.folders import record
from batchlane.folders.refs import FolderEnd
from batchlane.handlers import lambda_handler, parse
from batchlane.runtime import services


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse(event, FolderEnd)
    if request.failed:
        cause = json.dumps(request.error or {})[:400]
        return record.fail(services(), request.jobId, error_id="FOLDER_JOB_FAILED", message=f"The folder job's loop failed: {cause}")
    return record.finish(services(), request.jobId)
