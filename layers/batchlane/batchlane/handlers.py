"""What every handler shares: event parsing with clear errors, and the standard decorators."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar
from uuid import UUID

from pydantic import BaseModel, ConfigDict, ValidationError

from batchlane.observability import logger, tracer
from batchlane.validation import first_error

Model = TypeVar("Model", bound=BaseModel)


class BadEvent(ValueError):
    """The event does not have the shape this handler takes."""


class JobRef(BaseModel):
    model_config = ConfigDict(extra="ignore")
    jobId: UUID


class LaneRef(BaseModel):
    """A batch-lane step's event: the lane (one Bedrock job of the pool). An execution started before
    the pool passes ``jobId``: its lane id is its job id."""

    model_config = ConfigDict(extra="ignore")
    laneId: UUID | None = None
    jobId: UUID | None = None

    @property
    def lane(self) -> str:
        value = self.laneId or self.jobId
        if value is None:
            raise BadEvent("bad event: laneId is required")
        return str(value)


class ChunkRef(JobRef):
    chunkIndex: int


class EstimateRef(BaseModel):
    """The estimate machine's event: the estimate, and on its failure path what stopped the worker."""

    model_config = ConfigDict(extra="ignore")
    estimateId: UUID
    failed: bool = False
    error: dict[str, Any] | None = None


def parse(event: Any, model: type[Model]) -> Model:
    try:
        return model.model_validate(event)
    except ValidationError as exc:
        raise BadEvent(f"bad event for {model.__name__}: {first_error(exc, where='event')}") from None


def lambda_handler(fn: Callable[[dict[str, Any], Any], Any]) -> Callable[[dict[str, Any], Any], Any]:
    """Powertools logging context + tracing around a handler body."""
    return logger.inject_lambda_context(clear_state=True)(tracer.capture_lambda_handler(fn))
