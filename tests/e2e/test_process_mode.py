"""The offline stack's process mode (issue 16, part 3): job creation, the chunk processor,
prepare and assembly run in worker processes, as Lambda runs each invocation in an environment of its own,
and a real job still converts whole through the batch lane and the on-demand path. And part 2
end to end: a small document under an idle, paced quota goes one page a request."""

from __future__ import annotations

import os
from typing import Any

import pytest
from batchlib import PAGES, SMALL_LANE_ENV, assert_converted_whole, newest_lane, submit, wait_for_job

from batchlane.db import ledger
from batchlane.runtime import services
from batchlane_dev.local.lambda_runtime import Invocation
from batchlane_dev.local.stack import PROCESS_FUNCTIONS

pytestmark = pytest.mark.slow


def test_a_job_converts_whole_with_prepare_and_chunks_in_worker_processes(stack_factory):
    # Given a stack whose chunk processor, prepare and assembly run in worker processes
    stack = stack_factory(extra_env=SMALL_LANE_ENV, process_functions=PROCESS_FUNCTIONS)
    ran_in: dict[str, list[int]] = {"job_create": [], "chunk_processor": [], "batch_prepare": [], "assemble": []}

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
    assert newest_lane(job_id)["end_state"] == "Completed"
    # ... and the work ran in other processes than the stack's
    assert all(ran_in.values()), ran_in
    assert os.getpid() not in {pid for pids in ran_in.values() for pid in pids}


def test_a_small_document_under_an_idle_quota_goes_one_page_a_request_all_at_once(stack_factory):
    # Given an account paced at 40 a minute with a burst of 19, idle: 20 requests may start now
    pace = {"BATCHLANE_ONDEMAND_RPM": "40", "BATCHLANE_ONDEMAND_BURST": "19"}
    stack = stack_factory("", batch_lane=False, extra_env=pace, process_functions=PROCESS_FUNCTIONS)
    # When a 10-page document is converted
    job_id, _ = submit(10, blank_every=0)
    wait_for_job(services(), job_id, timeout_s=180)
    # Then it converts whole, each page in a request of its own (not 5 + 5), and the row says why
    assert_converted_whole(job_id, pages=10, blank_every=0)
    assert stack.bedrock.stats["converse_ok"] == 10
    # One row per run of the chunk: on a loaded machine a run can end at its invocation's deadline or lose its lease
    # and the chunk continues in a second run (a CI run saw two rows); each page is still one request, sent once.
    rows = [r for r in ledger.PgLedger(services().db).ledger_rows(job_id) if r.source == "chunk"]
    assert rows and rows[0].metadata["startsFree"] == 20, [r.metadata for r in rows]
    assert {r.metadata["pagesPerRequest"] for r in rows} == {1}, [r.metadata for r in rows]
    assert sum(r.metadata["requests"] for r in rows) == 10, [r.metadata for r in rows]
