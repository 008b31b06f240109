"""Transports: where a page's request goes.

* :class:`OnDemandTransport` calls InvokeModel (Anthropic Messages body) through the
  ``ModelRuntime`` port, with a read timeout sized for the request (:class:`ReadTimeoutPolicy`).
* :class:`CaptureTransport` records the request instead (the batch lane's prepare step
  runs the real converter with it, so batch records are exactly the on-demand requests).
* :class:`PrimedTransport` answers from stored batch results when model + prompt hash
  match, and hands everything else to its fallback (on-demand).

:func:`answer_from_messages` reads an InvokeModel response body; batch collect reads each
record's ``modelOutput`` with it too, so both lanes parse answers the same way.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from batchlane.claude.request import PageRequest
from batchlane.domain import page_form as forms
from batchlane.domain.cost import Usage
from batchlane.domain.records import parse_record_id
from batchlane.pdf.page_image import PageImageError
from batchlane.ports import ModelCallFailed, ModelReadTimeout, ModelRuntime

INVOCATION_ENDING = "InvocationEnding"  # not sent: too little time left to wait for an answer
RETRYABLE_CODES = frozenset(
    {"ThrottlingException", "ServiceUnavailableException", "ModelNotReadyException", "ModelTimeoutException", "InternalServerException"}
)


@dataclass(frozen=True)
class ModelAnswer:
    text: str
    stop_reason: str
    usage: Usage
    served_by: str  # on_demand | batch | capture
    service_tier: str = "default"  # the Bedrock service tier that served an on-demand answer (default | flex)


class ModelCallError(Exception):
    """A model call that did not produce an answer. ``retryable`` when trying later may help.

    ``possibly_billed`` is set when the request reached the model and may still be running
    (a read timeout): Bedrock bills it, so the caller books this estimate before anything
    sends the request again.
    """

    def __init__(self, code: str, message: str, *, retryable: bool, possibly_billed: Usage | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retryable = retryable
        self.possibly_billed = possibly_billed


class Transport(Protocol):
    def send(self, request: PageRequest) -> ModelAnswer: ...


def answer_from_messages(body: Mapping[str, Any], *, served_by: str) -> ModelAnswer:
    """Parse an Anthropic Messages response (InvokeModel body, or a batch record's modelOutput).

    A Converse-shaped body (a batch job submitted as Converse before the switch) is read too,
    so its tokens are still billed right; its answers never match a primed lookup (prompt hash).
    """
    if "output" in body or "stopReason" in body:
        return _answer_from_converse(body, served_by=served_by)
    content = body.get("content") or []
    text = "".join(str(block.get("text", "")) for block in content if isinstance(block, dict) and block.get("type") == "text")
    usage = body.get("usage") or {}
    return ModelAnswer(
        text=text,
        stop_reason=str(body.get("stop_reason") or ""),
        usage=Usage(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))),
        served_by=served_by,
    )


def _answer_from_converse(response: Mapping[str, Any], *, served_by: str) -> ModelAnswer:
    content = response.get("output", {}).get("message", {}).get("content", []) or []
    text = "".join(block.get("text", "") for block in content if isinstance(block, dict))
    usage = response.get("usage", {}) or {}
    return ModelAnswer(
        text=text,
        stop_reason=str(response.get("stopReason", "")),
        usage=Usage(int(usage.get("inputTokens", 0)), int(usage.get("outputTokens", 0))),
        served_by=served_by,
    )


@dataclass(frozen=True)
class ReadTimeoutPolicy:
    """How long to wait for a non-streaming answer.

    Long enough for ``max_tokens`` at the slow end of generation speed (plus the time to the
    first token), capped at AWS's guidance for large outputs (re:Post
    "bedrock-large-model-read-timeouts": up to 3,600 s), and never past the end of the
    invocation, so a call cannot outlive the Lambda that must book it.
    """

    first_byte_s: float = 60.0
    min_tokens_per_s: float = 20.0
    max_s: float = 3600.0
    min_s: float = 1.0  # below this there is no point sending: the invocation is ending

    @classmethod
    def from_settings(cls, settings: Any) -> ReadTimeoutPolicy:
        return cls(
            first_byte_s=float(settings.batchlane_read_timeout_first_byte_s),
            min_tokens_per_s=float(settings.batchlane_read_timeout_min_tokens_per_s),
            max_s=float(settings.batchlane_read_timeout_max_s),
        )

    def for_request(self, max_tokens: int, remaining_s: float | None = None) -> float | None:
        """Seconds to wait, or None when the invocation ends too soon to send at all.

        Rounded down (whole seconds, 15 s steps past a minute) so few clients are made.
        """
        wanted = min(self.max_s, self.first_byte_s + max_tokens / self.min_tokens_per_s)
        if remaining_s is not None:
            wanted = min(wanted, remaining_s)
        if wanted < self.min_s:
            return None
        return float(15 * math.floor(wanted / 15) if wanted >= 60 else math.floor(wanted))


class OnDemandTransport:
    """InvokeModel through the ``ModelRuntime`` port (aws.bedrock_runtime), one read timeout per request.

    ``ends_at`` (``clock()`` time) is when the invocation must be done waiting.
    """

    def __init__(
        self,
        runtime: ModelRuntime,
        *,
        timeouts: ReadTimeoutPolicy | None = None,
        ends_at: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._runtime = runtime
        self._timeouts = timeouts or ReadTimeoutPolicy()
        self._ends_at = ends_at
        self._clock = clock

    def send(self, request: PageRequest) -> ModelAnswer:
        remaining = None if self._ends_at is None else self._ends_at - self._clock()
        timeout = self._timeouts.for_request(request.max_tokens, remaining)
        if timeout is None:
            raise ModelCallError(INVOCATION_ENDING, "too little time left in this invocation to wait for an answer", retryable=True)
        try:
            kwargs = request.invoke_kwargs()
        except PageImageError as exc:  # the image form of this page cannot be made: nothing was sent
            raise ModelCallError("PAGE_IMAGE_FAILED", str(exc), retryable=False) from exc
        try:
            response = self._runtime.invoke_model(kwargs, read_timeout=timeout)
            body = json.loads(response.body)
        except ModelReadTimeout as exc:
            # The request reached Bedrock and may still be generating: it is billed whatever we do.
            estimate = Usage(request.estimated_input_tokens(), request.max_tokens)
            raise ModelCallError(exc.code, exc.message, retryable=True, possibly_billed=estimate) from exc
        except ModelCallFailed as exc:
            raise ModelCallError(exc.code, exc.message, retryable=exc.transient or exc.code in RETRYABLE_CODES) from exc
        except ValueError as exc:
            raise ModelCallError("MalformedResponse", f"the answer is not JSON: {exc}", retryable=True) from exc
        answer = answer_from_messages(body, served_by="on_demand")
        # Priced and booked at the tier that served it (issue 38.6), not the one asked for; a response that names
        # none was served at the default tier (never the cheaper one by assumption).
        return replace(answer, service_tier=response.service_tier or "default")


class FormMemory:
    """The page form each model gets from now on, for ``auto``, and the evidence it is judged by.

    Starts from what was recorded; every PDF-form request that succeeded or failed as invalid input (and was
    then answered as images) is tallied per model (``domain/page_form.FormTally``). When the tally says the
    PDF form is refused, the model switches to images for this process and ``record`` hands that on
    (db/page_forms.py) so other Lambdas and the batch lane's prepare follow it too."""

    def __init__(self, recorded: Mapping[str, str] | None = None, record: Callable[[str, str, str], None] | None = None) -> None:
        self._forms = dict(recorded or {})
        self._tallies: dict[str, forms.FormTally] = {}
        self._record = record
        self._lock = threading.Lock()

    def form_for(self, model_id: str, default: str) -> str:
        with self._lock:
            return self._forms.get(model_id, default)

    def tally(self, model_id: str) -> forms.FormTally:
        """The PDF form's evidence for ``model_id`` so far (a copy)."""
        with self._lock:
            found = self._tallies.get(model_id, forms.FormTally())
            return forms.FormTally(found.succeeded, found.failed)

    def succeeded(self, model_id: str, form: str) -> None:
        if form != forms.PDF:
            return
        with self._lock:
            self._tallies.setdefault(model_id, forms.FormTally()).succeeded += 1

    def failed(self, model_id: str, form: str, detail: str) -> None:
        """A ``form`` request failed as invalid input and the same pages were answered in the other form."""
        if form != forms.PDF:
            return
        with self._lock:
            tally = self._tallies.setdefault(model_id, forms.FormTally())
            tally.failed += 1
            switch = tally.refused() and self._forms.get(model_id) != forms.IMAGE
            if switch:
                self._forms[model_id] = forms.IMAGE
        if switch and self._record is not None:
            self._record(
                model_id, forms.IMAGE, f"{tally.failed} pdf-form requests failed as invalid input and were answered as images, none succeeded; last: {detail}"
            )


class FormFallbackTransport:
    """``auto``: send each page in the model's current form. A PDF-form call refused as invalid input (whatever
    the message says) is sent again as images in the same slot, so the page is served either way; the model
    switches to images only when :class:`FormMemory`'s evidence says the PDF form is refused (several such
    pages, none served as PDF), never on one corrupt page. Sits inside the governed transport."""

    def __init__(self, inner: Transport, memory: FormMemory) -> None:
        self._inner = inner
        self._memory = memory

    def send(self, request: PageRequest) -> ModelAnswer:
        form = self._memory.form_for(request.model_id, request.page_form)
        request = request if form == request.page_form else request.with_form(form)
        try:
            answer = self._inner.send(request)
        except ModelCallError as exc:
            if not forms.worth_the_other_form(exc.code, request.page_form):
                raise
            try:
                answer = self._inner.send(request.with_form(forms.other(request.page_form)))
            except ModelCallError as again:
                if again.retryable:
                    raise  # throttled or the like: the governed transport tries the whole send again
                raise exc from again  # both forms refused these pages: the page's fault, not the form's
            self._memory.failed(request.model_id, request.page_form, exc.message[:500])
            return answer
        self._memory.succeeded(request.model_id, request.page_form)
        return answer


@dataclass
class CaptureTransport:
    """Records requests; answers nothing (stop reason ``captured``)."""

    requests: list[PageRequest] = field(default_factory=list)

    def send(self, request: PageRequest) -> ModelAnswer:
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

    def lookup(self, request: PageRequest) -> ModelAnswer | None:
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

    def send(self, request: PageRequest) -> ModelAnswer:
        return self.lookup(request) or self._fallback.send(request)

    def answers_by_page(self) -> dict[int, Usage]:
        """The tokens of each stored batch answer, by page number (billed by the batch lane, used or not)."""
        return {parse_record_id(rid)[1]: Usage(r.input_tokens, r.output_tokens) for rid, r in self._results.items()}
