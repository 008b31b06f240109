"""The on-demand path: multi-page requests with halving, a global limit with leases,
backoff with full jitter, and the coverage re-ask. See docs/ondemand.md."""

from batchlane.ondemand.convert_pages import GroupConverter, Spend
from batchlane.ondemand.coverage import CoverageRule, build_reask_request, text_layer
from batchlane.ondemand.governed import BackoffPolicy, GovernedTransport
from batchlane.ondemand.planner import PlannedPage, RequestPlan
from batchlane.ports import Aborted

__all__ = [
    "Aborted",
    "BackoffPolicy",
    "CoverageRule",
    "GovernedTransport",
    "GroupConverter",
    "PlannedPage",
    "RequestPlan",
    "Spend",
    "build_reask_request",
    "text_layer",
]
