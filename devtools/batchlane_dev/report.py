"""What a finished job cost and did, read back from the database and its chunk results."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from batchlane.converter import PageResult
from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.runtime import Services


def job_report(svc: Services, job_id: str) -> dict[str, Any]:
    job = job_repo.get_job(svc.db, job_id)
    if job is None:
        raise KeyError(job_id)
    rows = ledger.ledger_rows(svc.db, job_id)
    on_demand_cost = sum((Decimal(r["cost_usd"]) for r in rows if r["source"] == "chunk"), Decimal(0))
    batch_rows = [r for r in rows if r["source"] == "batch"]
    batch_cost = sum((Decimal(r["cost_usd"]) for r in batch_rows), Decimal(0))
    pages_by_lane = {"batch": 0, "on_demand": 0, "blank": 0, "failed": 0, "truncated": 0}
    full_price_of_batch_pages = Decimal(0)
    for chunk in job_repo.get_chunks(svc.db, job_id):
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
            if page.served_by == "batch":
                pages_by_lane["batch"] += 1
                full_price_of_batch_pages += svc.prices.cost(job.model_id, page.usage)
            elif page.served_by == "on_demand" and page.status != "failed":
                pages_by_lane["on_demand"] += 1
    total = Decimal(job.total_cost_usd)
    batch_row = svc.db.one("SELECT * FROM conversion_batch_jobs WHERE job_id = CAST(:id AS uuid)", id=job_id)
    all_on_demand = on_demand_cost + full_price_of_batch_pages
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
        "all_on_demand_cost_usd": float(all_on_demand),
        "saving_pct": round(float((all_on_demand - total) / all_on_demand * 100), 2) if all_on_demand > 0 else 0.0,
        "on_demand": {"pages": pages_by_lane["on_demand"], "cost_usd": float(on_demand_cost)},
        "batch": {
            "pages": pages_by_lane["batch"],
            "records": (batch_row or {}).get("record_count") or 0,
            "accepted": (batch_row or {}).get("accepted_count") or 0,
            "fallback": (batch_row or {}).get("fallback_count") or 0,
            "job_status": (batch_row or {}).get("end_state"),
            "reason": (batch_row or {}).get("reason"),
            "cost_usd": float(batch_cost),
            "ledger_rows": len(batch_rows),
        },
        "timings": _batch_timings(batch_row),
    }


def _seconds(start: Any, end: Any) -> float | None:
    return round((end - start).total_seconds(), 3) if start and end else None


def _batch_timings(row: dict[str, Any] | None) -> dict[str, float | None]:
    row = row or {}
    return {
        "prepare_s": _seconds(row.get("prepare_started_at"), row.get("prepared_at")),
        "collect_s": _seconds(row.get("collect_started_at"), row.get("closed_at")),
        "event_to_resume_s": _seconds(row.get("terminal_seen_at"), row.get("resumed_at")),
    }
