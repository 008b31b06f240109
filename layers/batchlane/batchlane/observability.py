"""The one place Powertools' logger, tracer and metrics are made."""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider

os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "batchlane")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Batchlane")
# Outside Lambda (offline stack, CLI, tests) there is no X-Ray daemon: tracing is off.
if not os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")


class _Metrics(AmazonCloudWatchEMFProvider):
    """Powertools' EMF metrics; where they are off (offline, many handlers in one process) a flush drops
    the set instead of keeping it: Powertools would keep it, warn on every empty flush, and print it to
    stdout anyway once one metric holds 100 values (in the middle of `make bench`'s figures)."""

    def flush_metrics(self, raise_on_empty_metrics: bool = False) -> None:
        if is_metrics_disabled():
            self.clear_metrics()
            return
        super().flush_metrics(raise_on_empty_metrics=raise_on_empty_metrics)

    def add_metric(self, *args: Any, **kwargs: Any) -> None:
        if not is_metrics_disabled():
            super().add_metric(*args, **kwargs)


logger = Logger()
metrics = Metrics(provider=_Metrics())

if TYPE_CHECKING:
    tracer: Tracer
_tracer_lock = threading.Lock()


def __getattr__(name: str) -> Any:
    """``tracer``, made on first use. Making a Tracer imports the X-Ray SDK and botocore (~0.3 s of CPU, even with
    tracing off), and the PDF modules import this module for ``logger`` alone: pdf.bounded's fork server, which
    every Lambda environment starts for its first bounded PDF operation, then preloads only what the PDF work needs."""
    if name != "tracer":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _tracer_lock:
        made = globals().get("tracer")
        if made is None:
            made = globals()["tracer"] = Tracer()
        return made
