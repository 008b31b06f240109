"""Helpers for end-to-end tests: run a job through the offline stack, check the invariants."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from batchlane.claude import PageResult
from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.rows import LedgerRow
from batchlane.runtime import services
from batchlane_dev.local.jobs import submit_pdf, wait_for_job, wait_until  # noqa: F401 - re-exported for the tests
from batchlane_dev.local.pdfgen import make_pdf, page_phrase
from batchlane_dev.report import job_report

# Small jobs through the batch lane: 60 pages in 3 chunks, lane thresholds lowered to fit.
SMALL_LANE_ENV = {
    "BATCH_CONVERSION_MIN_PAGES": "40",
    "BATCH_CONVERSION_MIN_RECORDS": "10",
    "BATCHLANE_PAGES_PER_CHUNK": "20",
    # At time_scale 36000 AWS's 2 h grace is 0.2 s of real time: too close to Bedrock's own
    # expiry for a test on a busy machine. A day of grace keeps the paths apart.
    "BATCH_CONVERSION_GRACE_HOURS": "24",
    # One job at a time: a lane forms as soon as the job parks (tests of the pool set their own window).
    "BATCH_POOL_WINDOW_MINUTES": "0",
}
PAGES = 60
BLANK_EVERY = 15


def submit(pages: int = PAGES, *, options: dict[str, Any] | None = None, blank_every: int = BLANK_EVERY) -> tuple[str, bytes]:
    data = make_pdf(pages, blank_every=blank_every)
    created = submit_pdf(services(), data, name="test.pdf", owner_id="tester", options=options)
    return created["jobId"], data


def run_job(pages: int = PAGES, *, options: dict[str, Any] | None = None, timeout_s: float = 120) -> dict[str, Any]:
    job_id, _ = submit(pages, options=options)
    wait_for_job(services(), job_id, timeout_s=timeout_s)
    return job_report(services(), job_id)


def newest_lane(job_id: str) -> dict[str, Any] | None:
    """The newest lane (Bedrock job) that carried a chunk of the job."""
    return services().db.one(
        """SELECT * FROM lanes WHERE id IN (SELECT lane_row_id FROM batch_members WHERE job_id = CAST(:id AS uuid))
           ORDER BY id DESC LIMIT 1""",
        id=job_id,
    )


def batch_ledger_rows(job_id: str) -> list[dict[str, Any]]:
    """The ledger rows of the lanes (Bedrock jobs) that carried the job: one per lane, owned by the lane."""
    return services().db.run(
        """SELECT * FROM cost_ledger WHERE source = 'batch'
           AND lane_row_id IN (SELECT lane_row_id FROM batch_members WHERE job_id = CAST(:id AS uuid)) ORDER BY id""",
        id=job_id,
    )


def lane_row(lane_id: str) -> dict[str, Any] | None:
    return services().db.one("SELECT * FROM lanes WHERE lane_id = CAST(:id AS uuid)", id=lane_id)


def job_of_lane(lane_id: str) -> str:
    """The one job a single-job lane carries."""
    [row] = services().db.run(
        "SELECT DISTINCT m.job_id FROM batch_members m JOIN lanes b ON b.id = m.lane_row_id WHERE b.lane_id = CAST(:id AS uuid)",
        id=lane_id,
    )
    return str(row["job_id"])


def lanes(job_id: str) -> list[dict[str, Any]]:
    """Every lane that carried a chunk of the job, oldest first."""
    return services().db.run(
        """SELECT * FROM lanes WHERE id IN (SELECT lane_row_id FROM batch_members WHERE job_id = CAST(:id AS uuid))
           ORDER BY id""",
        id=job_id,
    )


def page_results(job_id: str) -> dict[int, PageResult]:
    svc = services()
    results: dict[int, PageResult] = {}
    for chunk in job_repo.PgJobs(svc.db).get_chunks(job_id):
        for item in svc.store.get_json(chunk.result_key)["pages"]:
            page = PageResult.from_json(item)
            assert page.page_number not in results, f"page {page.page_number} twice"
            results[page.page_number] = page
    return results


def assert_converted_whole(job_id: str, pages: int = PAGES, blank_every: int = BLANK_EVERY) -> dict[int, PageResult]:
    """The invariants: completed, every page once under its marker with its own text, money adds up."""
    svc = services()
    job = job_repo.PgJobs(svc.db).get_job(job_id)
    assert job is not None
    assert job.status == "completed", (job.status, job.error_id, job.error_message)
    assert job.pages_failed == 0
    markdown = svc.store.get_bytes(job.markdown_key).decode()
    last = -1
    for number in range(1, pages + 1):
        marker = markdown.index(f"<!-- Page {number} -->")
        assert marker > last, f"page {number} out of order"
        last = marker
        if not (blank_every and number % blank_every == 0):
            following = markdown[marker : markdown.find("<!-- Page", marker + 5) if number < pages else len(markdown)]
            assert page_phrase(number, pages) in following, f"page {number}'s text is not under its marker"
    results = page_results(job_id)
    assert sorted(results) == list(range(1, pages + 1))
    rows = ledger.PgLedger(svc.db).ledger_rows(job_id)
    assert not [r for r in rows if r.source == "batch"], "a lane's own row never belongs to a job"
    shares = [r.lane_row_id for r in rows if r.source == "batch_share"]
    assert len(shares) == len(set(shares)), "one share per lane"
    total = sum((r.cost_usd for r in rows), Decimal(0))
    assert Decimal(job.total_cost_usd) == total
    chunk_cost = sum((r.cost_usd for r in rows if r.source == "chunk"), Decimal(0))
    pages_cost = sum((p.cost_usd for p in results.values()), Decimal(0))
    # Chunk rows book every on-demand call made (a discarded multi-page answer or a re-ask is paid for too), and
    # each page's result carries its share of every call made for it (issue 38.2): the pages add up to the rows.
    assert chunk_cost == pages_cost, ("the sum over pages", chunk_cost, pages_cost)
    assert all(p.cost_usd == 0 for p in results.values() if p.served_by == "batch")
    requests = sum(r.metadata.get("requests", 0) for r in rows if r.source == "chunk")
    assert (chunk_cost == 0) == (requests == 0), "chunk cost without a call, or a call without its cost"
    batch_cost = job.batch_cost_usd
    assert total == chunk_cost + batch_cost
    hold = ledger.PgLedger(svc.db).get_hold(job_id)
    assert hold is not None and hold.outcome == "settled" and hold.settled_usd == total
    return results


def assert_retries_booked(job_id: str) -> dict[int, list[LedgerRow]]:
    """Retries of failed pages book only what they spent: one chunk row per retried chunk tagged
    ``retry: n``; each retry's cost is its rows' sum; the totals chain: the job's total before
    retry n+1 is the total before n plus n's cost, and the job's total is the ledger's sum."""
    svc = services()
    job = job_repo.PgJobs(svc.db).get_job(job_id)
    assert job is not None
    rows = ledger.PgLedger(svc.db).ledger_rows(job_id)
    history = svc.db.run("SELECT * FROM job_retries WHERE job_id = CAST(:id AS uuid) ORDER BY attempt", id=job_id)
    by_retry: dict[int, list[LedgerRow]] = {}
    for row in rows:
        if (n := row.metadata.get("retry")) is not None:
            by_retry.setdefault(int(n), []).append(row)
    assert set(by_retry) <= {r["attempt"] for r in history}, "a ledger row tagged with a retry that does not exist"
    running_total = Decimal(history[0]["previous_total_usd"]) if history else Decimal(job.total_cost_usd)
    assert running_total == sum((r.cost_usd for r in rows if "retry" not in r.metadata), Decimal(0))
    for retry in history:
        assert retry["status"] != "running", f"retry {retry['attempt']} still running"
        booked = sum((r.cost_usd for r in by_retry.get(retry["attempt"], [])), Decimal(0))
        assert Decimal(retry["previous_total_usd"]) == running_total
        assert Decimal(retry["cost_usd"]) == booked, (retry["attempt"], retry["cost_usd"], booked)
        assert {r.chunk_index for r in by_retry.get(retry["attempt"], [])} <= {int(c["chunkIndex"]) for c in retry["chunks_before"]}
        running_total += booked
    assert Decimal(job.total_cost_usd) == running_total == sum((r.cost_usd for r in rows), Decimal(0))
    return by_retry
