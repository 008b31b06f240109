"""batch_wait: store the WaitForBatch task token on the lane, and wake the executions waiting on a row.

An event that arrives before the token is stored still ends the wait: the token append and
the status record lock the same row, so whichever commits second sees the other.
"""

from __future__ import annotations

from typing import Any

from batchlane.domain.status import TERMINAL_BEDROCK_STATUSES
from batchlane.observability import logger
from batchlane.ports import Services
from batchlane.rows import Lane


def wake(svc: Services, row: Lane, status: str) -> int:
    """Send task success to every execution waiting on this row; how many were woken."""
    woken = 0
    for token in row.task_tokens or []:
        if svc.workflows.send_task_success(token, {"status": status}):
            woken += 1
    return woken


def register_wait(svc: Services, lane_id: str, token: str) -> dict[str, Any]:
    """Store the token; if the terminal status already arrived (early event), end the wait now."""
    row = svc.uow().lanes.add_task_token(lane_id, token)
    if row is None:
        svc.workflows.send_task_success(token, {"status": "NoLane"})
        return {"waiting": False}
    status = row.bedrock_status
    if row.state == "closed" or status in TERMINAL_BEDROCK_STATUSES:
        svc.workflows.send_task_success(token, {"status": status or "Closed"})
        logger.info("batch wait ended at once", lane_id=lane_id, status=status)
        return {"waiting": False, "status": status}
    return {"waiting": True, "status": status}
