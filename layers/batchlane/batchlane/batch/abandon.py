"""batch_abandon: leave the lane without results (skip, prepare or submit failed, collect failing for good)."""

from __future__ import annotations

from typing import Any

from batchlane.batch.billing import billed_from_bedrock_manifest, close_and_bill, ledger_metadata
from batchlane.batch.names import bedrock_job_name
from batchlane.batch.stop import stop_batch_job
from batchlane.batch.submit import bedrock_status, output_uri_for
from batchlane.domain import status as st
from batchlane.observability import logger
from batchlane.ports import Services
from batchlane.rows import Lane

SKIP_REASONS = frozenset({"too_few_records", "too_many_records", "job_too_large", "mixed_models", "not_preparing", "members_left"})


def abandon(svc: Services, lane_id: str, *, reason: str, error: dict[str, Any] | None = None) -> dict[str, Any]:
    """Leave the lane without results: skip, prepare error, or collect failing for good.

    A submitted Bedrock job is stopped. Once it has ended it is billed at once from its
    own manifest.json.out; while it is still running (or Stopping) the row becomes
    ``stopping`` and the job resumes on-demand now: the bill follows at the terminal
    status (:func:`settle_stopping`). A submit that failed after Bedrock created the job
    adopts that job first, so it is stopped and billed too.
    """
    lanes = svc.uow().lanes
    row = lanes.get_row(lane_id)
    if row is None:
        return {"closed": False}
    detail = (error or {}).get("Error")
    if row.state == "preparing" and reason == "submit_failed":
        row = adopt_created_job(svc, lane_id) or row
    if row.state == "preparing":
        left_lane = reason in SKIP_REASONS or reason.startswith("job_")  # job_cancelled, job_pending: the user moved it
        end_state = "skipped" if left_lane else "prepare_failed"
        closed = lanes.close(lane_id, st.leave_before_submit(), end_state=end_state, reason=f"{reason}: {detail}" if detail else reason)
        logger.info("batch lane left before submit", lane_id=lane_id, reason=reason, error=detail)
        return {"closed": closed is not None, "endState": end_state}
    if row.state == "submitted":
        stop_batch_job(svc, lane_id, reason=reason)
        status = bedrock_status(svc.batch_jobs, row.arn)
        lanes.record_status(row.arn, status)
        if status not in st.TERMINAL_BEDROCK_STATUSES:
            lanes.mark_stopping(lane_id, reason=reason)
            logger.warning(
                "batch lane left while its Bedrock job stops; billed at its terminal status", lane_id=lane_id, reason=reason, status=status, error=detail
            )
            return {"closed": False, "stopping": True, "endState": "stopping"}
        billed = billed_from_bedrock_manifest(svc, row)
        usage = billed.usage
        model_id = row.model_id
        cost = svc.prices.cost(model_id, usage, batch=True)
        metadata = ledger_metadata(
            row, reason, records=row.record_count or 0, accepted=0, fallback=row.record_count or 0, partial=True, error=detail, **billed.metadata()
        )
        won = close_and_bill(
            svc,
            row,
            end_state=reason,
            accepted=0,
            fallback=row.record_count or 0,
            usage=usage,
            cost=cost,
            model_id=model_id,
            metadata=metadata,
            reason=reason,
        )
        logger.warning("batch lane abandoned after submit", lane_id=lane_id, reason=reason, error=detail, cost_usd=str(cost), won=won)
        return {"closed": True, "won": won, "endState": reason}
    return {"closed": True, "won": False, "endState": row.end_state}


def adopt_created_job(svc: Services, lane_id: str) -> Lane | None:
    """A Bedrock job created under this lane's name (a submit that failed after creating it, or a prepare
    stuck past its create): it bills, so the row adopts it, to be collected or stopped. None if there is none."""
    existing = svc.batch_jobs.find_by_name(bedrock_job_name(lane_id))
    if not existing:
        return None
    logger.warning("a Bedrock job created for this lane was adopted", lane_id=lane_id, bedrock_job_arn=existing.arn)
    return svc.uow().lanes.mark_submitted(
        lane_id,
        arn=existing.arn,
        name=existing.name,
        output_uri=output_uri_for(svc, lane_id),
        deadline_hours=svc.settings.batch_deadline_hours,
    )
