"""Fair share by owner on the offline stack: one user's many jobs never hold back another's one.

Issue 15 "One user can starve the others". Order of service is asserted (which jobs the
packer takes in its first round), never time.
"""

from __future__ import annotations

from batchlib import SMALL_LANE_ENV, wait_until
from test_cancel_process_now import FAST, Gate

from batchlane.db import jobs as job_repo
from batchlane.runtime import services
from batchlane_dev.local.jobs import submit_pdf
from batchlane_dev.local.pdfgen import make_pdf

PAGES = 40  # over SMALL_LANE_ENV's 40-page minimum: every job parks for the batch lane


def park(owner: str, name: str) -> str:
    created = submit_pdf(services(), make_pdf(PAGES), name=name, owner_id=owner)
    assert created["status"] == "waiting_batch", created
    return str(created["jobId"])


def test_a_user_with_many_parked_jobs_does_not_delay_another_users_one(stack_factory):
    # Given a batch quota of 2 concurrent Bedrock jobs of one document each (40 records: the pool cannot
    # carry them all in one), and the packer held while the jobs park
    env = {**SMALL_LANE_ENV, "BATCH_CONVERSION_MAX_CONCURRENT_JOBS": "2", "BATCH_CONVERSION_MAX_RECORDS": str(PAGES)}
    stack = stack_factory(FAST, extra_env=env, schedules=False)
    gate = Gate(stack, "batch_packer", skip_with={"claimed": []})
    # user A parks five jobs, then user B parks one
    a_jobs = [park("user-a", f"a{i}.pdf") for i in range(5)]
    b_job = park("user-b", "b.pdf")
    gate.release()
    # When the packer runs
    first = stack.registry.invoke("batch_packer", {}).result
    # Then its first round serves A's oldest job and B's job: B does not wait behind A's other four
    assert sorted(first["claimed"]) == sorted([a_jobs[0], b_job]), first
    assert [lane["jobs"] for lane in first["lanes"]] == [[a_jobs[0]], [b_job]], "in turns: A's first, then B's"
    # And B's job converts through the lane
    wait_until(lambda: job_repo.PgJobs(services().db).get_job(b_job).status == "completed", timeout_s=120, what="B's conversion")
    # and the next free place goes to A's next job, in A's own order
    second = wait_until(lambda: stack.registry.invoke("batch_packer", {}).result["lanes"], timeout_s=120, what="the next claim")
    assert second[0]["jobs"] == [a_jobs[1]], second
