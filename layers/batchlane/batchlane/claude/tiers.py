"""The Flex lane: send a request at Bedrock's Flex service tier, and at default when Flex sheds it.

Sits inside the governed transport like the form fallback, so the resend at default uses the same
limiter slot: the on-demand quota is shared across tiers (docs/architecture.md "Service tiers").
"""

from __future__ import annotations

import threading

from batchlane.claude.request import PageRequest
from batchlane.claude.transports import ModelAnswer, ModelCallError, Transport
from batchlane.domain import service_tier as tiers
from batchlane.observability import logger


class FlexTransport:
    """Every request goes at Flex first; a throttle or ServiceUnavailable on Flex sends the same
    request at the default tier. A ValidationException on Flex is sent at default too (AWS does not
    publish the wording of a tier refusal): when default then answers, Flex was refused for the
    model and is not tried again in this process; when default fails as well, its error stands."""

    def __init__(self, inner: Transport) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self._refused = False
        self.fell_back = 0

    def send(self, request: PageRequest) -> ModelAnswer:
        with self._lock:
            refused = self._refused
        if refused:
            return self._inner.send(request.with_tier(None))
        try:
            return self._inner.send(request.with_tier(tiers.FLEX))
        except ModelCallError as exc:
            invalid = exc.code == "ValidationException"
            if exc.possibly_billed is not None or not (exc.code in tiers.FLEX_SHED_CODES or invalid):
                raise
            with self._lock:
                self.fell_back += 1
            logger.info("flex not served; sending at the default tier", model_id=request.model_id, code=exc.code)
            answer = self._inner.send(request.with_tier(None))
            if invalid:
                with self._lock:
                    self._refused = True
                logger.warning("flex refused for the model; default tier from now on", model_id=request.model_id, detail=exc.message[:200])
            return answer
