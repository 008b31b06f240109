"""The one place Powertools' logger, tracer and metrics are made."""

from __future__ import annotations

import os
from typing import Any

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
tracer = Tracer()
metrics = Metrics(provider=_Metrics())
