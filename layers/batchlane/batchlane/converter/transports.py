"""Transports: where a page's Converse request goes.

* :class:`OnDemandTransport` calls ``bedrock-runtime`` Converse through boto3.
* :class:`CaptureTransport` records the request instead (the batch lane's prepare step
  runs the real converter with it, so batch records are exactly the on-demand requests).
* :class:`PrimedTransport` answers from stored batch results when model + prompt hash
  match, and hands everything else to its fallback (on-demand).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from batchlane.converter.request import ConverseRequest
from batchlane.domain.cost import Usage

RETRYABLE_CODES = frozenset(
    {"ThrottlingException", "ServiceUnavailableException", "ModelNotReadyException", "ModelTimeoutException", "InternalServerException"}
)


@dataclass(frozen=True)
class ModelAnswer:
    text: str
    stop_reason: str
    usage: Usage
    served_by: str  # on_demand | batch | capture


class ModelCallError(Exception):
    """A model call that did not produce an answer. ``retryable`` when trying later may help."""

    def __init__(self, code: str, message: str, *, retryable: bool) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.retryable = retryable


class Transport(Protocol):
    def send(self, request: ConverseRequest) -> ModelAnswer: ...


def answer_from_converse(response: Mapping[str, Any], *, served_by: str) -> ModelAnswer:
    """Parse a Converse response body (on-demand, or a batch record's modelOutput)."""
    content = response.get("output", {}).get("message", {}).get("content", []) or []
    text = "".join(block.get("text", "") for block in content if isinstance(block, dict))
    usage = response.get("usage", {}) or {}
    return ModelAnswer(
        text=text,
        stop_reason=str(response.get("stopReason", "")),
        usage=Usage(int(usage.get("inputTokens", 0)), int(usage.get("outputTokens", 0))),
        served_by=served_by,
    )


class OnDemandTransport:
    """Converse through a boto3 ``bedrock-runtime`` client (its retry config absorbs throttling)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def send(self, request: ConverseRequest) -> ModelAnswer:
        try:
            response = self._client.converse(**request.converse_kwargs())
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "ClientError")
            raise ModelCallError(code, exc.response.get("Error", {}).get("Message", str(exc)), retryable=code in RETRYABLE_CODES) from exc
        except BotoCoreError as exc:
            raise ModelCallError(type(exc).__name__, str(exc), retryable=True) from exc
        return answer_from_converse(response, served_by="on_demand")


@dataclass
class CaptureTransport:
    """Records requests; answers nothing (stop reason ``captured``)."""

    requests: list[ConverseRequest] = field(default_factory=list)

    def send(self, request: ConverseRequest) -> ModelAnswer:
        self.requests.append(request)
        return ModelAnswer(text="", stop_reason="captured", usage=Usage(), served_by="capture")


@dataclass(frozen=True)
class PrimedResult:
    """One accepted batch answer, as collect wrote it to results/chunk-N.json."""

    record_id: str
    model_id: str
    prompt_hash: str
    text: str
    stop_reason: str
    input_tokens: int = 0
    output_tokens: int = 0

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PrimedResult:
        return cls(
            record_id=data["recordId"],
            model_id=data["modelId"],
            prompt_hash=data["promptHash"],
            text=data["text"],
            stop_reason=data.get("stopReason", "end_turn"),
            input_tokens=int(data.get("inputTokens", 0)),
            output_tokens=int(data.get("outputTokens", 0)),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "recordId": self.record_id,
            "modelId": self.model_id,
            "promptHash": self.prompt_hash,
            "text": self.text,
            "stopReason": self.stop_reason,
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
        }


class PrimedTransport:
    """Serve a page from its batch result when model and prompt hash match; else fall back.

    A mismatch (the prompt or model changed since prepare) costs an on-demand call, never
    correctness. Counters say how many pages each way, for the chunk's report.
    """

    def __init__(self, results: Mapping[str, PrimedResult], fallback: Transport) -> None:
        self._results = results
        self._fallback = fallback
        self._lock = threading.Lock()
        self.served = 0
        self.mismatched = 0

    def lookup(self, request: ConverseRequest) -> ModelAnswer | None:
        """The batch answer for ``request`` when model and prompt hash match; None otherwise (no fallback)."""
        primed = self._results.get(request.record_id)
        if primed is not None and primed.model_id == request.model_id and primed.prompt_hash == request.prompt_hash:
            with self._lock:
                self.served += 1
            return ModelAnswer(primed.text, primed.stop_reason, Usage(primed.input_tokens, primed.output_tokens), served_by="batch")
        if primed is not None:
            with self._lock:
                self.mismatched += 1
        return None

    def send(self, request: ConverseRequest) -> ModelAnswer:
        return self.lookup(request) or self._fallback.send(request)
