"""What a finished job cost and did, read back from the database and its chunk results."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from batchlane.claude import PageResult
from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.domain.savings import ledger_money
from batchlane.runtime import RuntimeServices


def job_report(svc: RuntimeServices, job_id: str) -> dict[str, Any]:
    job = job_repo.PgJobs(svc.db).get_job(job_id)
    if job is None:
        raise KeyError(job_id)
    rows = ledger.PgLedger(svc.db).ledger_rows(job_id)
    on_demand_cost = sum((r.cost_usd for r in rows if r.backend == "on_demand"), Decimal(0))
    batch_ledger_rows = [r for r in rows if r.backend == "batch"]  # the job's shares (or its own lane row, before the pool)
    batch_cost = sum((r.cost_usd for r in batch_ledger_rows), Decimal(0))
    pages_by_lane = {"batch": 0, "on_demand": 0, "blank": 0, "failed": 0, "truncated": 0}
    pages_on_demand_usd = Decimal(0)  # the on-demand spend each page's result carries: they add up to the chunk rows
    tiers: dict[str, dict[str, Any]] = {}  # on-demand pages per Bedrock service tier (default, flex)
    for chunk in job_repo.PgJobs(svc.db).get_chunks(job_id):
        if not chunk.result_key:
            continue
        for item in svc.store.get_json(chunk.result_key)["pages"]:
            page = PageResult.from_json(item)
            if page.status == "blank":
                pages_by_lane["blank"] += 1
            elif page.status == "failed":
                pages_by_lane["failed"] += 1
            if page.status == "truncated":
                pages_by_lane["truncated"] += 1
            pages_on_demand_usd += page.cost_usd
            if page.served_by == "batch":
                pages_by_lane["batch"] += 1
            elif page.served_by == "on_demand" and page.status != "failed":
                pages_by_lane["on_demand"] += 1
                tier = tiers.setdefault(page.service_tier or "default", {"pages": 0, "cost_usd": Decimal(0)})
                tier["pages"] += 1
                tier["cost_usd"] += page.cost_usd
    total = Decimal(job.total_cost_usd)
    lanes = lane_rows(svc, job_id)
    mine = svc.db.one(
        """SELECT CAST(COALESCE(sum(records), 0) AS integer) AS records, CAST(COALESCE(sum(accepted), 0) AS integer) AS accepted
           FROM batch_members WHERE job_id = CAST(:id AS uuid)""",
        id=job_id,
    ) or {"records": 0, "accepted": 0}
    last = lanes[-1] if lanes else {}
    figures = ledger_money((r.backend, r.cost_usd, r.metadata) for r in rows)  # domain/savings.py: the API's figures too
    return {
        "job_id": job_id,
        "status": job.status,
        "error_id": job.error_id,
        "error_message": job.error_message,
        "pages": job.total_pages,
        "pages_converted": job.pages_converted,
        "pages_failed": job.pages_failed,
        "pages_blank": pages_by_lane["blank"],
        "pages_truncated": pages_by_lane["truncated"],
        "markdown_key": job.markdown_key,
        "model_id": job.model_id,
        "total_cost_usd": float(total),
        "ledger_total_usd": float(on_demand_cost + batch_cost),
        "all_on_demand_cost_usd": float(figures.all_on_demand_usd),
        "saving_usd": float(figures.saving_usd),  # negative: a loss
        "saving_pct": round(float(figures.saving_usd / figures.all_on_demand_usd * 100), 2) if figures.all_on_demand_usd > 0 else 0.0,
        "on_demand": {
            "pages": pages_by_lane["on_demand"],
            "cost_usd": float(on_demand_cost),
            "pages_cost_usd": float(pages_on_demand_usd),
            "tiers": {name: {"pages": t["pages"], "cost_usd": float(t["cost_usd"])} for name, t in sorted(tiers.items())},
        },
        "batch": {
            "pages": pages_by_lane["batch"],
            "records": mine["records"],
            "accepted": mine["accepted"],
            "fallback": mine["records"] - mine["accepted"],
            "job_status": last.get("end_state"),
            "reason": last.get("reason") or job_lane_reason(svc, job_id),
            "cost_usd": float(batch_cost),
            "ledger_rows": len(batch_ledger_rows),
            "bedrock_jobs": len(lanes),
            "lane_members": [lane["member_count"] for lane in lanes],
        },
        "timings": _batch_timings(lanes),
    }


def lane_rows(svc: RuntimeServices, job_id: str) -> list[dict[str, Any]]:
    """The lanes (Bedrock jobs) that carried any chunk of the job, oldest first."""
    return svc.db.run(
        """SELECT * FROM lanes WHERE id IN (SELECT lane_row_id FROM batch_members WHERE job_id = CAST(:id AS uuid))
           ORDER BY id""",
        id=job_id,
    )


def job_lane_reason(svc: RuntimeServices, job_id: str) -> str | None:
    row = svc.db.one("SELECT lane_reason FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=job_id)
    return row["lane_reason"] if row else None


def _seconds(start: Any, end: Any) -> float | None:
    return round((end - start).total_seconds(), 3) if start and end else None


def _span(lanes: list[dict[str, Any]], start: str, end: str) -> float | None:
    """From the first lane's ``start`` to the last lane's ``end`` (one lane: that lane's own span)."""
    starts = [lane[start] for lane in lanes if lane.get(start)]
    ends = [lane[end] for lane in lanes if lane.get(end)]
    return _seconds(min(starts), max(ends)) if starts and ends else None


def _batch_timings(lanes: list[dict[str, Any]]) -> dict[str, float | None]:
    """The lanes that carried the document: prepare, collect, and from the last terminal event to the resume."""
    return {
        "prepare_s": _span(lanes, "prepare_started_at", "prepared_at"),
        "collect_s": _span(lanes, "collect_started_at", "closed_at"),
        "event_to_resume_s": _span(lanes, "terminal_seen_at", "resumed_at"),
    }
