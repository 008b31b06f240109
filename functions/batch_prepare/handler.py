"""batch_prepare: {"laneId", "step": "plan" | "chunk" | "finish", "group"?} (one child per slice of the lane's member chunks)."""

from typing import Any, Literal

from batchlane.batch.prepare import finish_prepare, plan_prepare, prepare_group
from batchlane.handlers import LaneRef, lambda_handler, parse
from batchlane.runtime import services


class PrepareStep(LaneRef):
    step: Literal["plan", "chunk", "finish"]
    group: int | None = None  # the slice of the lane's member chunks a Map child prepares


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse(event, PrepareStep)
    lane_id = request.lane
    if request.step == "plan":
        return plan_prepare(services(), lane_id)
    if request.step == "chunk":
        if request.group is None:
            raise ValueError("bad event for PrepareStep: group is required for step chunk")
        return prepare_group(services(), lane_id, request.group)
    return finish_prepare(services(), lane_id)
