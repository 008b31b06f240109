"""Money checks for end-to-end tests: the ledger books exactly what the Bedrock emulator served.

The emulator counts the tokens it served per lane (``BedrockEmulator.tokens_served``) and writes
each batch job's ``manifest.json.out`` as AWS does; the ledger must EQUAL them, not approximate them.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.domain.cost import Usage
from batchlane.runtime import services


def ledger_tokens(job_id: str, source: str) -> tuple[int, int]:
    rows = [r for r in ledger.ledger_rows(services().db, job_id) if r["source"] == source]
    return sum(int(r["input_tokens"]) for r in rows), sum(int(r["output_tokens"]) for r in rows)


def bedrock_manifest(job_id: str) -> dict[str, Any]:
    """The job's ``manifest.json.out`` as Bedrock wrote it (one Bedrock job per conversion job today)."""
    store = services().store
    [key] = [k for k in store.list_keys(f"batch/{job_id}/output/") if k.endswith("manifest.json.out")]
    return dict(store.get_json(key))


def assert_batch_row_bills_the_manifest(job_id: str) -> dict[str, Any]:
    """The one batch ledger row carries every token Bedrock's manifest counts (used or not), at the batch price."""
    svc = services()
    [row] = [r for r in ledger.ledger_rows(svc.db, job_id) if r["source"] == "batch"]
    manifest = bedrock_manifest(job_id)
    assert (row["input_tokens"], row["output_tokens"]) == (manifest["inputTokenCount"], manifest["outputTokenCount"]), (dict(row), manifest)
    usage = Usage(manifest["inputTokenCount"], manifest["outputTokenCount"])
    assert Decimal(row["cost_usd"]) == svc.prices.cost(row["model_id"], usage, batch=True)
    batch = svc.db.one("SELECT cost_usd FROM conversion_batch_jobs WHERE job_id = CAST(:id AS uuid)", id=job_id)
    assert batch is not None and Decimal(batch["cost_usd"]) == Decimal(row["cost_usd"])
    return dict(row)


def assert_ledger_equals_tokens_served(stack: Any, job_ids: list[str]) -> None:
    """Summed over the stack's jobs: batch rows = the tokens batch jobs served, chunk rows = the runtime's."""
    served = stack.bedrock.tokens_served()
    batch = [ledger_tokens(j, "batch") for j in job_ids]
    chunk = [ledger_tokens(j, "chunk") for j in job_ids]
    assert (sum(b[0] for b in batch), sum(b[1] for b in batch)) == served["batch"], "batch ledger rows vs tokens Bedrock batch jobs served"
    assert (sum(c[0] for c in chunk), sum(c[1] for c in chunk)) == served["runtime"], "chunk ledger rows vs tokens the runtime served"


def assert_total_is_the_ledger(job_id: str) -> Decimal:
    """A completed job's total, its settled hold and its options' batch cost agree with the ledger, exactly."""
    svc = services()
    job = job_repo.get_job(svc.db, job_id)
    assert job is not None and job.status == "completed", job and job.status
    rows = ledger.ledger_rows(svc.db, job_id)
    total = sum((Decimal(r["cost_usd"]) for r in rows), Decimal(0))
    batch = sum((Decimal(r["cost_usd"]) for r in rows if r["source"] == "batch"), Decimal(0))
    assert Decimal(job.total_cost_usd) == total, ("job total", job.total_cost_usd, total)
    assert Decimal((job.options or {}).get("_batchCostUsd", "0")) == batch
    hold = ledger.get_hold(svc.db, job_id)
    assert hold is not None and hold["outcome"] == "settled" and Decimal(hold["settled_usd"]) == total
    return total
