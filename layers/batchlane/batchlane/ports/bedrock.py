"""Amazon Bedrock: batch inference jobs and on-demand model calls; the adapters (aws/) translate AWS's error codes into the errors here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class BatchJobSpec:
    """One CreateModelInvocationJob (modelInvocationType InvokeModel, JSONL input)."""

    name: str
    client_token: str
    model_id: str
    role_arn: str
    input_uri: str
    output_uri: str
    timeout_hours: int
    tags: Mapping[str, str]


@dataclass(frozen=True)
class BatchJobRef:
    arn: str
    name: str


class BatchJobsError(Exception):
    """Bedrock refused a batch-job call; ``code`` is AWS's error code."""

    def __init__(self, code: str, message: str = "") -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code
        self.message = message


class BatchJobsBusy(BatchJobsError):
    """Throttled, or the concurrent-job quota is full: the same call may succeed later."""


class BatchJobRejected(BatchJobsError):
    """The create was refused for good (ValidationException, AccessDenied, ...)."""


class BatchJobNotFound(BatchJobsError):
    """Bedrock does not know the job (ResourceNotFoundException)."""


class BatchJobAlreadyEnded(BatchJobsError):
    """Stop refused because the job is no longer running (ValidationException): nothing left to stop."""


class BatchJobs(Protocol):
    def create(self, spec: BatchJobSpec) -> str:
        """The job's ARN. A job of the same name and token that exists already is adopted (idempotent).
        Raises BatchJobsBusy or BatchJobRejected."""
        ...

    def status(self, arn: str) -> str:
        """Bedrock's status (Submitted … Expired). Raises BatchJobNotFound."""
        ...

    def stop(self, arn: str) -> None:
        """Ask Bedrock to stop the job. Raises BatchJobAlreadyEnded, or BatchJobsError for any other refusal."""
        ...

    def find_by_name(self, name: str) -> BatchJobRef | None: ...


class ModelCallFailed(Exception):
    """A runtime call with no answer: ``code`` is AWS's error code or the client error's name;
    ``transient`` when the call never reached a verdict (connection trouble)."""

    def __init__(self, code: str, message: str, *, transient: bool = False) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.transient = transient


class ModelReadTimeout(ModelCallFailed):
    """No answer within the read timeout: the request reached the model and is billed all the same."""


@dataclass(frozen=True)
class ModelResponse:
    """InvokeModel's answer: its body, and the service tier that served it (the response's ``serviceTier``,
    header ``X-Amzn-Bedrock-Service-Tier``: what is billed, whatever tier was asked for), None when it says none."""

    body: bytes
    service_tier: str | None = None


class ModelRuntime(Protocol):
    def invoke_model(self, request: Mapping[str, Any], *, read_timeout: float) -> ModelResponse:
        """InvokeModel with ``request`` as its keyword arguments; the response. Raises ModelCallFailed."""
        ...
