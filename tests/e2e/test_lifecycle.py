"""Lifecycle faults end to end on the offline stack (issue 10, points 7, 9, 12 and 13).

A Lambda that dies out of memory once, a Bedrock job still Stopping when the lane gives
up on it, a Bedrock job Bedrock no longer knows, a restart of the offline stack, and a
job big enough to outrun the emulator's old clock.
"""

from __future__ import annotations

from batchlib import PAGES, assert_converted_whole, run_job

from batchlane.local.lambda_runtime import Invocation

FAST = "time_scale=36000,job_hours=0.5"


def test_a_chunk_lambda_dying_out_of_memory_once_is_retried_and_the_job_converts_whole(stack_factory):
    # Step Functions reports an out-of-memory or timed-out Lambda as Lambda.Unknown
    # ("Handle Lambda service exceptions"); the offline Lambda runtime sends that errorType.
    stack = stack_factory(FAST, batch_lane=False)
    failures: list[int] = []
    chunk_one_runs: list[int] = []

    def out_of_memory_once(event, call_real):  # type: ignore[no-untyped-def]
        if event.get("chunkIndex") == 1:
            chunk_one_runs.append(1)
        if not failures and event.get("chunkIndex") == 1:
            failures.append(event["chunkIndex"])
            return Invocation(error_type="Lambda.Unknown", error_message="Runtime exited with error: signal: killed (out of memory)")
        return call_real(event)

    stack.registry.intercept("chunk_processor", out_of_memory_once)
    report = run_job()
    assert failures == [1], "the fault fired"
    assert len(chunk_one_runs) == 2, "chunk 1 ran again after its failure"
    assert_converted_whole(report["job_id"], PAGES)
