"""The on-demand path end to end on the offline stack (issue 5, "Done when").

Each test runs the real conversion state machine (moto) with the real handlers, the
Bedrock emulator (faults drawn deterministically) and the session's PostgreSQL. No test
asserts a duration; backoff waits are shrunk through the settings.
"""

from __future__ import annotations

import re
import threading
import time

import pytest

from batchlane.db import Database, connect_params_from_url, ledger
from batchlane.db import jobs as job_repo
from batchlane.db.limiter import PgLimiter, SerialDatabase
from batchlane.domain import status as st
from batchlane.domain.pace import LimitSettings
from batchlane.domain.status import Entity
from batchlane.ondemand import CoverageRule, text_layer
from batchlane.pdf import open_pdf
from batchlane.ports import LeaseWaitTimeout
from batchlane.rows import LedgerRow
from batchlane.runtime import services
from batchlane_dev.local.jobs import submit_pdf, wait_for_job
from batchlane_dev.local.pdfgen import make_pdf, page_phrase

pytestmark = pytest.mark.slow

FAST_BACKOFF = {"BATCHLANE_BACKOFF_BASE_S": "0.01", "BATCHLANE_BACKOFF_MAX_S": "0.05"}
_MARKER = re.compile(r"<!-- Page (\d+)(: [^>]*)? -->")


def _convert(stack, pages: int, *, blank_every: int = 0, lines_per_page: int = 18, wait: bool = True):  # type: ignore[no-untyped-def]
    svc = services()
    created = submit_pdf(svc, make_pdf(pages, blank_every=blank_every, lines_per_page=lines_per_page), name=f"ondemand-{pages}.pdf", owner_id="ondemand-tests")
    if wait:
        wait_for_job(svc, created["jobId"], timeout_s=300)
    return svc, created["jobId"]


def _pages(svc, job_id: str) -> dict[int, tuple[str, str]]:  # type: ignore[no-untyped-def]
    """page number → (marker suffix, body) from the job's Markdown; asserts each page appears once, in order."""
    job = job_repo.PgJobs(svc.db).get_job(job_id)
    markdown = svc.store.get_bytes(job.markdown_key).decode()
    pieces = _MARKER.split(markdown)
    pages: dict[int, tuple[str, str]] = {}
    for i in range(1, len(pieces), 3):
        number, suffix, body = int(pieces[i]), pieces[i + 1] or "", pieces[i + 2]
        if number in pages:  # a truncated page's closing marker follows its text
            assert suffix == ": truncated", f"page {number} twice"
            pages[number] = (suffix, pages[number][1])
            continue
        pages[number] = (suffix, body)
    assert list(pages) == list(range(1, job.total_pages + 1)), "a page is missing or out of order"
    return pages


def _chunk_rows(svc, job_id: str) -> list[LedgerRow]:  # type: ignore[no-untyped-def]
    return [r for r in ledger.PgLedger(svc.db).ledger_rows(job_id) if r.source == "chunk"]


def _meta_sum(rows, key: str) -> int:  # type: ignore[no-untyped-def]
    return sum(int(r.metadata.get(key, 0)) for r in rows)


def test_pages_go_five_to_a_request_each_under_its_own_marker_and_every_call_is_booked(stack_factory):
    stack = stack_factory("", batch_lane=False)
    svc, job_id = _convert(stack, 60, blank_every=20)
    job = job_repo.PgJobs(svc.db).get_job(job_id)
    assert (job.status, job.pages_failed) == ("completed", 0)
    pages = _pages(svc, job_id)
    assert all(page_phrase(n, 60) in body for n, (_, body) in pages.items() if n % 20)
    # 57 non-blank pages in chunks of 50: 10 + 2 requests, not 57
    assert stack.bedrock.stats["converse_ok"] == 12
    rows = _chunk_rows(svc, job_id)
    assert _meta_sum(rows, "requests") == 12 and sum(r.cost_usd for r in rows) == job.total_cost_usd > 0


def test_truncated_answers_are_halved_down_to_one_page_which_keeps_its_text_marked_truncated(stack_factory):
    # Given a model that stops every answer at max_tokens
    stack = stack_factory("truncate_rate=1", batch_lane=False)
    # When a 5-page job runs (one 5-page request first)
    svc, job_id = _convert(stack, 5)
    # Then 5 → 2 + 3 → … → five single pages: 9 requests, each page kept and marked truncated
    job = job_repo.PgJobs(svc.db).get_job(job_id)
    assert job.status == "completed" and job.pages_failed == 0
    assert stack.bedrock.stats["converse_ok"] == 9
    pages = _pages(svc, job_id)
    assert {suffix for suffix, _ in pages.values()} == {": truncated"}
    assert all(body.strip() and f"<!-- Page {n}: truncated -->" not in body for n, (_, body) in pages.items())
    rows = _chunk_rows(svc, job_id)
    assert _meta_sum(rows, "pagesTruncated") == 5 and _meta_sum(rows, "halvings") == 4


def test_markers_skipped_repeated_or_reordered_never_put_text_under_another_page(stack_factory):
    stack = stack_factory("marker_fault_rate=0.6", batch_lane=False)
    svc, job_id = _convert(stack, 40)
    job = job_repo.PgJobs(svc.db).get_job(job_id)
    assert (job.status, job.pages_failed) == ("completed", 0)
    for number, (_, body) in _pages(svc, job_id).items():
        assert page_phrase(number, 40) in body
        assert not any(page_phrase(other, 40) + "." in body for other in range(1, 41) if other != number)
    assert _meta_sum(_chunk_rows(svc, job_id), "halvings") > 0


def test_throttling_is_absorbed_with_no_page_lost(stack_factory):
    stack = stack_factory("throttle_rate=0.5", batch_lane=False, extra_env={**FAST_BACKOFF, "BATCHLANE_THROTTLE_MAX_ATTEMPTS": "30"})
    svc, job_id = _convert(stack, 60)
    job = job_repo.PgJobs(svc.db).get_job(job_id)
    assert (job.status, job.pages_failed) == ("completed", 0)
    assert stack.bedrock.stats["converse_throttled"] > 0
    rows = _chunk_rows(svc, job_id)
    assert _meta_sum(rows, "throttled") == stack.bedrock.stats["converse_throttled"]
    assert all(page_phrase(n, 60) in body for n, (_, body) in _pages(svc, job_id).items())


def test_an_exhausted_throttle_budget_never_completes_a_job_with_a_page_missing(stack_factory):
    # Given an account that throttles everything and a budget of two attempts per request
    stack = stack_factory("throttle_rate=1", batch_lane=False, extra_env={**FAST_BACKOFF, "BATCHLANE_THROTTLE_MAX_ATTEMPTS": "2"})
    svc, job_id = _convert(stack, 12, blank_every=6)
    job = job_repo.PgJobs(svc.db).get_job(job_id)
    chunk = job_repo.PgJobs(svc.db).get_chunks(job_id)[0]
    # Then the chunk was retried later (3 attempts), and its last attempt marked the pages failed, visibly
    assert chunk.attempts == 3
    # and the job completed with those pages visibly failed: none missing, none silently skipped
    assert (job.status, job.pages_failed, job.error_id) == ("completed", 10, "PAGES_FAILED")
    pages = _pages(svc, job_id)
    assert [n for n, (suffix, _) in pages.items() if suffix.startswith(": failed")] == [n for n in range(1, 13) if n % 6]


def test_an_answer_covering_too_little_of_the_page_is_re_asked_once(stack_factory):
    # Given a model that leaves out two thirds of about half its answers (first answers and re-asks alike)
    stack = stack_factory("omit_rate=0.5", batch_lane=False, extra_env={"BATCHLANE_PAGES_PER_REQUEST": "1"})
    svc, job_id = _convert(stack, 30)
    job = job_repo.PgJobs(svc.db).get_job(job_id)
    assert (job.status, job.pages_failed) == ("completed", 0)
    rows = _chunk_rows(svc, job_id)
    reasks, improved = _meta_sum(rows, "coverageReasks"), _meta_sum(rows, "coverageImproved")
    assert reasks > 0 and improved > 0
    assert stack.bedrock.stats["converse_ok"] == 30 + reasks  # once more per poor page, never twice
    # the pages still short are exactly those whose re-ask was no better
    rule = CoverageRule()
    doc = open_pdf(make_pdf(30), max_pages=30)
    layers = {p.number: text_layer(p.pdf_bytes) for span in doc.chunks(50) for p in doc.pages(span)}
    short = [n for n, (_, body) in _pages(svc, job_id).items() if rule.too_low(body, layers[n])]
    assert len(short) == reasks - improved


def test_a_cancelled_chunk_starts_no_new_request_and_books_what_it_spent(stack_factory):
    stack = stack_factory("converse_latency_ms=400", batch_lane=False, extra_env={"BATCHLANE_CHUNK_CONCURRENCY": "1"})
    svc, job_id = _convert(stack, 50, wait=False)  # 10 requests, one at a time
    _wait_for(lambda: stack.bedrock.stats["converse_requests"] >= 2)
    # When the job is cancelled mid-chunk (what the API's cancel does to the rows)
    with svc.db.transaction() as tx:
        job_repo.PgJobs(tx).move_job(job_id, st.cancel())
        job_repo.PgJobs(tx).move_chunks(job_id, st.cancel(Entity.CHUNK))
    seen_at_cancel = stack.bedrock.stats["converse_requests"]
    _wait_for(lambda: any(r.metadata.get("aborted") for r in _chunk_rows(svc, job_id)))
    # Then at most the request already in flight finishes; no result is written; the spend is booked
    assert stack.bedrock.stats["converse_requests"] <= seen_at_cancel + 1 < 10
    chunk = job_repo.PgJobs(svc.db).get_chunks(job_id)[0]
    assert chunk.status == "cancelled" and chunk.result_key is None
    (row,) = _chunk_rows(svc, job_id)
    assert row.metadata["aborted"] and row.cost_usd > 0 and chunk.cost_usd == row.cost_usd
    assert job_repo.PgJobs(svc.db).get_job(job_id).status == "cancelled"


def test_a_chunk_at_its_invocation_deadline_keeps_its_pages_books_its_spend_and_continues(stack_factory):
    # Given invocations that may start requests for 3 s (a 900 s timeout less an 897 s margin)
    # and requests that take at least 1 s each, one page and one request at a time
    settings = {"BATCHLANE_CHUNK_STOP_MARGIN_S": "897", "BATCHLANE_PAGES_PER_REQUEST": "1", "BATCHLANE_CHUNK_CONCURRENCY": "1"}
    stack = stack_factory("converse_latency_ms=1000", batch_lane=False, extra_env=settings)
    # When a 12-page job runs: at most 4 answers fit in one invocation
    svc, job_id = _convert(stack, 12)
    # Then the chunk continued in fresh invocations and the job is whole
    job = job_repo.PgJobs(svc.db).get_job(job_id)
    assert (job.status, job.pages_failed) == ("completed", 0)
    assert all(page_phrase(n, 12) in body for n, (_, body) in _pages(svc, job_id).items())
    rows = _chunk_rows(svc, job_id)
    continued = [r for r in rows if r.metadata.get("continued")]
    assert len(continued) >= 2 and len(rows) == len(continued) + 1
    assert job_repo.PgJobs(svc.db).get_chunk(job_id, 0).attempts == len(rows)
    # No page was asked twice, every answer was booked (also those that arrived after the deadline)
    assert _meta_sum(rows, "requests") == stack.bedrock.stats["converse_ok"] == 12
    assert sum(r.cost_usd for r in rows) == job.total_cost_usd > 0


def test_a_database_connection_killed_mid_chunk_is_re_established(stack_factory, migrated_url):
    stack = stack_factory("converse_latency_ms=300", batch_lane=False, extra_env={"BATCHLANE_CHUNK_CONCURRENCY": "1"})
    svc, job_id = _convert(stack, 50, wait=False)
    _wait_for(lambda: stack.bedrock.stats["converse_requests"] >= 3)
    # When another connection terminates the chunk's backends (its heartbeat and the limiter's)
    admin = Database(connect_params_from_url(migrated_url))
    try:
        killed = admin.run(
            """SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity
               WHERE pid <> pg_backend_pid() AND datname = current_database()
                 AND (query ILIKE '%heartbeat_at = now()%' OR query ILIKE '%ondemand_%')"""
        )
    finally:
        admin.close()
    assert sum(1 for r in killed if r["killed"]) >= 1
    wait_for_job(svc, job_id, timeout_s=300)
    # Then the same attempt finished the chunk: nothing failed, the spend is booked once
    job = job_repo.PgJobs(svc.db).get_job(job_id)
    assert (job.status, job.pages_failed) == ("completed", 0)
    assert job_repo.PgJobs(svc.db).get_chunks(job_id)[0].attempts == 1
    (row,) = _chunk_rows(svc, job_id)
    assert row.cost_usd == job.total_cost_usd > 0 and row.metadata["requests"] == 10


def test_the_global_limit_holds_across_workers_and_a_dead_workers_lease_expires(db, migrated_url):
    store = SerialDatabase(connect_params_from_url(migrated_url))
    pool = f"test-{time.monotonic_ns()}"
    limiter = PgLimiter(store, LimitSettings(concurrency=3, rpm=0, lease_ttl_s=60, lease_wait_s=30), sleep=lambda s: time.sleep(min(s, 0.01)))
    held, peak, lock = [0], [0], threading.Lock()

    def worker() -> None:
        for _ in range(5):
            with limiter.slot(pool, aborted=lambda: False):
                with lock:
                    held[0] += 1
                    peak[0] = max(peak[0], held[0])
                time.sleep(0.005)
                with lock:
                    held[0] -= 1

    threads = [threading.Thread(target=worker) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] <= 3 and db.one("SELECT count(*) AS n FROM ondemand_leases WHERE pool = :p", p=pool)["n"] == 0

    # A worker that dies holding every slot: nobody gets one until the leases expire
    short = PgLimiter(store, LimitSettings(concurrency=2, rpm=0, lease_ttl_s=5, lease_wait_s=0))
    for _ in range(2):
        short._acquire(pool, lambda: False)  # never released: the worker "died"
    with pytest.raises(LeaseWaitTimeout):
        short._acquire(pool, lambda: False)
    db.run("UPDATE ondemand_leases SET expires_at = clock_timestamp() - interval '1 second' WHERE pool = :p", p=pool)
    assert short._acquire(pool, lambda: False).slot in (0, 1)


def test_pacing_spaces_requests_by_the_configured_rate(db, migrated_url):
    store = SerialDatabase(connect_params_from_url(migrated_url))
    pool = f"pace-{time.monotonic_ns()}"
    limiter = PgLimiter(store, LimitSettings(concurrency=0, rpm=600))  # one every 0.1 s
    waits = [limiter.pace(pool) for _ in range(5)]
    assert waits[0] == 0.0
    # the n-th ticket waits about n intervals (the statements themselves take a little time)
    assert all(0.1 * n - 0.05 <= wait <= 0.1 * n + 1e-6 for n, wait in enumerate(waits))
    # with a burst of 3, after idling, four start at once and the fifth waits one interval
    bursty = PgLimiter(store, LimitSettings(concurrency=0, rpm=600, burst=3))
    waits = [bursty.pace(f"{pool}-burst") for _ in range(5)]
    assert waits[:4] == [0.0] * 4 and 0.05 <= waits[4] <= 0.1 + 1e-6


def _wait_for(condition, timeout_s: float = 120) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        time.sleep(0.05)
