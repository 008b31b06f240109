"""The one batch ledger row per Bedrock job, and each member's share of it: written in the same
transaction as the guarded close of the lane.

Of any number of racing closers (collect, the callback, the sweeper, abandon) exactly one
wins the guarded move and bills. A ``stopping`` row is billed only at its Bedrock job's
terminal status: manifest.json.out exists only then, so the bill is never $0 by mistake.
A manifest that is missing or unreadable all the same is never read as zero usage: the usage in
the output records is billed instead, the ledger row says ``estimated``, and a metric alarms.
Shares follow each member job's own tokens where collect read them from its records (issue 21.5:
one member's dense, long-answer pages are not paid by the others), else (a stopped or abandoned
job billed from its manifest) the records it sent; a member that left still pays for what it
sent. They add up to the lane's row exactly (domain/pool.split_by_weight).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from batchlane.batch.names import job_id_from_arn
from batchlane.batch.submit import bedrock_status
from batchlane.claude.transports import answer_from_messages
from batchlane.domain import status as st
from batchlane.domain.cost import BATCH_PRICE_MULTIPLIER, PriceTable, Usage
from batchlane.domain.errors import NotFound
from batchlane.domain.pool import MICRO, split_by_weight
from batchlane.domain.savings import BATCH_SERVED_KEY
from batchlane.domain.status import Transition
from batchlane.observability import logger, metrics
from batchlane.ports import LedgerRepository, ObjectStoreError, Services, UnitOfWork
from batchlane.rows import Lane, Member


def output_prefix(row: Lane, bucket: str) -> str:
    uri = row.output_uri or ""
    prefix = uri.removeprefix(f"s3://{bucket}/")
    if not prefix.endswith("/"):
        prefix += "/"
    return f"{prefix}{job_id_from_arn(row.arn)}/"


def summary(row: Lane, *, won: bool) -> dict[str, Any]:
    return {
        "closed": True,
        "won": won,
        "endState": row.end_state,
        "accepted": row.accepted_count or 0,
        "fallback": row.fallback_count or 0,
        "costUsd": str(row.cost_usd or 0),
    }


def ledger_metadata(row: Lane, end_state: str, **counts: Any) -> dict[str, Any]:
    """What the one batch ledger row says about its batch job."""
    return {"batch": True, "batchMultiplier": float(BATCH_PRICE_MULTIPLIER), "jobArn": row.bedrock_job_arn, "endState": end_state, **counts}


def close_and_bill(
    svc: Services,
    row: Lane,
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
    accepted_by_chunk: dict[tuple[str, int], int] | None = None,
    then: Callable[[UnitOfWork], None] | None = None,
    usage_by_job: dict[str, Usage] | None = None,
    prices: PriceTable | None = None,
    served_at_on_demand: dict[str, Decimal] | None = None,
) -> bool:
    """The guarded close along ``move`` (default: submitted → closed) and, for whoever wins it, the one
    ledger row and the members' shares (each carrying what its accepted answers cost on-demand: domain/savings.py)."""
    with svc.uow() as uow:
        closed = uow.lanes.close(row.lane_id, move or st.close(), end_state=end_state, reason=reason, accepted=accepted, fallback=fallback, cost_usd=cost)
        if closed is None:
            return False
        uow.lanes.record_accepted(closed.id, accepted_by_chunk or {})
        uow.ledger.add_batch_cost(
            job_id=closed.job_id,  # a lane from before the pool belongs to its one job
            lane_row_id=int(closed.id),
            model_id=model_id,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=cost,
            metadata={
                **metadata,
                "laneId": closed.lane_id,
                "members": closed.member_count,
                **(
                    {BATCH_SERVED_KEY: str(served_at_on_demand[closed.job_id])}
                    if closed.job_id and served_at_on_demand and closed.job_id in served_at_on_demand
                    else {}
                ),
            },
        )
        members = uow.lanes.members(closed.id)
        if closed.job_id is None:
            bill_members(
                uow.ledger,
                closed,
                members,
                usage=usage,
                cost=cost,
                model_id=model_id,
                usage_by_job=usage_by_job,
                prices=prices,
                served_at_on_demand=served_at_on_demand,
            )
        for job_id in sorted({m.job_id for m in members} | ({closed.job_id} if closed.job_id else set())):
            uow.ledger.carry_late_batch_cost(job_id)
        if then is not None:
            then(uow)  # e.g. the retry batch, born in the same transaction as the close (nothing is stranded between)
        return True


def bill_members(
    ledger: LedgerRepository,
    row: Lane,
    members: list[Member],
    *,
    usage: Usage,
    cost: Decimal,
    model_id: str,
    usage_by_job: dict[str, Usage] | None = None,
    prices: PriceTable | None = None,
    served_at_on_demand: dict[str, Decimal] | None = None,
) -> None:
    """Each member job's share of the lane's row: its own tokens when ``usage_by_job`` covers the lane's
    usage (the cost split by each one's own price of them), else by the records it sent."""
    records: dict[str, int] = {}
    for m in members:
        records[m.job_id] = records.get(m.job_id, 0) + (m.records if m.records is not None else 0)
    own = {job_id: (usage_by_job or {}).get(job_id, Usage()) for job_id in records}
    if usage_by_job and prices is not None and sum(own.values(), Usage()) == usage:
        weights = {job_id: int(prices.cost(model_id, u, batch=True) / MICRO) for job_id, u in own.items()}
        costs = split_by_weight(cost, weights)
        inputs = {job_id: Decimal(u.input_tokens) for job_id, u in own.items()}
        outputs = {job_id: Decimal(u.output_tokens) for job_id, u in own.items()}
    else:
        costs = split_by_weight(cost, records)
        inputs = split_by_weight(Decimal(usage.input_tokens), records, unit=Decimal(1))
        outputs = split_by_weight(Decimal(usage.output_tokens), records, unit=Decimal(1))
    weights = records
    for job_id, share in costs.items():
        ledger.add_batch_share(
            job_id=job_id,
            lane_row_id=int(row.id),
            model_id=model_id,
            input_tokens=int(inputs[job_id]),
            output_tokens=int(outputs[job_id]),
            cost_usd=share,
            metadata={
                "batch": True,
                "share": True,
                "laneId": row.lane_id,
                "jobArn": row.bedrock_job_arn,
                "records": weights[job_id],
                **({BATCH_SERVED_KEY: str(served_at_on_demand[job_id])} if served_at_on_demand and job_id in served_at_on_demand else {}),
            },
        )


def settle_stopping(svc: Services, row: Lane) -> dict[str, Any]:
    """Bill a ``stopping`` row once its Bedrock job has ended: manifest.json.out exists now.

    Called by the state-change callback, the sweeper, and collect; the guarded
    stopping → closed move lets exactly one of them write the ledger row.
    """
    arn = row.arn
    status = row.bedrock_status
    lanes = svc.uow().lanes
    if status not in st.TERMINAL_BEDROCK_STATUSES:
        status = bedrock_status(svc.batch_jobs, arn)
        row = lanes.record_status(arn, status) or row
    if status not in st.TERMINAL_BEDROCK_STATUSES:
        return {"closed": False, "won": False, "endState": "stopping", "accepted": 0, "fallback": row.fallback_count or 0, "costUsd": "0"}
    billed = billed_from_bedrock_manifest(svc, row)
    usage = billed.usage
    model_id = row.model_id
    cost = svc.prices.cost(model_id, usage, batch=True)
    records = row.record_count or 0
    metadata = ledger_metadata(row, status, records=records, accepted=0, fallback=records, partial=True, leftLane=row.reason, **billed.metadata())
    won = close_and_bill(
        svc,
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
        logger.info("stopped batch job billed", lane_id=row.lane_id, end_state=status, reason=row.reason, cost_usd=str(cost))
    final = lanes.get_row(row.lane_id)
    assert final is not None
    return summary(final, won=won)


@dataclass(frozen=True)
class BilledUsage:
    """The tokens a stopped or abandoned Bedrock job bills, and where they were read."""

    usage: Usage
    source: str  # "manifest" (Bedrock's own count) or "outputRecords" (the estimate)
    problem: str | None = None  # why the manifest could not be used

    @property
    def estimated(self) -> bool:
        return self.source != "manifest"

    def metadata(self) -> dict[str, Any]:
        """The ledger row's word on it: an estimate says so, and why."""
        found: dict[str, Any] = {"usageSource": self.source, "estimated": self.estimated}
        if self.problem:
            found["estimateReason"] = self.problem
        return found


def billed_from_bedrock_manifest(svc: Services, row: Lane) -> BilledUsage:
    """The job's usage from manifest.json.out; if that is missing or unreadable, the usage the output
    records carry (a lower bound: a record that failed may bill without saying so), logged and counted
    (metric ``BatchBillEstimated``, alarmed in infra/monitoring.py) so a $0 bill never passes in silence."""
    prefix = output_prefix(row, svc.store.bucket)
    try:
        data = svc.store.get_json(prefix + "manifest.json.out")
        return BilledUsage(Usage(int(data["inputTokenCount"]), int(data["outputTokenCount"])), "manifest")
    except (NotFound, ObjectStoreError, ValueError, KeyError, TypeError, AttributeError, OSError) as exc:
        problem = f"manifest.json.out unreadable: {type(exc).__name__}"
    usage = usage_in_output_records(svc, prefix)
    logger.warning(
        "batch manifest unreadable; billed from the output records (estimated)",
        lane_id=row.lane_id,
        bedrock_job_arn=row.bedrock_job_arn,
        problem=problem,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
    )
    metrics.add_metric(name="BatchBillEstimated", unit="Count", value=1)
    return BilledUsage(usage, "outputRecords", problem)


def usage_in_output_records(svc: Services, prefix: str) -> Usage:
    """The usage every ``.jsonl.out`` record with output reports, each record id once (as collect bills)."""
    total, seen = Usage(), set[str]()
    for key in sorted(k for k in svc.store.list_keys(prefix) if k.endswith(".jsonl.out")):
        try:
            for line in svc.store.iter_lines(key):
                try:
                    record = json.loads(line)
                    output, record_id = record.get("modelOutput"), record["recordId"]
                except (ValueError, KeyError, TypeError, AttributeError):
                    continue
                if isinstance(output, dict) and record_id not in seen:
                    seen.add(record_id)
                    total = total + answer_from_messages(output, served_by="batch").usage
        except (NotFound, ObjectStoreError, OSError) as exc:
            logger.warning("batch output file unreadable while estimating a bill", key=key, error=type(exc).__name__)
    return total
