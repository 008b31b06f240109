"""Runs the real handlers in ``functions/<name>/handler.py`` in this process.

moto's Lambda (without Docker) only echoes payloads; the offline stack routes each
invocation here instead, so the state machines call exactly the code Lambda would run.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from batchlane import topology
from batchlane.local.iam import acting_as
from batchlane.topology import handler_path

FUNCTION_PREFIX = "batchlane-"
log = logging.getLogger("batchlane.local.lambda")


@dataclass
class LambdaContext:
    """The attributes Powertools reads from a real Lambda context."""

    function_name: str
    memory_limit_in_mb: int = 512
    aws_request_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    invoked_function_arn: str = ""
    log_group_name: str = "/aws/lambda/offline"
    log_stream_name: str = "offline"
    function_version: str = "$LATEST"
    timeout_s: float = 900.0  # the function's timeout in the topology
    started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        """As Lambda reports it. Offline nothing kills a handler at the timeout; this only
        tells handlers how long they would have."""
        return max(0, int((self.timeout_s - (time.monotonic() - self.started)) * 1000))


@dataclass(frozen=True)
class Invocation:
    result: Any = None
    error_type: str | None = None
    error_message: str | None = None

    @property
    def failed(self) -> bool:
        return self.error_type is not None


class HandlerRegistry:
    def __init__(self, account_id: str = "123456789012", region: str = "us-east-1") -> None:
        self._modules: dict[str, ModuleType] = {}
        self._lock = threading.Lock()
        self.account_id = account_id
        self.region = region
        self.calls: dict[str, int] = {}
        self._interceptors: dict[str, Callable[[Any, Callable[[Any], Invocation]], Invocation]] = {}

    def function_name(self, name: str) -> str:
        return f"{FUNCTION_PREFIX}{name}"

    def arn(self, name: str) -> str:
        return f"arn:aws:lambda:{self.region}:{self.account_id}:function:{self.function_name(name)}"

    def logical_name(self, function_name_or_arn: str) -> str:
        name = function_name_or_arn.split(":function:")[-1].split(":")[0]
        return name.removeprefix(FUNCTION_PREFIX)

    def _module(self, name: str) -> ModuleType:
        with self._lock:
            if name not in self._modules:
                spec = importlib.util.spec_from_file_location(f"batchlane_fn_{name}", handler_path(name))
                assert spec and spec.loader
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                self._modules[name] = module
            return self._modules[name]

    def intercept(self, name: str, interceptor: Callable[[Any, Callable[[Any], Invocation]], Invocation] | None) -> None:
        """Test seam: ``interceptor(event, call_real)`` runs instead of the handler (None removes it).

        Fault-injection tests use it to simulate what the emulator cannot: a Lambda that
        crashes after its side effect, a token stored only after the event arrived, ...
        """
        if interceptor is None:
            self._interceptors.pop(name, None)
        else:
            self._interceptors[name] = interceptor

    def has_handler(self, name: str) -> bool:
        return handler_path(name).exists()

    def invoke(self, function: str, event: Any) -> Invocation:
        name = self.logical_name(function)
        self.calls[name] = self.calls.get(name, 0) + 1
        interceptor = self._interceptors.get(name)
        if interceptor is not None:
            return interceptor(event, lambda e: self._run(name, e))
        return self._run(name, event)

    def _run(self, name: str, event: Any) -> Invocation:
        try:  # topology.function raises KeyError for a name the topology does not have
            context = LambdaContext(function_name=self.function_name(name), invoked_function_arn=self.arn(name), timeout_s=topology.function(name).timeout_s)
            with acting_as(name):  # its AWS calls are checked against its grants (batchlane.local.iam)
                result = self._module(name).handler(event, context)
            json.dumps(result)  # Lambda would fail to serialise it too
            return Invocation(result=result)
        except Exception as exc:  # a Lambda reports any exception as a function error
            log.debug("handler %s raised %s:\n%s", name, type(exc).__name__, traceback.format_exc())
            return Invocation(error_type=type(exc).__name__, error_message=str(exc))
