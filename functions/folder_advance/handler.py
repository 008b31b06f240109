"""folder_advance: one turn of a folder job's loop (settle finished files, start queued ones, report). {"jobId"} → {"done", ...}."""

from typing import Any

from batchlane.folders.advance import advance
from batchlane.folders.refs import FolderRef
from batchlane.handlers import lambda_handler, parse
from batchlane.runtime import services


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse(event, FolderRef)
    return advance(services(), request.jobId)
