"""The offline stack's process mode (issue 16, part 3): the chunk processor and prepare run in
worker processes, as Lambda runs each invocation in an environment of its own, and a real
job still converts whole through the batch lane and the on-demand path."""

from __future__ import annotations

import os
from typing import Any

import pytest
from batchlib import PAGES, SMALL_LANE_ENV, assert_converted_whole, batch_row, submit, wait_for_job

from batchlane.local.lambda_runtime import Invocation
from batchlane.local.stack import PROCESS_FUNCTIONS
from batchlane.runtime import services

pytestmark = pytest.mark.slow


def test_a_job_converts_whole_with_prepare_and_chunks_in_worker_processes(stack_factory):
    # Given a stack whose chunk processor and prepare run in worker processes
    stack = stack_factory(extra_env=SMALL_LANE_ENV, process_functions=PROCESS_FUNCTIONS)
    ran_in: dict[str, list[int]] = {"chunk_processor": [], "batch_prepare": []}

    def recording(name: str):  # type: ignore[no-untyped-def]
        def interceptor(event: Any, call_real: Any) -> Invocation:
            outcome: Invocation = call_real(event)
            assert not outcome.failed, (outcome.error_type, outcome.error_message)
            ran_in[name].append(outcome.pid)
            return outcome

        return interceptor

    for name in ran_in:
        stack.registry.intercept(name, recording(name))

    # When a job large enough for the batch lane is converted
    job_id, _ = submit(PAGES)
    wait_for_job(services(), job_id, timeout_s=180)

    # Then every page is there once, in order, with its own text, and the money adds up
    assert_converted_whole(job_id)
    assert batch_row(job_id)["end_state"] == "Completed"
    # ... and the work ran in other processes than the stack's
    assert ran_in["batch_prepare"] and ran_in["chunk_processor"]
    assert os.getpid() not in {*ran_in["batch_prepare"], *ran_in["chunk_processor"]}
