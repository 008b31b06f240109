"""The account's Lambda concurrency against what the deployment plans to use (issue 21, point 4).

Lambda GetAccountSettings answers ``AccountLimit.ConcurrentExecutions`` (the account's limit in the region)
and ``UnreservedConcurrentExecutions`` (what every function without a reservation shares). AWS keeps 100
unreserved, so reservations above limit - 100 fail the deploy; chunk slots above what the chunk processor
can run at once only turn into throttles (waited out, but slower): docs/deploy.md "Lambda concurrency".
"""

from __future__ import annotations

import json
from typing import Any

from batchlane_dev.cli.doctor.results import Check, failed, passed, warned
from batchlane_dev.cli.doctor.target import Target

UNRESERVED_MINIMUM = 100  # AWS Lambda guide, "Configuring reserved concurrency"


def check_lambda_concurrency(lambda_client: Any, target: Target) -> list[Check]:
    from batchlane_dev.cli.doctor.checks import error_text

    try:
        if target.outputs.get("LambdaAccountLimit"):  # only the offline stack has it (moto has no GetAccountSettings): its model answers
            limits = json.loads(target.outputs["LambdaAccountLimit"])
        else:
            limits = lambda_client.get_account_settings()["AccountLimit"]
    except Exception as exc:
        return [warned("lambda concurrency", f"GetAccountSettings: {error_text(exc)}")]
    limit, unreserved = int(limits["ConcurrentExecutions"]), int(limits["UnreservedConcurrentExecutions"])
    reserved = {str(k): int(v) for k, v in json.loads(target.lane.get("BATCHLANE_RESERVED_CONCURRENCY") or "{}").items()}
    slots = target.setting("BATCHLANE_CHUNK_SLOTS", 100)
    asked = sum(reserved.values())
    shown = ", ".join(f"{name} {n}" for name, n in sorted(reserved.items())) or "none"
    results = [passed("lambda concurrency", f"account limit {limit}, {unreserved} unreserved; reserved by this deployment: {shown}; chunk slots {slots}")]
    if asked > limit - UNRESERVED_MINIMUM:
        results.append(
            failed(
                "reserved concurrency",
                f"the deployment reserves {asked} but the account may reserve at most {max(0, limit - UNRESERVED_MINIMUM)} (its limit {limit}, {UNRESERVED_MINIMUM} kept unreserved): "
                "lower context reservedConcurrency, or ask AWS for a higher 'Concurrent executions' quota",
            )
        )
    room = reserved.get("chunk_processor") or unreserved
    if slots > room:
        results.append(
            warned(
                "chunk slots",
                f"chunkSlots {slots} is more than the {room} chunk processors the account can run at once: chunks will be throttled "
                f"(they wait and retry, no job fails) — deploy with -c chunkSlots={max(1, room // 2)} to leave room for the other functions",
            )
        )
    return results
