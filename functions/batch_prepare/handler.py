"""batch_prepare: {"jobId", "step": "plan" | "chunk" | "finish", "chunkIndex"?} (one child per chunk)."""

from typing import Any, Literal

from batchlane.batch.prepare import finish_prepare, plan_prepare, prepare_chunk
from batchlane.handlers import JobRef, lambda_handler, parse
from batchlane.runtime import services


class PrepareStep(JobRef):
    step: Literal["plan", "chunk", "finish"]
    chunkIndex: int | None = None


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse(event, PrepareStep)
    job_id = str(request.jobId)
    if request.step == "plan":
        return plan_prepare(services(), job_id)
    if request.step == "chunk":
        if request.chunkIndex is None:
            raise ValueError("bad event for PrepareStep: chunkIndex is required for step chunk")
        return prepare_chunk(services(), job_id, request.chunkIndex)
    return finish_prepare(services(), job_id)
