"""batch_resume: {"laneId"} resumes every member job the lane was the last to carry (job + chunks to pending in one transaction each)."""

from typing import Any

from batchlane.batch.resume import resume_members
from batchlane.handlers import LaneRef, lambda_handler, parse
from batchlane.runtime import services


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return resume_members(services(), parse(event, LaneRef).lane)
