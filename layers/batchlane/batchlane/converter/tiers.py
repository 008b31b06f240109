"""The Flex lane: send a request at Bedrock's Flex service tier, and at default when Flex sheds it.

Sits inside the governed transport like the form fallback, so the resend at default uses the same
limiter slot: the on-demand quota is shared across tiers (docs/architecture.md "Service tiers").
"""

from __future__ import annotations

import threading

from batchlane.converter.request import PageRequest
from batchlane.converter.transports import ModelAnswer, ModelCallError, Transport
from batchlane.domain import service_tier as tiers
from batchlane.observability import logger


class FlexTransport:
    """Every request goes at Flex first; a throttle or ServiceUnavailable on Flex sends the same
    request at the default tier. A ValidationException naming the tier (Flex refused for the model)
    also falls back, and Flex is not tried again in this process."""

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
            if exc.possibly_billed is not None or not (exc.code in tiers.FLEX_SHED_CODES or _tier_refused(exc)):
                raise
            with self._lock:
                self.fell_back += 1
                self._refused = self._refused or _tier_refused(exc)
            logger.info("flex not served; sending at the default tier", model_id=request.model_id, code=exc.code)
            return self._inner.send(request.with_tier(None))


def _tier_refused(exc: ModelCallError) -> bool:
    return exc.code == "ValidationException" and "tier" in exc.message.lower()
