"""The one batch ledger row: written in the same transaction as the guarded close of the batch row.

Of any number of racing closers (collect, the callback, the sweeper, abandon) exactly one
wins the guarded move and bills. A ``stopping`` row is billed only at its Bedrock job's
terminal status: manifest.json.out exists only then, so the bill is never $0 by mistake.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from batchlane.batch import rows
from batchlane.batch.names import job_id_from_arn
from batchlane.batch.submit import bedrock_status
from batchlane.db import ledger
from batchlane.domain.cost import BATCH_PRICE_MULTIPLIER, Usage
from batchlane.domain.errors import NotFound
from batchlane.observability import logger
from batchlane.ports import ObjectStoreError
from batchlane.runtime import Services


def output_prefix(row: dict[str, Any], bucket: str) -> str:
    uri = row["output_uri"] or ""
    prefix = uri.removeprefix(f"s3://{bucket}/")
    if not prefix.endswith("/"):
        prefix += "/"
    return f"{prefix}{job_id_from_arn(row['bedrock_job_arn'])}/"


def summary(row: dict[str, Any], *, won: bool) -> dict[str, Any]:
    return {
        "closed": True,
        "won": won,
        "endState": row["end_state"],
        "accepted": row["accepted_count"] or 0,
        "fallback": row["fallback_count"] or 0,
        "costUsd": str(row["cost_usd"] or 0),
    }


def ledger_metadata(row: dict[str, Any], end_state: str, **counts: Any) -> dict[str, Any]:
    """What the one batch ledger row says about its batch job."""
    return {"batch": True, "batchMultiplier": float(BATCH_PRICE_MULTIPLIER), "jobArn": row["bedrock_job_arn"], "endState": end_state, **counts}


def close_and_bill(
    svc: Services,
    job_id: str,
    row: dict[str, Any],
    *,
    end_state: str,
    accepted: int,
    fallback: int,
    usage: Usage,
    cost: Decimal,
    model_id: str,
    metadata: dict[str, Any],
    reason: str | None = None,
    from_state: str = "submitted",
) -> bool:
    with svc.db.transaction() as tx:
        closed = rows.close(tx, job_id, from_states=(from_state,), end_state=end_state, reason=reason, accepted=accepted, fallback=fallback, cost_usd=cost)
        if closed is None:
            return False
        ledger.add_batch_cost(
            tx,
            job_id=job_id,
            batch_row_id=int(closed["id"]),
            model_id=model_id,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=cost,
            metadata=metadata,
        )
        # A batch job stopped by "process now" or a cancel can close after the on-demand
        # conversion already settled: its total must still equal the ledger.
        tx.run(
            """UPDATE large_conversion_jobs SET total_cost_usd = (SELECT COALESCE(SUM(cost_usd), 0) FROM cost_ledger WHERE job_id = CAST(:id AS uuid)),
                   updated_at = now()
               WHERE id = CAST(:id AS uuid) AND status IN ('completed', 'failed')""",
            id=job_id,
        )
        # ... and so must the funds hold it settled (the money the job is known to have cost).
        tx.run(
            """UPDATE funds_holds SET settled_usd = (SELECT COALESCE(SUM(cost_usd), 0) FROM cost_ledger WHERE job_id = CAST(:id AS uuid)),
                   updated_at = now()
               WHERE job_id = CAST(:id AS uuid) AND outcome = 'settled'""",
            id=job_id,
        )
        # A job that left the lane before this bill (stopping, process now) carries it too,
        # so its total still reads "chunk costs + the batch job's cost".
        tx.run(
            """UPDATE large_conversion_jobs SET options = COALESCE(options, '{}'::jsonb) || jsonb_build_object('_batchCostUsd', CAST(:cost AS text))
               WHERE id = CAST(:id AS uuid) AND status <> 'waiting_batch'""",
            id=job_id,
            cost=str(cost),
        )
        return True


def settle_stopping(svc: Services, row: dict[str, Any]) -> dict[str, Any]:
    """Bill a ``stopping`` row once its Bedrock job has ended: manifest.json.out exists now.

    Called by the state-change callback, the sweeper, and collect; the guarded
    stopping → closed move lets exactly one of them write the ledger row.
    """
    job_id, arn = str(row["job_id"]), row["bedrock_job_arn"]
    status = row["bedrock_status"]
    if status not in rows.TERMINAL_BEDROCK_STATUSES:
        status = bedrock_status(svc.batch_jobs, arn)
        row = rows.record_status(svc.db, arn, status) or row
    if status not in rows.TERMINAL_BEDROCK_STATUSES:
        return {"closed": False, "won": False, "endState": "stopping", "accepted": 0, "fallback": row["fallback_count"] or 0, "costUsd": "0"}
    usage = billed_from_bedrock_manifest(svc, row)
    model_id = row["model_id"]
    cost = svc.prices.cost(model_id, usage, batch=True)
    records = row["record_count"] or 0
    metadata = ledger_metadata(row, status, records=records, accepted=0, fallback=records, partial=True, leftLane=row["reason"])
    won = close_and_bill(
        svc, job_id, row, end_state=status, accepted=0, fallback=records, usage=usage, cost=cost, model_id=model_id, metadata=metadata, from_state="stopping"
    )
    if won:
        logger.info("stopped batch job billed", job_id=job_id, end_state=status, reason=row["reason"], cost_usd=str(cost))
    final = rows.get_row(svc.db, job_id)
    assert final is not None
    return summary(final, won=won)


def billed_from_bedrock_manifest(svc: Services, row: dict[str, Any]) -> Usage:
    try:
        data = svc.store.get_json(output_prefix(row, svc.store.bucket) + "manifest.json.out")
        return Usage(int(data.get("inputTokenCount", 0)), int(data.get("outputTokenCount", 0)))
    except (NotFound, ObjectStoreError, ValueError, KeyError, OSError):
        return Usage()
