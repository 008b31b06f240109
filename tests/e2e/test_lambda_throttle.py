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
from batchlane_dev.local.lambda_runtime import ConcurrencyLimit
from batchlane_dev.local.pdfgen import make_pdf
from deployment.topology import DEFINITION_BLOCKS

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


def test_one_owners_many_chunks_cannot_take_every_chunk_slot_and_a_second_owners_chunk_is_admitted(stack_factory):
    """BATCHLANE_CHUNK_SLOTS=2: owner A's two jobs of 4 one-page chunks each (8 wanting to run, the Map starts
    them all) run at most 2 at once; B's one chunk is admitted while A still has chunks waiting, and every
    job completes (the refused chunks wait, none fails). Counted inside the chunk processor, not timed."""
    from batchlane_dev.local.jobs import submit_pdf

    env = {"BATCHLANE_PAGES_PER_CHUNK": "1", "BATCHLANE_CHUNK_SLOTS": "2"}
    stack = stack_factory("time_scale=36000,converse_latency_ms=1500", batch_lane=False, extra_env=env)
    from batchlane.conversion import chunk as module  # the handler's use case (process_admitted_chunk) calls it inside the slot

    stack.registry._module("chunk_processor")  # loaded, as the runtime does before its first call
    real = module.process_chunk
    lock = threading.Lock()
    running: dict[str, int] = {}
    most: dict[str, int] = {}
    finished: list[str] = []

    def counted(svc: Any, job_id: str, chunk_index: int, **kwargs: Any) -> Any:
        owner = job_repo.get_job(svc.db, job_id).owner_id
        with lock:
            running[owner] = running.get(owner, 0) + 1
            most[owner] = max(most.get(owner, 0), running[owner])
        try:
            return real(svc, job_id, chunk_index, **kwargs)
        finally:
            with lock:
                running[owner] -= 1
                finished.append(owner)

    module.process_chunk = counted
    try:
        a_jobs = [str(submit_pdf(services(), make_pdf(4), name=f"a{i}.pdf", owner_id="owner-a")["jobId"]) for i in range(2)]
        wait_until(lambda: most.get("owner-a", 0) >= 1, timeout_s=60, what="A's first chunk")
        b_job = str(submit_pdf(services(), make_pdf(1), name="b.pdf", owner_id="owner-b")["jobId"])
        jobs = [*a_jobs, b_job]
        wait_until(lambda: all(job_repo.get_job(services().db, j).status in ("completed", "failed") for j in jobs), timeout_s=240, what="the jobs")
    finally:
        module.process_chunk = real
    assert [job_repo.get_job(services().db, j).status for j in jobs] == ["completed"] * 3
    assert most["owner-a"] <= 2, f"A ran {most['owner-a']} chunks at once past its share of 2 slots"
    assert finished.index("owner-b") < len(finished) - 1 - finished[::-1].index("owner-a"), "B's chunk ran before A's last one"
