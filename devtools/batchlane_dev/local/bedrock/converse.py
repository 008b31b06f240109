"""bedrock-runtime Converse and InvokeModel: request validation, throttling, latency, fault draws.

Validation follows what the real service rejects with ValidationException, so a
request that passes here is one AWS would accept (for the shapes batchlane uses: text
and PDF document blocks). The same validators check every batch record's modelInput
(Converse bodies here, Anthropic Messages bodies in :mod:`.invoke`).

A Converse document without ``citations: {enabled: true}`` is read in text-extraction
mode, with citations on in visual mode (see :mod:`.model`); InvokeModel is always visual.

Throttling is a requests-per-minute quota over REAL time (a sliding 60 s window), not
emulated time: it models the on-demand account quota that the converter's retry and
pacing code must live with, and those run on the wall clock.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import invoke, limits, model
from .errors import ApiError, validation
from .faults import Faults, answer_fault, draw

MAX_DOCUMENTS = 5
SERVICE_TIERS = ("priority", "default", "flex", "reserved")  # InvokeModel serviceTier (botocore 1.44)
FLEX_QUOTA_SHARE = 0.5  # under a throttle_rpm quota, flex is shed once half the window is used
DOCUMENT_FORMATS = ("pdf", "csv", "doc", "docx", "xls", "xlsx", "html", "txt", "md")
_CONTENT_KINDS = ("text", "image", "document", "video", "audio", "toolUse", "toolResult", "guardContent", "cachePoint", "reasoningContent", "citationsContent")


def validate_request(body: Any) -> None:
    """Raise ApiError(ValidationException) where Converse would."""
    if not isinstance(body, Mapping):
        raise validation("The request body must be a JSON object.")
    limits.enforce(body)  # document and request size (local/bedrock/limits.py)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise validation("The model returned the following errors: messages: at least one message is required")
    expected = "user"
    documents = 0
    for index, message in enumerate(messages):
        where = f"messages.{index}"
        if not isinstance(message, Mapping):
            raise validation(f"{where}: must be an object")
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise validation(f"{where}.role: must be 'user' or 'assistant'")
        if role != expected:
            raise validation("A conversation must start with a user message and alternate between user and assistant roles.")
        expected = "assistant" if role == "user" else "user"
        documents += _validate_content(message.get("content"), where)
    if documents > MAX_DOCUMENTS:
        raise validation(f"A request can hold at most {MAX_DOCUMENTS} documents; it holds {documents}.")
    system = body.get("system", [])
    if not isinstance(system, list) or any(not isinstance(b, Mapping) or not isinstance(b.get("text", "x"), str) or b.get("text") == "" for b in system):
        raise validation("system: each block must hold a non-empty text")
    _validate_inference_config(body.get("inferenceConfig"))


def _validate_content(content: Any, where: str) -> int:
    if not isinstance(content, list) or not content:
        raise validation(f"{where}.content: at least one content block is required")
    documents = 0
    for index, block in enumerate(content):
        at = f"{where}.content.{index}"
        if not isinstance(block, Mapping) or len(block) != 1 or next(iter(block)) not in _CONTENT_KINDS:
            raise validation(f"{at}: a content block must hold exactly one of {', '.join(_CONTENT_KINDS)}")
        kind, value = next(iter(block.items()))
        if kind == "text" and not isinstance(value, str):
            raise validation(f"{at}.text: must be a string")
        if kind == "text" and not value.strip():
            raise validation(f"{at}.text: text content blocks must be non-empty")
        if kind == "document":
            _validate_document(value, at)
            documents += 1
        elif kind not in ("text", "cachePoint"):
            raise validation(f"{at}: the emulated model accepts text and document blocks only, not {kind}")
    return documents


def _validate_document(document: Any, at: str) -> None:
    if not isinstance(document, Mapping):
        raise validation(f"{at}.document: must be an object")
    name = document.get("name")
    if not isinstance(name, str) or not 1 <= len(name) <= 200:
        raise validation(f"{at}.document.name: required, 1 to 200 characters")
    fmt = document.get("format")
    if fmt not in DOCUMENT_FORMATS:
        raise validation(f"{at}.document.format: must be one of {', '.join(DOCUMENT_FORMATS)}")
    if fmt != "pdf":
        raise validation(f"{at}.document.format: the emulated model reads pdf documents only")
    source = document.get("source")
    if not isinstance(source, Mapping) or not source.get("bytes"):
        raise validation(f"{at}.document.source.bytes: required (s3Location is not emulated)")
    citations = document.get("citations")
    if citations is not None and not (isinstance(citations, Mapping) and isinstance(citations.get("enabled"), bool)):
        raise validation(f'{at}.document.citations: must be {{"enabled": true|false}}')


def _validate_inference_config(config: Any) -> None:
    if config is None:
        return
    if not isinstance(config, Mapping):
        raise validation("inferenceConfig: must be an object")
    max_tokens = config.get("maxTokens")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise validation("inferenceConfig.maxTokens: must be an integer >= 1")
    for key in ("temperature", "topP"):
        value = config.get(key)
        if value is not None and (not isinstance(value, (int, float)) or not 0 <= value <= 1):
            raise validation(f"inferenceConfig.{key}: must be between 0 and 1")


def model_answer(body: Mapping[str, Any], seed: str, faults: Faults) -> dict[str, Any]:
    """Validate, draw the answer fault for ``seed``, and run the emulated model."""
    validate_request(body)
    try:
        return model.answer(body, fault=answer_fault(faults, seed, model.request_pages(body)))
    except model.ModelInputError as exc:
        raise validation(str(exc)) from exc


class RequestsPerMinute:
    """A sliding-window quota: at most ``limit`` accepted requests in any 60 real seconds."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._accepted: deque[float] = deque()
        self._lock = threading.Lock()

    def admit(self, share: float = 1.0) -> bool:
        """Accept one request while fewer than ``share`` of the limit were accepted in the window
        (flex asks for half: it sheds first)."""
        if not self.limit:
            return True
        now = time.monotonic()
        with self._lock:
            while self._accepted and now - self._accepted[0] >= 60.0:
                self._accepted.popleft()
            if len(self._accepted) >= max(1, int(self.limit * share)):
                return False
            self._accepted.append(now)
            return True


@dataclass(frozen=True)
class ServedCall:
    """One runtime call the emulator answered: the model, the tier that served it, its tokens and the pages it carried."""

    model_id: str
    tier: str
    input_tokens: int
    output_tokens: int
    pages: frozenset[int]


class ConverseRuntime:
    """Serves POST /model/{modelId}/converse and POST /model/{modelId}/invoke.

    The ``converse_*`` counters count every runtime call, Converse and InvokeModel alike
    (names kept for the benchmarks' history); ``invoke_requests`` counts InvokeModel alone.
    Both operations share the quota, the faults and the latency (``converse_latency_ms``).
    """

    def __init__(self, faults: Faults, stats: Counter[str], stats_lock: threading.Lock, shutdown: threading.Event) -> None:
        self._faults = faults
        self._stats = stats
        self._stats_lock = stats_lock
        self._shutdown = shutdown
        self._quota = RequestsPerMinute(faults.throttle_rpm)
        self._seen: Counter[str] = Counter()
        self.served: list[ServedCall] = []  # every call answered, in order: what AWS bills (BedrockEmulator.bill)

    def set_faults(self, faults: Faults) -> None:
        self._faults = faults  # one reference swap: a call in flight keeps the faults it read

    def _count(self, key: str) -> None:
        with self._stats_lock:
            self._stats[key] += 1

    def converse(self, model_id: str, body: Any) -> dict[str, Any]:
        response = self._serve(model_id, body, model_answer)
        response["metrics"]["latencyMs"] = response.pop("_latency_ms")
        return response

    def invoke(self, model_id: str, raw: bytes, service_tier: str | None = None) -> dict[str, Any]:
        """InvokeModel: the raw body must be an Anthropic Messages body (size checked before parsing).
        ``service_tier`` is the X-Amzn-Bedrock-Service-Tier header; the answer's ``_serviceTier`` says
        which tier served it (sent back in the same header)."""
        self._count("invoke_requests")
        tier = service_tier or "default"
        try:
            if tier not in SERVICE_TIERS:
                raise validation(f"1 validation error detected: Value '{tier}' at 'serviceTier' failed to satisfy constraint: one of {list(SERVICE_TIERS)}")
            if tier == "flex" and not self._faults.accepts_flex(model_id):
                raise validation(f"The service tier flex is not supported for the model {model_id}.")
            body = invoke.parse_body(raw)
        except ApiError:
            self._count("converse_requests")
            self._count("converse_invalid")
            raise
        response = self._serve(model_id, body, invoke.model_answer, tier=tier)
        response.pop("_latency_ms")
        return response

    def _serve(self, model_id: str, body: Any, answer: Callable[[Any, str, Faults], dict[str, Any]], *, tier: str = "default") -> dict[str, Any]:
        started = time.monotonic()
        self._count("converse_requests")
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        with self._stats_lock:
            seed = f"{digest}:{self._seen[digest]}"
            self._seen[digest] += 1
        flex = tier == "flex"
        if flex and self._faults.flex_throttle_rate and draw(seed, "flex_throttle") < self._faults.flex_throttle_rate:
            self._count("flex_throttled")  # flex sheds first: the quota is not spent on it
            raise ApiError("ThrottlingException", "Too many requests, please wait before trying again.")
        throttled = bool(self._faults.throttle_rate and draw(seed, "throttle") < self._faults.throttle_rate)
        if throttled or not self._quota.admit(FLEX_QUOTA_SHARE if flex else 1.0):
            self._count("flex_throttled" if flex else "converse_throttled")
            raise ApiError("ThrottlingException", "Too many requests, please wait before trying again.")
        if not model_id:
            raise validation("modelId is required")
        if self._faults.converse_latency_ms:
            self._shutdown.wait(self._faults.converse_latency_ms / 1000)
        try:
            response = answer(body, seed, self._faults)
        except ApiError:
            self._count("converse_invalid")
            raise
        if self._faults.output_ms_per_token:
            usage = response["usage"]
            output_tokens = usage.get("outputTokens", usage.get("output_tokens", 0))
            self._shutdown.wait(output_tokens * self._faults.output_ms_per_token / 1000)
        response["_latency_ms"] = int((time.monotonic() - started) * 1000)
        if flex and self._faults.flex_served_as_default_rate and draw(seed, "flex_as_default") < self._faults.flex_served_as_default_rate:
            tier = "default"  # served at the default tier after all: the response says so, and that is what is billed
        response["_serviceTier"] = tier
        usage = response["usage"]  # Converse or Anthropic Messages names
        pages = model.request_pages(body) if isinstance(body, Mapping) else frozenset()
        with self._stats_lock:
            self.served.append(
                ServedCall(
                    model_id, tier, usage.get("inputTokens", usage.get("input_tokens", 0)), usage.get("outputTokens", usage.get("output_tokens", 0)), pages
                )
            )
            self._stats["converse_ok"] += 1
            self._stats["runtime_input_tokens"] += usage.get("inputTokens", usage.get("input_tokens", 0))
            self._stats["runtime_output_tokens"] += usage.get("outputTokens", usage.get("output_tokens", 0))
            self._stats[f"tier_{tier}_requests"] += 1
            self._stats[f"tier_{tier}_input_tokens"] += usage.get("inputTokens", usage.get("input_tokens", 0))
            self._stats[f"tier_{tier}_output_tokens"] += usage.get("outputTokens", usage.get("output_tokens", 0))
        return response
