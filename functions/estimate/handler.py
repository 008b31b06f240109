"""estimate: {"estimateId"} runs a dry run's estimate (the file or folder it names) and writes its answer;
{"estimateId", "failed": true, "error"} ends one whose tries ran out (the state machine's EstimateFailed)."""

from typing import Any

from batchlane.api.estimates import fail_estimate, run_estimate
from batchlane.handlers import EstimateRef, lambda_handler, parse
from batchlane.runtime import services


@lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    ref = parse(event, EstimateRef)
    if ref.failed:
        return fail_estimate(services(), str(ref.estimateId), ref.error)
    return run_estimate(services(), str(ref.estimateId))
