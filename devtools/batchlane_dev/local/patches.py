"""The two places moto needs help to run our deployment (docs/offline.md, the table at the top).

1. Lambda: without Docker moto only echoes payloads. ``LambdaSimpleBackend.invoke`` is
   routed to :class:`HandlerRegistry`, so Step Functions' ``lambda:invoke`` tasks run our
   real handlers; a raised exception becomes a function error whose ``errorType`` is the
   exception class name, exactly as Lambda reports it (Retry/Catch match on it). Past the
   registry's :class:`ConcurrencyLimit` the Invoke answers 429 TooManyRequestsException, as
   Lambda does when a function's concurrency is full (issue 21).
2. EventBridge: moto matches rules itself (real pattern matching) but raises
   NotImplementedError for Lambda and Step Functions targets. Those targets are
   delivered here, asynchronously, as EventBridge does; other targets keep moto's path.
"""

from __future__ import annotations

import copy
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from moto.awslambda.exceptions import LambdaClientError
from moto.awslambda_simple.models import LambdaSimpleBackend
from moto.events.models import Rule
from moto.utilities.arns import parse_arn

from batchlane_dev.local.lambda_runtime import HandlerRegistry, Throttled

log = logging.getLogger("batchlane_dev.local.patches")

_state: dict[str, Any] = {"registry": None, "start_execution": None}
_installed = False
_original_send_to_targets = Rule.send_to_targets


def _invoke(self: LambdaSimpleBackend, function_name: str, qualifier: str | None, body: Any, headers: Any, response_headers: Any) -> bytes:
    registry: HandlerRegistry | None = _state["registry"]
    if registry is None:
        raise RuntimeError("offline Lambda runtime not attached")
    event = json.loads(body) if body else {}
    if headers.get("X-Amz-Invocation-Type") == "Event":
        threading.Thread(target=_invoke_async, args=(registry, function_name, event), daemon=True, name=f"async-{function_name}").start()
        return b""
    try:
        with registry.admitted(function_name):
            outcome = registry.invoke(function_name, event)
    except Throttled as exc:  # Step Functions names it Lambda.TooManyRequestsException
        raise _TooManyRequests(str(exc)) from exc
    if outcome.failed:
        response_headers["x-amz-function-error"] = "Unhandled"
        return json.dumps({"errorType": outcome.error_type, "errorMessage": outcome.error_message}).encode()
    return json.dumps(outcome.result).encode()


class _TooManyRequests(LambdaClientError):
    code = 429

    def __init__(self, message: str) -> None:
        super().__init__("TooManyRequestsException", message)


def _invoke_async(registry: HandlerRegistry, function_name: str, event: Any) -> None:
    """An asynchronous invoke is queued by Lambda and retried while throttled (for up to 6 hours)."""
    while True:
        try:
            with registry.admitted(function_name):
                registry.invoke(function_name, event)
            return
        except Throttled:
            time.sleep(0.05)


def _deliver(registry: HandlerRegistry, start_execution: Callable[[str, dict[str, Any]], None], arn: str, event: dict[str, Any]) -> None:
    service = parse_arn(arn).service
    for attempt in range(3):  # EventBridge retries failed deliveries (up to 185 times; 3 is enough offline)
        try:
            if service == "lambda":
                outcome = registry.invoke(arn, event)
                if outcome.failed:
                    raise RuntimeError(f"{outcome.error_type}: {outcome.error_message}")
            else:
                start_execution(arn, event)
            return
        except Exception as exc:
            log.warning("event delivery to %s failed (attempt %d): %s", arn, attempt + 1, exc)
    log.error("event delivery to %s gave up", arn)


def _send_to_targets(self: Rule, original_event: dict[str, Any], transform_input: bool = True) -> None:
    if not self.event_pattern.matches_event(original_event):  # type: ignore[arg-type]
        return
    ours = [t for t in self.targets if parse_arn(t["Arn"]).service in ("lambda", "states")]
    others = [t for t in self.targets if t not in ours]
    registry = _state["registry"]
    for target in ours:
        event = json.loads(target["Input"]) if target.get("Input") else copy.deepcopy(original_event)
        threading.Thread(target=_deliver, args=(registry, _state["start_execution"], target["Arn"], event), daemon=True, name="eventbridge-target").start()
    if others:
        rest = copy.copy(self)
        rest.targets = others
        _original_send_to_targets(rest, original_event, transform_input)  # type: ignore[arg-type]


def install(registry: HandlerRegistry, start_execution: Callable[[str, dict[str, Any]], None]) -> None:
    """Attach the registry (idempotent; the latest stack's registry wins)."""
    global _installed
    _state["registry"] = registry
    _state["start_execution"] = start_execution
    if not _installed:
        LambdaSimpleBackend.invoke = _invoke  # type: ignore[method-assign]
        Rule.send_to_targets = _send_to_targets  # type: ignore[method-assign, assignment]
        _installed = True
