"""A Lambda throttle is a wait, never a failed job (issue 21, point 4), on the offline stack whose Lambda
runtime models concurrency: past a function's reserved concurrency an Invoke answers 429
TooManyRequestsException, which Step Functions names Lambda.TooManyRequestsException.

Counted, not timed: the chunk processor is reserved at 1, the first chunk holds the slot until the second
has been throttled more times than the shared retry block allows (4 tries), then lets go.
"""

from __future__ import annotations

import threading
from typing import Any

from batchlib import wait_until

from batchlane.db import jobs as job_repo
from batchlane.runtime import services
from batchlane.topology import DEFINITION_BLOCKS
from batchlane_dev.local.lambda_runtime import ConcurrencyLimit
from batchlane_dev.local.pdfgen import make_pdf

# More throttles than the shared block's attempts (HeavyTaskRetry on ProcessChunk: 1 + 3): the old ladder
# failed the job here; the throttle ladder (15 retries) waits them out.
THROTTLES_HELD = int(DEFINITION_BLOCKS["HeavyTaskRetry"]["MaxAttempts"]) + 3  # type: ignore[call-overload]


def test_a_chunk_throttled_past_the_service_retries_waits_and_the_job_completes(stack_factory):
    from batchlane_dev.local.jobs import submit_pdf

    stack = stack_factory("time_scale=36000", batch_lane=False, extra_env={"BATCHLANE_PAGES_PER_CHUNK": "1"})
    stack.registry.concurrency = ConcurrencyLimit(reserved={"chunk_processor": 1})
    first = threading.Lock()

    def hold_the_slot(event: Any, call_real: Any) -> Any:
        if first.acquire(blocking=False):  # the first chunk in: keep the one slot until the other is throttled enough
            wait_until(lambda: stack.registry.throttles.get("chunk_processor", 0) >= THROTTLES_HELD, timeout_s=120, what="throttles")
        return call_real(event)

    stack.registry.intercept("chunk_processor", hold_the_slot)
    created = submit_pdf(services(), make_pdf(2), name="throttled.pdf", owner_id="throttled-owner")
    job_id = str(created["jobId"])
    wait_until(lambda: job_repo.get_job(services().db, job_id).status in ("completed", "failed"), timeout_s=180, what="the job to end")
    job = job_repo.get_job(services().db, job_id)
    assert job.status == "completed", job  # today's ladder: 4 throttles, then CONVERSION_FAILED (Lambda.TooManyRequestsException)
    assert stack.registry.throttles["chunk_processor"] >= THROTTLES_HELD, "the runtime refused past its concurrency"
    assert stack.registry.running.get("chunk_processor") == 0
