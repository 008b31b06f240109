"""The one place Powertools' logger, tracer and metrics are made."""

from __future__ import annotations

import os

from aws_lambda_powertools import Logger, Metrics, Tracer

os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "batchlane")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Batchlane")
# Outside Lambda (offline stack, CLI, tests) there is no X-Ray daemon: tracing is off.
if not os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")

logger = Logger()
tracer = Tracer()
metrics = Metrics()
