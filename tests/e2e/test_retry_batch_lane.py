"""A job served by the batch lane retries its failed pages on-demand, and the money still adds up.

Pages 7 and 33 are refused by the emulated model (``refuse_pages``) in the batch job and
again on-demand, so the job completes with them failed; the refusal is then lifted and
only those two pages are retried, through the conversion machine (``retry-<jobId>-1``).
"""

from __future__ import annotations

from batchlib import (
    PAGES,
    SMALL_LANE_ENV,
    assert_converted_whole,
    assert_retries_booked,
    batch_ledger_rows,
    newest_lane,
    page_results,
    submit,
    wait_for_job,
    wait_until,
)

from batchlane.db import jobs as job_repo
from batchlane.filejob.retry import failed_pages, start_retry
from batchlane.runtime import services
from batchlane_dev.local.bedrock import parse_faults

FAST = "time_scale=36000,job_hours=0.5"
REFUSED = (7, 33)
NON_BLANK = PAGES - PAGES // 15


def test_a_batch_served_job_retries_only_its_failed_pages_on_demand(stack_factory):
    stack = stack_factory(f"{FAST},refuse_pages={'+'.join(map(str, REFUSED))}", extra_env=SMALL_LANE_ENV)
    job_id, _ = submit()
    wait_for_job(services(), job_id, timeout_s=180)
    job = job_repo.PgJobs(services().db).get_job(job_id)
    assert (job.status, job.pages_failed, job.batch_primed) == ("completed", len(REFUSED), True)
    assert [(p.page, p.reason, p.lane) for p in failed_pages(services(), job_id)] == [(n, "stop_reason=refusal", "on_demand") for n in REFUSED]
    assert newest_lane(job_id)["fallback_count"] == len(REFUSED)

    stack.bedrock.set_runtime_faults(parse_faults(FAST))
    started = start_retry(services(), job_id)
    assert started.pages == list(REFUSED) and not started.already_running
    wait_until(
        lambda: job_repo.PgJobs(services().db).get_job(job_id).status == "completed" and job_repo.PgJobs(services().db).get_job(job_id).retry_attempt is None,
        what="the retry",
    )

    results = assert_converted_whole(job_id)  # every page, in order, its own text; total = chunks + the one lane
    assert [n for n, p in results.items() if p.served_by == "on_demand"] == list(REFUSED)
    assert sum(1 for p in results.values() if p.served_by == "batch") == NON_BLANK - len(REFUSED), "batch-served pages kept, not re-run"
    booked = assert_retries_booked(job_id)
    assert sorted(r.chunk_index for r in booked[1]) == [0, 1]  # pages 7 and 33: chunks 0 and 1 of 20 pages; chunk 2 untouched
    assert len(batch_ledger_rows(job_id)) == 1, "the batch job is billed once"
    assert page_results(job_id)  # every chunk result readable after the retry
