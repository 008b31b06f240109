"""job_create: {"fileId", "options"?} → the job (failed with an error id on bad input)."""

from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from batchlane.filejob.create import create_job
from batchlane.handlers import lambda_handler, parse
from batchlane.runtime import services


class CreateJob(BaseModel):
    model_config = ConfigDict(extra="forbid")
    fileId: UUID
    options: dict[str, Any] = {}


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = parse(event, CreateJob)
    return create_job(services(), file_id=str(request.fileId), options=request.options).to_json()
