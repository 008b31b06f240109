"""The one batch ledger row: written in the same transaction as the guarded close of the batch row.

Of any number of racing closers (collect, the callback, the sweeper, abandon) exactly one
wins the guarded move and bills. A ``stopping`` row is billed only at its Bedrock job's
terminal status: manifest.json.out exists only then, so the bill is never $0 by mistake.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from batchlane.batch.names import job_id_from_arn
from batchlane.batch.submit import bedrock_status
from batchlane.db import batch_rows as rows
from batchlane.db import ledger
from batchlane.db.batch_rows import BatchRow
from batchlane.domain import status as st
from batchlane.domain.cost import BATCH_PRICE_MULTIPLIER, Usage
from batchlane.domain.errors import NotFound
from batchlane.domain.status import Transition
from batchlane.observability import logger
from batchlane.ports import ObjectStoreError
from batchlane.runtime import Services


def output_prefix(row: BatchRow, bucket: str) -> str:
    uri = row.output_uri or ""
    prefix = uri.removeprefix(f"s3://{bucket}/")
    if not prefix.endswith("/"):
        prefix += "/"
    return f"{prefix}{job_id_from_arn(row.arn)}/"


def summary(row: BatchRow, *, won: bool) -> dict[str, Any]:
    return {
        "closed": True,
        "won": won,
        "endState": row.end_state,
        "accepted": row.accepted_count or 0,
        "fallback": row.fallback_count or 0,
        "costUsd": str(row.cost_usd or 0),
    }


def ledger_metadata(row: BatchRow, end_state: str, **counts: Any) -> dict[str, Any]:
    """What the one batch ledger row says about its batch job."""
    return {"batch": True, "batchMultiplier": float(BATCH_PRICE_MULTIPLIER), "jobArn": row.bedrock_job_arn, "endState": end_state, **counts}


def close_and_bill(
    svc: Services,
    job_id: str,
    row: BatchRow,
    *,
    end_state: str,
    accepted: int,
    fallback: int,
    usage: Usage,
    cost: Decimal,
    model_id: str,
    metadata: dict[str, Any],
    reason: str | None = None,
    move: Transition | None = None,
) -> bool:
    """The guarded close along ``move`` (default: submitted → closed) and, for whoever wins it, the one ledger row."""
    with svc.db.transaction() as tx:
        closed = rows.close(tx, job_id, move or st.close(), end_state=end_state, reason=reason, accepted=accepted, fallback=fallback, cost_usd=cost)
        if closed is None:
            return False
        ledger.add_batch_cost(
            tx,
            job_id=job_id,
            batch_row_id=int(closed.id),
            model_id=model_id,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=cost,
            metadata=metadata,
        )
        ledger.carry_late_batch_cost(tx, job_id, cost)
        return True


def settle_stopping(svc: Services, row: BatchRow) -> dict[str, Any]:
    """Bill a ``stopping`` row once its Bedrock job has ended: manifest.json.out exists now.

    Called by the state-change callback, the sweeper, and collect; the guarded
    stopping → closed move lets exactly one of them write the ledger row.
    """
    job_id, arn = str(row.job_id), row.arn
    status = row.bedrock_status
    if status not in rows.TERMINAL_BEDROCK_STATUSES:
        status = bedrock_status(svc.batch_jobs, arn)
        row = rows.record_status(svc.db, arn, status) or row
    if status not in rows.TERMINAL_BEDROCK_STATUSES:
        return {"closed": False, "won": False, "endState": "stopping", "accepted": 0, "fallback": row.fallback_count or 0, "costUsd": "0"}
    usage = billed_from_bedrock_manifest(svc, row)
    model_id = row.model_id
    cost = svc.prices.cost(model_id, usage, batch=True)
    records = row.record_count or 0
    metadata = ledger_metadata(row, status, records=records, accepted=0, fallback=records, partial=True, leftLane=row.reason)
    won = close_and_bill(
        svc,
        job_id,
        row,
        end_state=status,
        accepted=0,
        fallback=records,
        usage=usage,
        cost=cost,
        model_id=model_id,
        metadata=metadata,
        move=st.settle_stopping(),
    )
    if won:
        logger.info("stopped batch job billed", job_id=job_id, end_state=status, reason=row.reason, cost_usd=str(cost))
    final = rows.get_row(svc.db, job_id)
    assert final is not None
    return summary(final, won=won)


def billed_from_bedrock_manifest(svc: Services, row: BatchRow) -> Usage:
    try:
        data = svc.store.get_json(output_prefix(row, svc.store.bucket) + "manifest.json.out")
        return Usage(int(data.get("inputTokenCount", 0)), int(data.get("outputTokenCount", 0)))
    except (NotFound, ObjectStoreError, ValueError, KeyError, OSError):
        return Usage()
