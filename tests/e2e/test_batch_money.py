"""The money and the race of the batch lane, exact: what each mutation in docs/testing.md must fail.

Each test compares the ledger with what the Bedrock emulator itself served and wrote
(token counters per lane, manifest.json.out, jobs in flight per model), not with figures
the code under test computed.
"""

from __future__ import annotations

import pytest
from batchlib import PAGES, SMALL_LANE_ENV, assert_converted_whole, newest_lane, submit, wait_for_job, wait_until
from moneylib import assert_lane_bills_the_manifest, assert_ledger_equals_tokens_served, assert_total_is_the_ledger
from test_cancel_process_now import SLOW_BATCH, Gate, api, bedrock_job, file_of, job

from batchlane.runtime import services
from batchlane_dev.local.bedrock.faults import parse_faults

FAST = "time_scale=36000,job_hours=0.5"
NON_BLANK = PAGES - PAGES // 15


@pytest.mark.parametrize("batch_faults", ["", "content_filter_rate=0.3"], ids=["all-accepted", "some-rejected"])
def test_the_ledger_equals_the_tokens_bedrock_served_lane_by_lane(stack_factory, batch_faults):
    # Given batch answers of which some are rejected by the acceptance rule (the runtime's are clean)
    stack = stack_factory(f"{FAST},{batch_faults}".rstrip(","), extra_env=SMALL_LANE_ENV)
    stack.bedrock.set_runtime_faults(parse_faults(FAST))
    # When a job goes through the batch lane
    job_id, _ = submit()
    wait_for_job(services(), job_id, timeout_s=120)
    results = assert_converted_whole(job_id)
    row = newest_lane(job_id)
    on_demand = sum(1 for p in results.values() if p.served_by == "on_demand")
    assert on_demand == row["fallback_count"]
    assert (row["fallback_count"] > 0) == bool(batch_faults), "rejected batch answers must exist in the faulty case, none otherwise"
    # Then the lane bills every record Bedrock returned, used or not, and chunk rows only the runtime's calls
    assert_lane_bills_the_manifest(job_id)
    assert_ledger_equals_tokens_served(stack, [job_id])
    assert_total_is_the_ledger(job_id)


def test_the_packer_never_has_more_bedrock_jobs_in_flight_than_the_model_quota(stack_factory):
    # Given a lane allowed one concurrent job per model, on an account that would accept ten,
    # three jobs parked before any packer runs (the test drives it), and Bedrock jobs of at most
    # one job's pages (so the pool cannot carry them in one)
    env = {
        **SMALL_LANE_ENV,
        "BATCH_CONVERSION_MAX_CONCURRENT_JOBS": "1",
        "BATCHLANE_EMULATED_QUOTAS": '{"max_concurrent_jobs": 10}',
        "BATCH_CONVERSION_MAX_RECORDS": str(PAGES),
    }
    stack = stack_factory(FAST, extra_env=env, schedules=False)
    gate = Gate(stack, "batch_packer", skip_with={"claimed": []})
    job_ids = [submit()[0] for _ in range(3)]
    gate.release()
    # When the packer runs, it forms one lane; the others wait (chunks of the two other jobs) for later runs
    first = stack.registry.invoke("batch_packer", {}).result
    assert (len(first["lanes"]), len(first["claimed"]), first["waiting"]) == (1, 1, 6)

    def all_done() -> bool:
        stack.registry.invoke("batch_packer", {})
        return all(job(j).status in ("completed", "failed") for j in job_ids)

    wait_until(all_done, timeout_s=180, poll_s=0.5, what="the three jobs, one after another")
    # Then each went through the lane, never two Bedrock jobs of the model at a time
    for job_id in job_ids:
        results = assert_converted_whole(job_id)
        assert sum(1 for p in results.values() if p.served_by == "batch") == NON_BLANK
    assert stack.bedrock.stats["jobs_created"] == 3
    assert dict(stack.bedrock.control.peak_active_by_model) == {services().settings.batchlane_model_id: 1}
    assert_ledger_equals_tokens_served(stack, job_ids)


def test_a_lane_closing_after_the_job_settled_updates_its_total(stack_factory):
    # Given two jobs in one running Bedrock job (a shared lane), its collect held back, and one of them
    # processed now: it leaves the lane (the other still waits on it) and converts on-demand at once
    stack = stack_factory(SLOW_BATCH, extra_env={**SMALL_LANE_ENV, "BATCH_CONVERSION_MAX_RECORDS": str(2 * PAGES)}, schedules=False)
    packer = Gate(stack, "batch_packer", skip_with={"claimed": []})
    collect = Gate(stack, "batch_collect")
    leaver, stayer = submit()[0], submit()[0]
    packer.release()
    assert len(stack.registry.invoke("batch_packer", {}).result["lanes"]) == 1, "one lane carries both"
    wait_until(lambda: (b := bedrock_job(stack, leaver)) is not None and b.processed >= 3, what="the Bedrock job part-way")
    status, body = api(stack, "POST", f"/api/v1/files/{file_of(leaver)}/process-now")
    assert status == 200 and (body["action"], body["batchStopRequested"]) == ("left_batch_lane", False), body
    # When its on-demand conversion completes and settles before the shared batch job is billed
    wait_until(lambda: job(leaver).status in ("completed", "failed"), what="the on-demand conversion")
    settled_before = job(leaver).total_cost_usd
    assert newest_lane(leaver)["state"] != "closed", "the lane must close after the settle for this test to mean anything"
    collect.release()
    wait_until(lambda: newest_lane(leaver)["state"] == "closed", timeout_s=120, what="the batch job to be billed")
    wait_for_job(services(), stayer, timeout_s=120)
    # Then the job's total, its hold and its batch cost include the late batch bill (its records, processed and
    # not used: a loss the saving shows), exactly
    billed = assert_lane_bills_the_manifest(leaver)
    assert billed["cost_usd"] > 0
    assert assert_total_is_the_ledger(leaver) == settled_before + billed["cost_usd"]
    assert services().uow().reads.ledger_money(leaver).saving_usd == -billed["cost_usd"], "the unused batch records are the loss"
    assert_converted_whole(stayer)
    assert_ledger_equals_tokens_served(stack, [leaver, stayer])
