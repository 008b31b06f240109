"""A slow answer is paid once, end to end: every read timeout is in the ledger, none re-sent unbooked.

The emulator's latency fault makes each answer slower than the read timeout
(``BATCHLANE_READ_TIMEOUT_MAX_S=1``). Each chunk attempt sends its request once; the
timeout is booked at its estimate in that attempt's ledger row; the chunk retries later
(Step Functions) and, after its last attempt, the pages end visibly failed. Before, the
same request was re-sent at once, up to the throttling budget, and nothing was booked.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from batchlane.claude import ConverterConfig, build_pages_request
from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.domain.cost import Usage
from batchlane.filejob.budget import resume_job
from batchlane.pdf import open_pdf
from batchlane.pdf.split import ChunkSpan
from batchlane.runtime import services
from batchlane_dev.local.jobs import submit_pdf, wait_until
from batchlane_dev.local.pdfgen import make_pdf

pytestmark = pytest.mark.slow


def test_every_timed_out_call_is_booked_and_its_pages_end_visibly_failed(stack_factory):
    settings = {"BATCHLANE_READ_TIMEOUT_MAX_S": "1", "BATCHLANE_BACKOFF_BASE_S": "0.01", "BATCHLANE_BACKOFF_MAX_S": "0.05"}
    stack = stack_factory("converse_latency_ms=2500", batch_lane=False, extra_env=settings)
    svc = services()
    pdf = make_pdf(3)
    job_id = submit_pdf(svc, pdf, name="slow.pdf", owner_id="slow-tests")["jobId"]
    # Each timed-out call is booked at a full max_tokens answer: within the funds hold, which holds a whole
    # max_tokens answer for every page (issue 21.5; it used to be sized from the text and the job paused)
    resumes = 0
    while (current := wait_until(lambda: _ended_or_paused(svc, job_id), timeout_s=300, what="the job to end or pause")) == "paused_budget":
        resume_job(svc, "slow-tests", job_id)
        resumes += 1
    assert current == "completed" and resumes == 0

    job = job_repo.PgJobs(svc.db).get_job(job_id)
    assert job.pages_failed == 3
    markdown = svc.store.get_bytes(job.markdown_key).decode()
    assert all(f"<!-- Page {n}: failed (ReadTimeout) -->" in markdown for n in (1, 2, 3))
    rows = [r for r in ledger.PgLedger(svc.db).ledger_rows(job_id) if r.source == "chunk"]
    attempts = job_repo.PgJobs(svc.db).get_chunk(job_id, 0).attempts
    assert attempts >= 2 and len(rows) == attempts
    # one request per attempt reached Bedrock: never re-sent within an attempt
    assert stack.bedrock.stats["invoke_requests"] == attempts == sum(r.metadata.get("readTimeouts", 0) for r in rows)
    # and each is booked at its estimate: the pages' input and a full max_tokens answer
    pages = [(p.number, p.pdf_bytes) for p in open_pdf(pdf, max_pages=3).pages(ChunkSpan(0, 1, 3))]
    request = build_pages_request(chunk_index=0, pages=pages, config=ConverterConfig.from_settings(svc.settings))
    each = svc.prices.cost(request.model_id, Usage(request.estimated_input_tokens(), request.max_tokens))
    assert [r.cost_usd for r in rows] == [each] * attempts
    assert Decimal(job.total_cost_usd) == each * attempts > 0


def _ended_or_paused(svc, job_id):  # type: ignore[no-untyped-def]
    """The job's status once it has ended, or once its paused run has fully drained (resumable)."""
    job = job_repo.PgJobs(svc.db).get_job(job_id)
    if job.status in ("completed", "failed", "cancelled"):
        return job.status
    if job.status == "paused_budget" and job.pause_settled:
        return job.status
    return None
