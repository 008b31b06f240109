"""batch_callback: the Bedrock state-change event ends the wait (push, no polling).

Duplicate, late and unknown events are harmless: a terminal status is never overwritten,
and a token already used just answers "no".
"""

from __future__ import annotations

from typing import Any

from batchlane.batch.billing import settle_stopping
from batchlane.batch.wait import wake
from batchlane.domain.status import TERMINAL_BEDROCK_STATUSES
from batchlane.observability import logger
from batchlane.ports import Services


def on_state_change(svc: Services, detail: dict[str, Any]) -> dict[str, Any]:
    """EventBridge target for aws.bedrock "Batch Inference Job State Change"."""
    arn, status = detail.get("batchJobArn"), detail.get("status")
    if not arn or not status:
        logger.warning("batch event without arn or status ignored", detail_keys=sorted(detail))
        return {"known": False}
    row = svc.uow().lanes.record_status(arn, status)
    if row is None:
        logger.info("batch event for a job we do not track", bedrock_job_arn=arn, status=status)
        return {"known": False}
    terminal = row.bedrock_status in TERMINAL_BEDROCK_STATUSES
    woken = wake(svc, row, row.bedrock_status or status) if terminal else 0
    billed = bool(settle_stopping(svc, row)["won"]) if terminal and row.state == "stopping" else False
    logger.info("batch event", lane_id=row.lane_id, status=status, woken=woken, billed_stopped=billed)
    return {"known": True, "status": row.bedrock_status, "woken": woken, "billedStopped": billed}
