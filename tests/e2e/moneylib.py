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
    """The job's tokens in the ledger: ``chunk`` its on-demand rows, ``batch`` its shares of the lanes that carried it."""
    backend = "batch" if source == "batch" else "on_demand"
    rows = [r for r in ledger.PgLedger(services().db).ledger_rows(job_id) if r.backend == backend]
    return sum(r.input_tokens for r in rows), sum(r.output_tokens for r in rows)


def bedrock_manifest(lane_id: str) -> dict[str, Any]:
    """The lane's ``manifest.json.out`` as Bedrock wrote it."""
    store = services().store
    [key] = [k for k in store.list_keys(f"batch/{lane_id}/output/") if k.endswith("manifest.json.out")]
    return dict(store.get_json(key))


def lanes_of(job_id: str) -> list[dict[str, Any]]:
    return services().db.run(
        """SELECT * FROM lanes WHERE id IN (SELECT lane_row_id FROM batch_members WHERE job_id = CAST(:id AS uuid))
           ORDER BY id""",
        id=job_id,
    )


def assert_lane_bills_its_manifest(lane: dict[str, Any]) -> dict[str, Any]:
    """The lane's one ledger row carries every token Bedrock's manifest counts (used or not), at the batch price;
    the members' shares add up to it exactly, tokens and money, each share following the member's records."""
    svc = services()
    [row] = svc.db.run("SELECT * FROM cost_ledger WHERE lane_row_id = :id AND source = 'batch'", id=lane["id"])
    assert row["job_id"] is None, "a lane's row belongs to the lane; its members carry shares"
    manifest = bedrock_manifest(str(lane["lane_id"]))
    assert (row["input_tokens"], row["output_tokens"]) == (manifest["inputTokenCount"], manifest["outputTokenCount"]), (dict(row), manifest)
    usage = Usage(manifest["inputTokenCount"], manifest["outputTokenCount"])
    assert Decimal(row["cost_usd"]) == svc.prices.cost(row["model_id"], usage, batch=True)
    assert lane["cost_usd"] is not None and Decimal(lane["cost_usd"]) == Decimal(row["cost_usd"])
    shares = svc.db.run("SELECT * FROM cost_ledger WHERE lane_row_id = :id AND source = 'batch_share'", id=lane["id"])
    members = svc.db.run("SELECT job_id, sum(records) AS records FROM batch_members WHERE lane_row_id = :id GROUP BY job_id", id=lane["id"])
    assert {str(s["job_id"]) for s in shares} == {str(m["job_id"]) for m in members}, "one share per member job"
    assert sum((Decimal(s["cost_usd"]) for s in shares), Decimal(0)) == Decimal(row["cost_usd"]), "shares add up to the lane's row"
    assert sum(int(s["input_tokens"]) for s in shares) == row["input_tokens"]
    assert sum(int(s["output_tokens"]) for s in shares) == row["output_tokens"]
    return dict(row)


def assert_lane_bills_the_manifest(job_id: str) -> dict[str, Any]:
    """Every lane that carried the job bills its manifest (:func:`assert_lane_bills_its_manifest`); the job has
    one share per lane. Returns the job's shares summed, as one row (cost, tokens, model)."""
    svc = services()
    lanes = lanes_of(job_id)
    assert lanes, f"no lane carried job {job_id}"
    for lane in lanes:
        assert_lane_bills_its_manifest(lane)
    shares = [r for r in ledger.PgLedger(svc.db).ledger_rows(job_id) if r.source == "batch_share"]
    assert sorted(r.lane_row_id for r in shares) == sorted(lane["id"] for lane in lanes), "one share per lane"
    return {
        "cost_usd": sum((r.cost_usd for r in shares), Decimal(0)),
        "input_tokens": sum(r.input_tokens for r in shares),
        "output_tokens": sum(r.output_tokens for r in shares),
        "model_id": shares[0].model_id,
    }


def assert_ledger_equals_tokens_served(stack: Any, job_ids: list[str]) -> None:
    """Summed over the stack's jobs: batch shares = the tokens batch jobs served, chunk rows = the runtime's."""
    served = stack.bedrock.tokens_served()
    batch = [ledger_tokens(j, "batch") for j in job_ids]
    chunk = [ledger_tokens(j, "chunk") for j in job_ids]
    assert (sum(b[0] for b in batch), sum(b[1] for b in batch)) == served["batch"], "batch ledger rows vs tokens Bedrock batch jobs served"
    assert (sum(c[0] for c in chunk), sum(c[1] for c in chunk)) == served["runtime"], "chunk ledger rows vs tokens the runtime served"


def assert_total_is_the_ledger(job_id: str) -> Decimal:
    """A completed job's total, its settled hold and its options' batch cost agree with the ledger, exactly."""
    svc = services()
    job = job_repo.PgJobs(svc.db).get_job(job_id)
    assert job is not None and job.status == "completed", job and job.status
    rows = ledger.PgLedger(svc.db).ledger_rows(job_id)
    total = sum((r.cost_usd for r in rows), Decimal(0))
    batch = sum((r.cost_usd for r in rows if r.backend == "batch"), Decimal(0))
    assert Decimal(job.total_cost_usd) == total, ("job total", job.total_cost_usd, total)
    assert job.batch_cost_usd == batch
    hold = ledger.PgLedger(svc.db).get_hold(job_id)
    assert hold is not None and hold.outcome == "settled" and hold.settled_usd == total
    return total


def _api_view(stack: Any, job_id: str, owner: str) -> dict[str, Any]:
    import json
    import urllib.request

    request = urllib.request.Request(stack.env["BATCHLANE_API_URL"] + f"/api/v1/jobs/{job_id}", headers={"Authorization": f"Bearer local:{owner}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return dict(json.loads(response.read()))


def assert_bill_identities(stack: Any, job_id: str, since: Any, *, until: Any = None, pages: bool = True) -> Any:
    """Issue 38.2, for a job that ran alone between two marks of the emulator: its ledger rows, its reported total
    (the job row, its hold, the API's view and live block, the demo report), the sum over its pages (each page's
    result says all spent on it) and the emulator's own bill (tokens × price of what it served) agree, to the
    micro-dollar. Returns the job's figures (domain/savings.LedgerMoney)."""
    from batchlib import page_results

    from batchlane_dev.report import job_report

    svc = services()
    job = job_repo.PgJobs(svc.db).get_job(job_id)
    assert job is not None and job.status in ("completed", "cancelled"), job and (job.status, job.error_id)
    rows = ledger.PgLedger(svc.db).ledger_rows(job_id)
    total = sum((r.cost_usd for r in rows), Decimal(0))
    assert Decimal(job.total_cost_usd) == total, ("the job's total", job.total_cost_usd, total)
    hold = ledger.PgLedger(svc.db).get_hold(job_id)
    assert hold is not None and hold.settled_usd == total, ("the hold settled at", hold)
    money = svc.uow().reads.ledger_money(job_id)
    assert money.total_usd == total
    view = _api_view(stack, job_id, job.owner_id)
    assert Decimal(view["costUsd"]) == total and Decimal(view["live"]["costSoFarUsd"]) == total, view["live"]
    assert (Decimal(view["live"]["onDemandUsd"]), Decimal(view["live"]["savingUsd"])) == (money.all_on_demand_usd, money.saving_usd)
    if pages:
        results = page_results(job_id)
        on_demand = sum((r.cost_usd for r in rows if r.backend == "on_demand"), Decimal(0))
        assert sum((p.cost_usd for p in results.values()), Decimal(0)) == on_demand, "the sum over pages is the on-demand rows"
        assert on_demand + money.batch_usd == total
        report = job_report(svc, job_id)
        assert Decimal(str(report["total_cost_usd"])) == total and Decimal(str(report["on_demand"]["pages_cost_usd"])) == on_demand
    bill = stack.bedrock.bill(svc.prices, since=since, until=until)
    assert bill["total"] == total, ("the emulator's own bill", bill, total)
    assert bill["batch"] == money.batch_usd, ("its batch jobs' bill", bill, money)
    return money


def assert_each_page_paid_once(stack: Any, job_id: str, since: Any, *, until: Any = None, refused: frozenset[int] = frozenset()) -> None:
    """Every non-blank page of the job was in exactly one billed answer (a runtime call or a batch record) and
    every batch record billed served its page; a page answered twice only when its first answer was refused
    (``refused``) or shared a request with one (the halving that isolates it)."""
    from batchlib import page_results

    results = page_results(job_id)
    served = stack.bedrock.pages_served(since=since, until=until)
    counts = served["runtime"] + served["batch"]
    assert set(counts) == {n for n, p in results.items() if p.status != "blank"}, "every page paid for, and only the job's"
    used = {n for n, p in results.items() if p.batch_usage is not None}
    assert used == set(served["batch"]) and all(n == 1 for n in served["batch"].values()), "each batch record billed served its page, once"
    calls, _ = stack.bedrock.served_since(since, until)
    with_refused = {page for call in calls if call.pages & refused for page in call.pages}
    twice = {page for page, n in counts.items() if n > 1}
    assert twice <= with_refused, f"pages paid twice: {sorted(twice - with_refused)}"
    assert refused <= twice, "the refused pages were answered again"
