"""Budgets, caps and the on-demand permission, through the API of the offline stack (real PostgreSQL).

Issue 15 "Cost and fairness": the funds hold is a limit, not a record. Each test sets its
user's budget through the admin route (an override of the deployment's default), then
acts as that user and reads the outcome back from the API and the database.
"""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import pytest

from batchlane import keys
from batchlane.db import budgets, ledger
from batchlane.db import jobs as job_repo
from batchlane.db.limiter import serial_database
from batchlane.domain.budget import PAGE_OUTPUT_TOKENS
from batchlane.domain.cost import Usage
from batchlane.filejob import budget
from batchlane.filejob.chunk import ChunkContinue, process_chunk
from batchlane.filejob.source import store_chunk_sources
from batchlane.pdf.split import open_pdf, plan_chunks
from batchlane.runtime import services
from batchlane.webhooks.events import job_change_detail
from batchlane_dev.local.jobs import wait_until as wait_for
from batchlane_dev.local.pdfgen import make_pdf
from tests.conftest import start_stack
from tests.integration.test_api import MAX_PAGES, PDF, call, estimate, job, make_job, upload

ADMIN = "admin-1;groups=batchlane-admins"


@pytest.fixture(scope="module")
def stack(migrated_url):  # type: ignore[no-untyped-def]
    # One page per request, one request at a time: a chunk's spend grows page by page (the mid-chunk stop test).
    one_at_a_time = {"BATCHLANE_PAGES_PER_REQUEST": "1", "BATCHLANE_CHUNK_CONCURRENCY": "1", "BATCHLANE_CHUNK_MAX_PARALLEL": "0"}
    stack = start_stack(
        migrated_url, faults="time_scale=36000", batch_lane=False, schedules=False, extra_env={"BATCHLANE_MAX_PAGES": str(MAX_PAGES), **one_at_a_time}
    )
    yield stack
    stack.stop()
    assert not stack.grants.denials, stack.grants.denials


@pytest.fixture
def owner(stack):  # type: ignore[no-untyped-def]
    name = f"user-{uuid.uuid4().hex[:8]}"
    yield name
    services().db.run("DELETE FROM files WHERE owner_id = :owner", owner=name)
    services().db.run("DELETE FROM user_budgets WHERE owner_id = :owner", owner=name)


def set_budget(stack: Any, owner: str, **fields: Any) -> dict[str, Any]:
    status, body = call(stack, "PUT", f"/api/v1/admin/budgets/{owner}", fields, user=ADMIN)
    assert status == 200, body
    return body


def jobs_of(owner: str) -> list[job_repo.JobRow]:
    return job_repo.PgJobs(services().db).list_jobs(owner_id=owner)


def test_convert_is_refused_with_402_when_open_holds_use_up_the_budget(stack, owner):
    # Given a user whose one running job holds 2 USD, with a budget of 1.90 USD
    make_job(owner, "processing")
    set_budget(stack, owner, usdPerMonth="1.90")
    file_id = upload(stack, owner, PDF, "second.pdf")
    # When they convert another file
    status, body = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)
    # Then the API refuses it with BUDGET_EXCEEDED and nothing is recorded or started
    assert (status, body["error"]["code"]) == (402, "BUDGET_EXCEEDED"), body
    assert len(jobs_of(owner)) == 1
    assert call(stack, "GET", "/api/v1/budget", user=owner)[1]["committedUsd"] == "2.000000"


def test_convert_is_refused_with_429_at_the_live_job_cap(stack, owner):
    make_job(owner, "processing")
    set_budget(stack, owner, maxLiveJobs=1)
    file_id = upload(stack, owner, PDF, "second.pdf")
    status, body = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)
    assert (status, body["error"]["code"]) == (429, "LIVE_JOBS_LIMIT"), body
    assert len(jobs_of(owner)) == 1


def test_jobs_parked_for_the_batch_pool_do_not_count_against_the_live_caps(stack, owner):
    make_job(owner, "waiting_batch")  # waits in the pool: holds no on-demand capacity
    set_budget(stack, owner, maxLiveJobs=1)
    file_id = upload(stack, owner, PDF, "second.pdf")
    status, body = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)
    assert status == 202, body
    assert len(jobs_of(owner)) == 2


def test_a_job_whose_worst_case_exceeds_the_budget_fails_at_the_split_and_starts_nothing(stack, owner):
    # Given a budget of one cent: less than the worst case of a 6-page document
    set_budget(stack, owner, usdPerMonth="0.01")
    file_id = upload(stack, owner, PDF)
    status, created = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)
    assert status == 202, created
    # Then the split fails it with BUDGET_EXCEEDED: no chunk, no hold, no chunk source, no conversion
    done: job_repo.JobRow = wait_for(lambda: (j := job(created["jobId"])).status in ("failed", "completed") and j, what="the split", timeout_s=180)
    assert (done.status, done.error_id) == ("failed", "BUDGET_EXCEEDED"), done
    assert job_repo.PgJobs(services().db).get_chunks(created["jobId"]) == []
    assert ledger.PgLedger(services().db).get_hold(created["jobId"]) is None
    assert services().store.list_keys(f"jobs/{created['jobId']}/") == []


def test_a_job_with_more_pages_than_the_live_page_cap_fails_with_its_error(stack, owner):
    make_job(owner, "processing")  # 6 live pages already
    set_budget(stack, owner, maxLivePages=10)
    file_id = upload(stack, owner, PDF)
    created = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)[1]
    done: job_repo.JobRow = wait_for(lambda: (j := job(created["jobId"])).status in ("failed", "completed") and j, what="the split", timeout_s=180)
    assert (done.status, done.error_id) == ("failed", "LIVE_PAGES_LIMIT"), done


def test_the_worst_case_is_sized_by_what_the_pages_hold_and_the_hold_by_what_runs(stack, owner):
    # Two documents with the same number of pages: one of text pages, one with every other page blank
    worst, held = {}, {}
    for name, blank_every in (("dense.pdf", 0), ("sparse.pdf", 2)):
        file_id = upload(stack, owner, make_pdf(4, lines_per_page=45, blank_every=blank_every), name)
        dry = estimate(stack, f"/api/v1/files/{file_id}/convert?dry_run=true", {}, user=owner)[1]  # asynchronous (decision 0035)
        worst[name] = Decimal(dry["estimate"]["worstCaseUsd"])
        created = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)[1]
        wait_for(lambda: job(created["jobId"]).status == "completed", what=f"the conversion of {name}", timeout_s=180)
        held[name] = ledger.PgLedger(services().db).get_hold(created["jobId"])
    # The one with pages to convert has the larger worst case (a blank page costs nothing), each page at least a dense page's answer
    assert worst["dense.pdf"] > worst["sparse.pdf"], worst
    assert worst["sparse.pdf"] >= services().prices.cost(services().settings.batchlane_model_id, Usage(0, 2 * PAGE_OUTPUT_TOKENS)), worst
    # and no hold outlived its job: each settled at what the job spent (issue 38.4: a window at a time, given back)
    assert all(h is not None and h.outcome == "settled" and h.settled_usd == ledger.PgLedger(services().db).job_total(h.job_id) for h in held.values())


def test_a_job_pauses_when_its_month_is_spent_and_its_owner_resumes_it_when_the_budget_allows(stack, owner):
    # Given a pending job whose booked spend (2 USD) is its owner's whole month
    _, job_id = make_job(owner, "pending")
    with services().db.transaction() as tx:  # spent from its hold (2 USD) as every request is: reserved, then booked
        assert budgets.PgBudgets(tx).reserve(job_id, Decimal("2"))
        ledger.PgLedger(tx).add_chunk_cost(
            job_id=job_id, chunk_index=0, model_id=job(job_id).model_id, input_tokens=1, output_tokens=1, cost_usd=Decimal("2"), metadata={}
        )
    set_budget(stack, owner, usdPerMonth="2")
    # When its conversion runs
    services().workflows.start_conversion(job_id)
    # Then its first request does not fit: the job pauses (and the workflow ends without failing it), saying why
    wait_for(lambda: job(job_id).status == "paused_budget", what="the pause", timeout_s=180)
    assert "completed" not in [c.status for c in job_repo.PgJobs(services().db).get_chunks(job_id)]
    assert ledger.PgLedger(services().db).job_total(job_id) == Decimal("2"), "nothing more was spent"
    assert job(job_id).error_message.startswith("Paused: its next request may cost up to ")
    assert job_change_detail(services(), job_id)["outcome"] == "paused_budget"  # what the public event carries
    # (a resume waits until the paused run has ended: its last step marks it)
    wait_for(lambda: job(job_id).pause_settled, what="the paused run's end", timeout_s=180)
    # And with a budget that cannot carry more, the owner's resume is refused with 402
    set_budget(stack, owner, usdPerMonth="2.01")
    status, body = call(stack, "POST", f"/api/v1/jobs/{job_id}/resume", {}, user=owner)
    assert (status, body["error"]["code"]) == (402, "BUDGET_EXCEEDED"), body
    assert call(stack, "POST", f"/api/v1/jobs/{job_id}/resume", {}, user="someone-else")[0] == 404
    # When an admin raises the budget, the resume goes on and the job converts whole (its hold growing a window at a time)
    set_budget(stack, owner, usdPerMonth="50")
    status, body = call(stack, "POST", f"/api/v1/jobs/{job_id}/resume", {}, user=owner)
    assert status == 200 and body["status"] == "processing", body
    wait_for(lambda: job(job_id).status == "completed", what="the resumed conversion", timeout_s=180)
    assert job_repo.PgJobs(services().db).get_job(job_id).pages_converted == 6
    again = call(stack, "POST", f"/api/v1/jobs/{job_id}/resume", {}, user=owner)
    assert (again[0], again[1]["error"]["code"]) == (409, "NOT_PAUSED")


def test_a_running_chunk_stops_at_the_first_request_its_owners_month_cannot_carry_and_the_job_pauses(stack, owner):
    # Given a pending job whose owner's month carries one request at its worst case and a little more, not its 6 pages
    _, job_id = make_job(owner, "pending")
    hold = budget.cheapest_request_usd(services(), job(job_id).model_id) + Decimal("0.02")
    services().db.run("UPDATE funds_holds SET amount_usd = 0 WHERE job_id = CAST(:id AS uuid)", id=job_id)
    set_budget(stack, owner, usdPerMonth=str(hold))
    # When its conversion runs (3 pages a chunk, one request at a time, the two chunks side by side)
    services().workflows.start_conversion(job_id)
    wait_for(lambda: job(job_id).pause_settled, what="the paused run's end", timeout_s=180)
    # Then the chunks stopped at the first request that did not fit: what they booked is within the hold,
    # the pages they converted are kept for the resume, no chunk completed, and the job is paused
    assert job(job_id).status == "paused_budget"
    booked = ledger.PgLedger(services().db).ledger_rows(job_id)
    assert sum(r.cost_usd for r in booked) <= hold
    for index in sorted({r.chunk_index for r in booked}):
        assert len(services().store.get_json(keys.chunk_partial_key(job_id, index))["pages"]) < 3, index
    assert "completed" not in [c.status for c in job_repo.PgJobs(services().db).get_chunks(job_id)]


def test_process_now_needs_the_priority_group(stack, owner):
    file_id, job_id = make_job(owner, "waiting_batch")
    status, body = call(stack, "POST", f"/api/v1/files/{file_id}/process-now", {}, user=owner)
    assert (status, body["error"]["code"]) == (403, "FORBIDDEN") and "batchlane-priority" in body["error"]["message"]
    assert job(job_id).status == "waiting_batch"
    status, body = call(stack, "POST", f"/api/v1/files/{file_id}/process-now", {}, user=f"{owner};groups=batchlane-priority")
    assert status == 200 and body["resumed"] is True, body


def test_only_admins_set_budgets(stack, owner):
    status, body = call(stack, "PUT", f"/api/v1/admin/budgets/{owner}", {"usdPerMonth": "1000000"}, user=owner)
    assert (status, body["error"]["code"]) == (403, "FORBIDDEN")
    assert services().db.one("SELECT 1 FROM user_budgets WHERE owner_id = :o", o=owner) is None


def test_options_that_skip_the_batch_lane_need_the_priority_group(stack, owner):
    file_id = upload(stack, owner, PDF)
    status, body = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {"options": {"parser": "fast"}}, user=owner)
    assert (status, body["error"]["code"]) == (403, "FORBIDDEN") and "parser" in body["error"]["message"], body
    assert jobs_of(owner) == []
    status, body = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {"options": {"highFidelity": False}}, user=f"{owner};groups=batchlane-priority")
    assert status == 202, body
    wait_for(lambda: job(body["jobId"]).status == "completed", what="the conversion", timeout_s=180)


def test_the_cli_shows_a_budget_and_an_admin_sets_one(stack, owner):
    from click.testing import CliRunner

    from batchlane_dev.cli.main import main

    def cli(*args: str, user: str) -> Any:
        return CliRunner().invoke(main, [*args, "--api-url", stack.env["BATCHLANE_API_URL"], "--user", user, "--json"], catch_exceptions=False)

    refused = cli("budget", "--set-for", owner, "--usd-per-month", "7", user=owner)
    assert refused.exit_code != 0 and "FORBIDDEN" in refused.stderr
    assert cli("budget", "--set-for", owner, "--usd-per-month", "7", "--max-live-jobs", "3", user=ADMIN).exit_code == 0
    shown = cli("budget", user=owner)
    assert shown.exit_code == 0, shown.output
    assert '"usdPerMonth": "7' in shown.stdout and '"maxLiveJobs": 3' in shown.stdout


# -- one spend counter per job (issue 21.5) ----------------------------------------------------------
CHUNKS = 8


def _job_of_chunks(owner: str, *, hold_usd: Decimal) -> str:
    """A processing job of CHUNKS chunks of 3 pages (chunk PDFs stored, as the split leaves them) holding ``hold_usd``."""
    svc = services()
    pages = CHUNKS * 3
    pdf = make_pdf(pages)
    with svc.db.transaction() as tx:
        file_row = job_repo.PgJobs(tx).insert_file(owner_id=owner, name="eight.pdf", s3_key=f"uploads/{owner}/eight.pdf", size_bytes=len(pdf))
        created = job_repo.PgJobs(tx).insert_job(
            file_id=str(file_row.id),
            owner_id=owner,
            status="processing",
            options={},
            model_id=svc.settings.batchlane_model_id,
            total_pages=pages,
            pages_per_chunk=3,
            chunks=plan_chunks(pages, 3),
            chunk_status="pending",
        )
        ledger.PgLedger(tx).place_hold(job_id=str(created.id), owner_id=owner, amount_usd=hold_usd, hours=6)
    store_chunk_sources(svc.store, str(created.id), open_pdf(pdf, max_pages=pages), plan_chunks(pages, 3))
    return str(created.id)


def _run_chunks_at_once(job_id: str, indexes: list[int]) -> None:
    """Every chunk in its own thread, all released together (as the Map state runs them)."""
    start = threading.Barrier(len(indexes))

    def one(index: int) -> None:
        start.wait()
        try:
            process_chunk(services(), job_id, index)
        except ChunkContinue:
            pass  # stopped at the hold: the pages so far are kept

    with ThreadPoolExecutor(max_workers=len(indexes)) as pool:
        list(pool.map(one, indexes))


def test_concurrent_chunks_share_one_hold_and_never_overspend_it(stack, owner):
    # Given what one page costs here (one chunk of another owner's job, with room to spare) ...
    for _attempt in range(3):
        probe = _job_of_chunks(f"probe-{owner}", hold_usd=Decimal("100"))
        try:
            process_chunk(services(), probe, 0)
            break
        except ChunkContinue:  # seen once in CI with a 100 USD hold: the chunk was halted, not priced; measure on a fresh job
            continue
    page_usd = ledger.PgLedger(services().db).job_total(probe) / 3
    # ... and a job of 8 chunks whose owner's month carries one request at its worst case and two pages' real cost more
    worst = budget.cheapest_request_usd(services(), services().settings.batchlane_model_id) + page_usd
    hold = worst + 2 * page_usd
    set_budget(stack, owner, usdPerMonth=str(hold))
    job_id = _job_of_chunks(owner, hold_usd=Decimal(0))
    # When its 8 chunks run at the same time, each growing the hold by its window under the owner's lock
    _run_chunks_at_once(job_id, list(range(CHUNKS)))
    # Then together they spent no more than the month allows (before issue 21.5 each read the whole remainder and spent it: 8 x)
    spent = ledger.PgLedger(services().db).job_total(job_id)
    assert 0 < spent <= hold, (spent, hold, page_usd)
    assert ledger.PgLedger(services().db).get_hold(job_id).amount_usd <= hold, "the windows never grew the hold past the month"
    # and the counter says what was booked, nothing reserved is left over
    assert ledger.PgLedger(services().db).get_hold(job_id).committed_usd == spent
    # And the next chunk start pauses the job (if a chunk that started after a request was refused has not already):
    # what is left cannot carry another request
    unfinished = next(c.chunk_index for c in job_repo.PgJobs(services().db).get_chunks(job_id) if c.status != "completed")
    if job(job_id).status == "processing":
        assert _start_as_the_workflow_does(job_id, unfinished)["status"] == "paused_budget"
    assert job(job_id).status == "paused_budget"
    assert ledger.PgLedger(services().db).job_total(job_id) == spent, "the pause sent nothing more"


def test_two_jobs_of_one_owner_growing_their_holds_at_once_never_pass_its_month(stack, owner):
    # Given an owner whose month carries about three requests at their worst, and two of its jobs of 8 chunks each
    least = budget.cheapest_request_usd(services(), services().settings.batchlane_model_id)
    month = 3 * least
    set_budget(stack, owner, usdPerMonth=str(month))
    first, second = _job_of_chunks(owner, hold_usd=Decimal(0)), _job_of_chunks(owner, hold_usd=Decimal(0))
    # When all 16 chunks start at the same moment, each growing its job's hold by its window under the owner's lock
    start = threading.Barrier(2 * CHUNKS)

    def one(job_and_index: tuple[str, int]) -> None:
        start.wait()
        try:
            process_chunk(services(), *job_and_index)
        except ChunkContinue:
            pass

    with ThreadPoolExecutor(max_workers=2 * CHUNKS) as pool:
        list(pool.map(one, [(j, i) for j in (first, second) for i in range(CHUNKS)]))
    # Then the two holds together never passed the month, nor did what the two jobs spent
    holds = [ledger.PgLedger(services().db).get_hold(j) for j in (first, second)]
    assert sum(h.amount_usd for h in holds if h is not None) <= month
    assert 0 < ledger.PgLedger(services().db).job_total(first) + ledger.PgLedger(services().db).job_total(second) <= month


def _start_as_the_workflow_does(job_id: str, index: int) -> dict:
    """Start the chunk; on ChunkContinue start it once more, as the state machine does at once.

    Settlements after the concurrent run can free what their worst cases had reserved: the start then finds
    room for the smallest request, the chunk's own request is refused (HoldReached stops it like a deadline,
    its cost kept as the hold's wanted_usd) and its continuation pauses the job (docs/operations.md)."""
    try:
        return process_chunk(services(), job_id, index)
    except ChunkContinue:
        return process_chunk(services(), job_id, index)


def test_the_counter_gives_out_a_hold_once_whatever_the_threads(stack, owner):
    # Given a job holding exactly three requests' worth
    job_id = _job_of_chunks(owner, hold_usd=Decimal("0.30"))
    # When 16 threads each try to take one request's worth at the same moment
    start = threading.Barrier(16)

    def take() -> bool | None:
        start.wait()
        return budgets.PgBudgets(serial_database(services().db.params)).reserve(job_id, Decimal("0.10"))

    with ThreadPoolExecutor(max_workers=16) as pool:
        taken = list(pool.map(lambda _: take(), range(16)))
    # Then exactly three got it and the counter stands at the hold
    assert taken.count(True) == 3 and taken.count(False) == 13
    assert ledger.PgLedger(services().db).get_hold(job_id).committed_usd == Decimal("0.30")
