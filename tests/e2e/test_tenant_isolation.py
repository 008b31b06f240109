"""Two owners on the offline stack (issue 21, "Done when"): A floods, B's work and calls go on.

A opens its 20 live conversions at once and floods the API with dry runs of a large upload and
reads; B converts one PDF and polls its job through the API the whole time. B's job completes,
every call B makes is answered (never 429), A is refused 429 RATE_LIMITED past its own rate, and
no job of either fails. The rate is the default (5 a second, a dry run costing 10), the burst 20
(default 60) so that A's flood outruns it within a few dry runs.
"""

from __future__ import annotations

import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from batchlane.db import jobs as job_repo
from batchlane.runtime import services
from batchlane_dev.local.jobs import wait_until
from batchlane_dev.local.pdfgen import make_pdf
from tests.integration.test_api import call, upload

A_JOBS = 20  # A's live-job cap
A_PAGES, B_PAGES, LARGE_PAGES = 3, 6, 300


@pytest.fixture(scope="module")
def stack(migrated_url: str, stack_starter: Any) -> Any:  # type: ignore[no-untyped-def]
    started = stack_starter(migrated_url, faults="time_scale=36000", batch_lane=False, extra_env={"BATCHLANE_API_BURST": "20"})
    yield started
    started.stop()
    assert not (started.grants and started.grants.denials), started.grants.denials


def convert_as_the_cli_does(stack: Any, file_id: str, user: str) -> tuple[int, Any]:
    """A convert that waits out a 429's Retry-After, as the CLI does (A's own uploads already spent part of its burst)."""
    while True:
        status, body = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=user)
        if status != 429:
            return status, body
        time.sleep(float(body.get("retryAfterSeconds") or 1))


def test_a_flood_by_one_owner_leaves_another_owners_conversion_and_calls_answered(stack: Any) -> None:
    a, b = f"flooder-{uuid.uuid4().hex[:6]}", f"bystander-{uuid.uuid4().hex[:6]}"
    large = upload(stack, a, make_pdf(LARGE_PAGES), "large.pdf")
    small = [upload(stack, a, make_pdf(A_PAGES), f"a-{i}.pdf") for i in range(A_JOBS)]
    b_file = upload(stack, b, make_pdf(B_PAGES), "b.pdf")
    stop, a_refused = threading.Event(), threading.Event()
    a_answers: list[int] = []
    b_answers: list[int] = []

    def flood() -> None:  # A: dry runs of its large upload and reads, as fast as the API answers
        while not stop.is_set():
            a_answers.append(call(stack, "POST", f"/api/v1/files/{large}/convert?dry_run=true", {}, user=a)[0])
            a_answers.append(call(stack, "GET", "/api/v1/budget", user=a)[0])
            if 429 in a_answers:
                a_refused.set()

    with ThreadPoolExecutor(max_workers=4) as pool:
        a_jobs = list(pool.map(lambda f: convert_as_the_cli_does(stack, f, a), small))
        flooders = [pool.submit(flood) for _ in range(3)]
        try:
            assert a_refused.wait(timeout=300), "A's flood never ran past its rate limit"
            status, created = call(stack, "POST", f"/api/v1/files/{b_file}/convert", {}, user=b)
            b_answers.append(status)
            b_job = created["jobId"]

            def b_done() -> bool:
                status, body = call(stack, "GET", f"/api/v1/jobs/{b_job}", user=b)
                b_answers.append(status)
                return status == 200 and body["status"] in ("completed", "failed", "cancelled")

            wait_until(b_done, timeout_s=300, poll_s=0.5, what="B's conversion under A's flood")  # 2 calls a second: within B's own rate
        finally:
            stop.set()
        for f in flooders:
            f.result()

    assert job_repo.get_job(services().db, b_job).status == "completed"  # type: ignore[union-attr]
    assert set(b_answers) <= {200, 202}, sorted(set(b_answers))  # every call of B answered
    assert a_answers.count(429) > 0 and 200 in a_answers  # A was answered up to its rate, then refused
    assert {status for status, _ in a_jobs} == {202}
    a_ids = [body["jobId"] for _, body in a_jobs]
    wait_until(
        lambda: all(job_repo.get_job(services().db, j).status in ("completed", "failed") for j in a_ids),  # type: ignore[union-attr]
        timeout_s=600,
        what="A's conversions",
    )
    failed = [(j.error_id, j.error_message) for j in (job_repo.get_job(services().db, i) for i in a_ids) if j and j.status != "completed"]
    assert failed == [], failed  # no job failed, throttled or otherwise
