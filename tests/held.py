"""Holding a function's invocations on the offline stack until a test releases them."""

from __future__ import annotations

import threading
from typing import Any


class HeldInvocations:
    """Every invocation of ``function`` waits (up to 60 s) until released: the job stays where it is meanwhile."""

    def __init__(self, stack: Any, function: str) -> None:
        self.entered, self.released, self._stack, self._function = threading.Event(), threading.Event(), stack, function

        def hold(event: Any, call_real: Any) -> Any:
            self.entered.set()
            self.released.wait(60)
            return call_real(event)

        stack.registry.intercept(function, hold)

    def __enter__(self) -> HeldInvocations:
        return self

    def __exit__(self, *exc: object) -> None:
        self.released.set()
        self._stack.registry.intercept(self._function, None)
