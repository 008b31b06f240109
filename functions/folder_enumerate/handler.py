"""folder_enumerate: a few ListObjectsV2 pages of a folder job from its checkpoint. {"jobId"} → {"enumerationDone"}."""

from typing import Any

from batchlane.folders.enumerate import enumerate_step
from batchlane.folders.refs import FolderRef
from batchlane.handlers import lambda_handler, parse
from batchlane.runtime import services


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse(event, FolderRef)
    svc = services()
    return enumerate_step(svc.uow(), svc.folder_buckets, svc.bus, svc.settings, request.jobId)
