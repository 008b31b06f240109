"""The batch pool end to end, through the REAL state-machine files on the offline stack.

Small documents (bulk opt-in, ``batchLane``) wait in the pool until the pool window passes,
then ride together in one Bedrock job (a lane); a big document spans several lanes; jobs of
two models never share one. Each test holds the packer while it submits, so
every document joins the pool before its window starts (pooled_at is set by the packer's
first look), then drives the packer itself (schedules off).

Every test ends with each member converted whole (assert_converted_whole), every lane billing
its own manifest with the members' shares adding up to it (assert_lane_bills_the_manifest),
the ledger equal to the tokens the emulator served, and each job's total its ledger.
"""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from batchlib import assert_converted_whole, lanes, submit, wait_until
from moneylib import assert_lane_bills_its_manifest, assert_lane_bills_the_manifest, assert_ledger_equals_tokens_served, assert_total_is_the_ledger
from test_cancel_process_now import Gate, api, file_of, job

from batchlane.db import ledger
from batchlane.domain.cost import Usage
from batchlane.rows import LedgerRow
from batchlane.runtime import services
from batchlane_dev.local.jobs import upload_pdf
from batchlane_dev.local.pdfgen import make_pdf
from batchlane_dev.report import job_report

SCALE = 36000
FAST = f"time_scale={SCALE},job_hours=0.5"
WINDOW_S = 1.0  # the pool window, in real seconds
BLANK_EVERY = 15
SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
HAIKU = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
BULK = {"batchLane": True}
TERMINAL = ("completed", "failed", "cancelled")


def pool_env(scale: float = SCALE, **extra: str) -> dict[str, str]:
    """Small documents reach the lane only by the bulk opt-in; the pool window is WINDOW_S real seconds."""
    return {
        "BATCH_CONVERSION_MIN_PAGES": "1000",
        "BATCH_CONVERSION_MIN_RECORDS": "10",
        "BATCH_POOL_WINDOW_MINUTES": str(WINDOW_S * scale / 60),
        # At high time scales AWS's 2 h grace is a fraction of a second: keep the overdue stop out of the way.
        "BATCH_CONVERSION_GRACE_HOURS": "24",
        **extra,
    }


def submit_to_the_pool(stack: Any, documents: list[tuple[int, dict[str, Any]]]) -> dict[str, int]:
    """Submit every document with the packer held (its parked events answer "nothing claimed"): all of
    them wait in the pool and none has started its window. Returns {job id: pages}."""
    gate = Gate(stack, "batch_packer", skip_with={"claimed": []})
    jobs = {}
    for pages, options in documents:
        job_id, _ = submit(pages, options=options, blank_every=BLANK_EVERY)
        assert job(job_id).status == "waiting_batch", (job_id, job(job_id).status)
        jobs[job_id] = pages
    # Each park's event (rule job_parked) reaches the packer after the job is parked, through EventBridge:
    # released before it arrived, the packer it wakes packs the pool before the test's own call does (it
    # happened beside a second end-to-end run). Released once the gate has answered one per document.
    wait_until(lambda: gate.calls >= len(jobs), timeout_s=60, what="every parked event to reach the held packer")
    gate.release()
    return jobs


def pack(stack: Any) -> dict[str, Any]:
    """The packer's first look starts every job's window; once it has passed, the packer packs."""
    first = stack.registry.invoke("batch_packer", {}).result
    assert first["letGo"] == [], first
    time.sleep(WINDOW_S * 1.3)
    return dict(stack.registry.invoke("batch_packer", {}).result)


def wait_all(stack: Any, job_ids: list[str], *, timeout_s: float = 180, each_poll: tuple[str, ...] = ()) -> None:
    def done() -> bool:
        for function in each_poll:
            stack.registry.invoke(function, {})
        return all(job(j).status in TERMINAL for j in job_ids)

    wait_until(done, timeout_s=timeout_s, poll_s=0.3, what="every job to finish")
    wait_until(all_lanes_closed, timeout_s=60, what="every lane to close")


def all_lanes_closed() -> bool:
    return services().db.one("SELECT count(*) AS n FROM lanes WHERE state <> 'closed'")["n"] == 0


def served(job_id: str, pages: int, lane: str) -> int:
    results = assert_converted_whole(job_id, pages, BLANK_EVERY)
    return sum(1 for p in results.values() if p.served_by == lane)


def non_blank(pages: int) -> int:
    return pages - pages // BLANK_EVERY


def assert_whole_and_exact(stack: Any, jobs: dict[str, int], *, extra_job_ids: tuple[str, ...] = ()) -> None:
    """Every member converted whole, every lane bills its manifest, the ledger is the tokens served
    (summed over ``jobs`` and ``extra_job_ids``: members that left, e.g. cancelled)."""
    for job_id, pages in jobs.items():
        assert_converted_whole(job_id, pages, BLANK_EVERY)
        if lanes(job_id):
            assert_lane_bills_the_manifest(job_id)
        assert_total_is_the_ledger(job_id)
    assert_ledger_equals_tokens_served(stack, [*jobs, *extra_job_ids])


def all_lanes() -> list[dict[str, Any]]:
    return services().db.run("SELECT * FROM lanes ORDER BY id")


def shares(job_id: str) -> list[LedgerRow]:
    return [r for r in ledger.PgLedger(services().db).ledger_rows(job_id) if r.source == "batch_share"]


# -- 1 --------------------------------------------------------------------------------------
def test_many_small_documents_ride_in_one_bedrock_job(stack_factory):
    stack = stack_factory(FAST, extra_env=pool_env(), schedules=False)
    rng = random.Random(13)
    jobs = submit_to_the_pool(stack, [(rng.randint(5, 10), BULK) for _ in range(20)])
    packed = pack(stack)
    assert len(packed["lanes"]) == 1 and sorted(packed["claimed"]) == sorted(jobs), packed
    wait_all(stack, list(jobs))

    [lane] = all_lanes()
    assert lane["member_count"] == 20 and lane["end_state"] == "Completed"
    assert lane["record_count"] == sum(jobs.values()) == lane["accepted_count"]
    assert stack.bedrock.stats["jobs_created"] == 1 and len(stack.bedrock.jobs) == 1
    for job_id, pages in jobs.items():
        assert served(job_id, pages, "batch") == pages and served(job_id, pages, "on_demand") == 0
        report = job_report(services(), job_id)
        assert report["batch"]["bedrock_jobs"] == 1 and report["batch"]["lane_members"] == [20]
        assert report["saving_pct"] == pytest.approx(50, abs=1)
    assert_whole_and_exact(stack, jobs)
    # each job pays for its own tokens (issue 21.5), the shares add up to the lane's bill to the last
    # micro-dollar, and together they carry exactly the tokens the emulated Bedrock job served
    lane_cost = Decimal(lane["cost_usd"])
    by_job = {job_id: shares(job_id) for job_id in jobs}
    assert all(len(rows) == 1 for rows in by_job.values())
    assert sum(rows[0].cost_usd for rows in by_job.values()) == lane_cost
    [bedrock_job] = stack.bedrock.jobs.values()
    assert sum(rows[0].input_tokens for rows in by_job.values()) == bedrock_job.input_tokens
    assert sum(rows[0].output_tokens for rows in by_job.values()) == bedrock_job.output_tokens
    model = services().settings.batchlane_model_id
    for job_id, pages in jobs.items():
        [share] = by_job[job_id]
        own = services().prices.cost(model, Usage(share.input_tokens, share.output_tokens), batch=True)
        assert abs(share.cost_usd - own) <= Decimal("0.00001")
        assert share.metadata["records"] == pages


# -- 2 --------------------------------------------------------------------------------------
def test_one_document_split_over_several_bedrock_jobs_resumes_after_the_last(stack_factory):
    # 60 pages in 6 chunks of 10 (4 blank pages), at most 20 records a Bedrock job: 3 lanes of 2 chunks
    stack = stack_factory(
        FAST, extra_env=pool_env(BATCHLANE_PAGES_PER_CHUNK="10", BATCH_CONVERSION_MAX_RECORDS="20", BATCH_CONVERSION_MIN_PAGES="40"), schedules=False
    )
    seen: list[tuple[str, int]] = []

    def watch_resume(event, call_real):  # type: ignore[no-untyped-def]
        outcome = call_real(event)
        open_lanes = services().db.one("SELECT count(*) AS n FROM lanes WHERE state <> 'closed'")["n"]
        seen.append((job(job_id).status, int(open_lanes)))
        return outcome

    stack.registry.intercept("batch_resume", watch_resume)
    jobs = submit_to_the_pool(stack, [(60, {})])
    [job_id] = jobs
    packed = stack.registry.invoke("batch_packer", {}).result  # full lanes go at once, no window
    assert len(packed["lanes"]) == 3 and packed["waiting"] == 0, packed
    wait_all(stack, [job_id])

    carried = lanes(job_id)
    assert len(carried) == 3 and all(lane["member_count"] == 1 for lane in carried)
    assert stack.bedrock.stats["jobs_created"] == 3
    assert served(job_id, 60, "batch") == non_blank(60) and served(job_id, 60, "on_demand") == 0
    # the job stayed parked while any lane was open; it resumed once, after the last
    assert len(seen) == 3
    assert all(status == "waiting_batch" for status, open_lanes in seen if open_lanes > 0), seen
    assert len(shares(job_id)) == 3
    assert_whole_and_exact(stack, jobs)


# -- 3 --------------------------------------------------------------------------------------
def test_jobs_of_two_models_ride_in_one_lane_per_model(stack_factory):
    stack = stack_factory(FAST, extra_env=pool_env(BATCHLANE_MODEL_IDS=f"{SONNET},{HAIKU}"), schedules=False)
    documents = [(8, {**BULK, "modelId": SONNET if i % 2 else HAIKU}) for i in range(6)]
    jobs = submit_to_the_pool(stack, documents)
    packed = pack(stack)
    assert sorted(lane["modelId"] for lane in packed["lanes"]) == sorted([SONNET, HAIKU]), packed
    wait_all(stack, list(jobs))

    by_model = {lane["model_id"]: lane for lane in all_lanes()}
    assert set(by_model) == {SONNET, HAIKU}
    for lane in by_model.values():
        assert (lane["member_count"], lane["end_state"], lane["reason"]) == (3, "Completed", None), lane
    assert sorted(j.model_id for j in stack.bedrock.jobs.values()) == sorted([SONNET, HAIKU])
    for job_id, pages in jobs.items():
        assert served(job_id, pages, "batch") == pages
        [lane] = lanes(job_id)
        assert lane["model_id"] == job(job_id).model_id
    assert_whole_and_exact(stack, jobs)


# -- 4 --------------------------------------------------------------------------------------
HELD = "time_scale=7200,job_hours=20"  # a Bedrock job takes ~10 s of real time: long enough to act on it part-way


def _shared_lane_running(stack_factory: Any, members: int = 3) -> tuple[Any, dict[str, int]]:
    """``members`` documents of 8 pages in one lane whose Bedrock job is running (it takes ~10 s)."""
    stack = stack_factory(HELD, extra_env=pool_env(7200), schedules=False)
    jobs = submit_to_the_pool(stack, [(8, BULK) for _ in range(members)])
    packed = pack(stack)
    assert len(packed["lanes"]) == 1
    [lane] = all_lanes()
    wait_until(
        lambda: (
            (row := services().db.one("SELECT * FROM lanes WHERE id = :id", id=lane["id"]))["state"] == "submitted"
            and (b := stack.bedrock.jobs.get(row["bedrock_job_arn"])) is not None
            and b.status == "InProgress"
        ),
        what="the shared Bedrock job running",
    )
    return stack, jobs


def test_cancel_of_one_member_leaves_the_shared_lane_running(stack_factory):
    stack, jobs = _shared_lane_running(stack_factory)
    cancelled, *others = list(jobs)
    status, body = api(stack, "POST", f"/api/v1/files/{file_of(cancelled)}/cancel")
    assert status == 200, body
    assert body.get("batchStopRequested") in (None, False), body
    wait_all(stack, list(jobs))

    [row] = all_lanes()
    assert row["end_state"] == "Completed" and row["reason"] is None, "the lane ran on for the others"
    assert stack.bedrock.stats["stop_requests"] == 0
    assert job(cancelled).status == "cancelled"
    [share] = shares(cancelled)
    assert share.cost_usd > 0, "the cancelled job's records were sent: its share is billed to it"
    assert Decimal(job(cancelled).total_cost_usd) == share.cost_usd, "what its records cost is its total, as its owner's budget counts it"
    for job_id in others:
        assert served(job_id, 8, "batch") == 8
    assert_whole_and_exact(stack, {j: 8 for j in others}, extra_job_ids=(cancelled,))
    assert_lane_bills_its_manifest(row)


def test_process_now_of_one_member_converts_it_on_demand_and_the_others_from_batch(stack_factory):
    stack, jobs = _shared_lane_running(stack_factory)
    hurried, *others = list(jobs)
    status, body = api(stack, "POST", f"/api/v1/files/{file_of(hurried)}/process-now")
    assert status == 200 and body["resumed"] is True and body["batchStopRequested"] is False, body
    wait_until(lambda: job(hurried).status == "completed", what="the on-demand conversion")
    wait_all(stack, list(jobs))

    [row] = all_lanes()
    assert row["end_state"] == "Completed" and stack.bedrock.stats["stop_requests"] == 0
    assert served(hurried, 8, "on_demand") == 8
    for job_id in others:
        assert served(job_id, 8, "batch") == 8
    [share] = shares(hurried)
    assert share.cost_usd > 0, "its records rode: it pays its share, on top of its on-demand pages"
    assert_whole_and_exact(stack, jobs)


def test_every_member_leaving_stops_the_lane_and_bills_it_once(stack_factory):
    stack, jobs = _shared_lane_running(stack_factory, members=2)
    cancelled, hurried = list(jobs)
    status, body = api(stack, "POST", f"/api/v1/files/{file_of(cancelled)}/cancel")
    assert status == 200, body
    status, body = api(stack, "POST", f"/api/v1/files/{file_of(hurried)}/process-now")
    assert status == 200 and body["batchStopRequested"] is True, body
    wait_all(stack, list(jobs))

    [row] = all_lanes()
    assert row["end_state"] == "Stopped" and row["reason"] == "process_now"
    assert stack.bedrock.jobs[row["bedrock_job_arn"]].status == "Stopped"
    assert len(services().db.run("SELECT * FROM cost_ledger WHERE source = 'batch'")) == 1, "billed once"
    assert job(cancelled).status == "cancelled"
    assert served(hurried, 8, "on_demand") == 8
    assert_whole_and_exact(stack, {hurried: 8}, extra_job_ids=(cancelled,))
    assert_lane_bills_its_manifest(row)


# -- 5 --------------------------------------------------------------------------------------
def _let_go_by_the_pool(stack: Any, jobs: dict[str, int]) -> Any:
    first = stack.registry.invoke("batch_packer", {}).result
    assert first["lanes"] == [] and first["letGo"] == [] and first["waiting"] == 3
    time.sleep(WINDOW_S * 1.3)
    return stack.registry.invoke("batch_packer", {})


def _assert_on_demand_for_pool_too_small(stack: Any, jobs: dict[str, int]) -> None:
    assert all_lanes() == [] and not stack.bedrock.jobs
    for job_id, pages in jobs.items():
        assert served(job_id, pages, "on_demand") == pages
        report = job_report(services(), job_id)
        assert report["batch"]["reason"] == "pool_too_small" and report["batch"]["cost_usd"] == 0
    assert services().db.run("SELECT * FROM cost_ledger WHERE backend = 'batch'") == []
    assert_whole_and_exact(stack, jobs)


def test_too_few_records_after_the_window_send_the_jobs_on_demand(stack_factory):
    stack = stack_factory(FAST, extra_env=pool_env(BATCH_CONVERSION_MIN_RECORDS="100"), schedules=False)
    jobs = submit_to_the_pool(stack, [(6, BULK) for _ in range(3)])
    packed = _let_go_by_the_pool(stack, jobs)
    assert not packed.failed, packed
    assert packed.result["lanes"] == [] and sorted(packed.result["letGo"]) == sorted(jobs), packed.result
    left = services().db.run("SELECT id, status, pool_left_at, lane_reason FROM large_conversion_jobs")
    assert all(r["pool_left_at"] is not None and r["lane_reason"] == "pool_too_small" for r in left), left
    # the packer resumes them on-demand at once (the stranded-job recovery is only the net under it)
    assert all(r["status"] != "waiting_batch" for r in left), left
    wait_all(stack, list(jobs))
    _assert_on_demand_for_pool_too_small(stack, jobs)


# -- 6 --------------------------------------------------------------------------------------
def test_the_quota_holds_the_second_lane_until_the_first_ends(stack_factory):
    stack = stack_factory(
        FAST,
        extra_env=pool_env(
            BATCH_CONVERSION_MAX_CONCURRENT_JOBS="1", BATCH_CONVERSION_MAX_RECORDS="40", BATCHLANE_EMULATED_QUOTAS='{"max_concurrent_jobs": 10}'
        ),
        schedules=False,
    )
    jobs = submit_to_the_pool(stack, [(10, BULK) for _ in range(8)])  # 80 records: two full lanes of 40
    first = stack.registry.invoke("batch_packer", {}).result
    assert len(first["lanes"]) == 1 and first["waiting"] == 4, first
    wait_all(stack, list(jobs), each_poll=("batch_packer",))

    carried = all_lanes()
    assert len(carried) == 2 and [lane["member_count"] for lane in carried] == [4, 4]
    assert all(lane["end_state"] == "Completed" for lane in carried)
    assert carried[1]["submitted_at"] >= carried[0]["closed_at"], "the second waited for the first"
    assert stack.bedrock.stats["jobs_created"] == 2
    assert dict(stack.bedrock.control.peak_active_by_model) == {services().settings.batchlane_model_id: 1}
    for job_id, pages in jobs.items():
        assert served(job_id, pages, "batch") == pages
    assert_whole_and_exact(stack, jobs)


# -- 7 --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "faults,end_state",
    [
        ("record_error_rate=0.25", "PartiallyCompleted"),
        ("job_outcome=failed", "Failed"),
        ("job_outcome=expired", "Expired"),
        ("job_outcome=stopped", "Stopped"),
        ("drop_terminal_event=1", "Completed"),
        ("duplicate_events=1", "Completed"),
    ],
)
def test_a_shared_lane_with_every_bedrock_outcome_converts_every_member_whole(stack_factory, faults, end_state):
    stack = stack_factory(f"{FAST},{faults}", extra_env=pool_env(), schedules=False)
    jobs = submit_to_the_pool(stack, [(8, BULK) for _ in range(3)])
    packed = pack(stack)
    assert len(packed["lanes"]) == 1
    # without the terminal event only the sweeper ends the wait
    wait_all(stack, list(jobs), each_poll=("batch_sweeper",) if "drop_terminal_event" in faults else ())

    [row] = all_lanes()
    assert row["member_count"] == 3 and row["end_state"] == end_state
    if "drop_terminal_event" in faults:
        assert stack.bedrock.events.dropped >= 1
    if "duplicate_events" in faults:
        assert stack.registry.calls["batch_callback"] >= 2 * 4
    fallback = 0
    for job_id, pages in jobs.items():
        fallback += served(job_id, pages, "on_demand")
    assert fallback == row["fallback_count"] and (fallback > 0) == (end_state not in ("Completed",))
    assert len(services().db.run("SELECT * FROM cost_ledger WHERE source = 'batch'")) == 1
    assert_whole_and_exact(stack, jobs)


# -- deadlines ------------------------------------------------------------------------------
def test_a_deadline_coming_near_pulls_its_member_out_of_a_running_shared_lane(stack_factory):
    stack, jobs = _shared_lane_running(stack_factory)
    hurried, *others = list(jobs)
    # Its deadline comes within the margin (2 emulated hours) while the shared Bedrock job still runs
    soon = (datetime.now(UTC) + timedelta(seconds=0.5)).isoformat()
    services().db.run(
        "UPDATE large_conversion_jobs SET options = options || jsonb_build_object('deadline', CAST(:d AS text)) WHERE id = CAST(:id AS uuid)",
        d=soon,
        id=hurried,
    )
    packed = stack.registry.invoke("batch_packer", {}).result
    assert packed["deadline"] == [hurried], packed
    wait_until(lambda: job(hurried).status == "completed", what="the hurried member, on-demand")
    wait_all(stack, list(jobs))

    [row] = all_lanes()
    assert row["end_state"] == "Completed" and stack.bedrock.stats["stop_requests"] == 0, "the others keep their Bedrock job"
    assert served(hurried, 8, "on_demand") == 8
    for job_id in others:
        assert served(job_id, 8, "batch") == 8
    assert job_report(services(), hurried)["batch"]["reason"] == "deadline"
    assert_whole_and_exact(stack, jobs)


def test_a_deadline_without_room_for_a_batch_turnaround_goes_on_demand_at_once(stack_factory):
    stack_factory(FAST, extra_env=pool_env(), schedules=False)
    # a turnaround is the 24 h timeout + 24 h grace, plus the 2 h margin: 50 emulated hours
    # (5 s of real time at this scale): a deadline 3 s away leaves none
    near = (datetime.now(UTC) + timedelta(seconds=3)).isoformat()
    far = (datetime.now(UTC) + timedelta(days=30)).isoformat()
    hurried, _ = submit(8, options={**BULK, "deadline": near}, blank_every=BLANK_EVERY)
    patient, _ = submit(8, options={**BULK, "deadline": far}, blank_every=BLANK_EVERY)
    assert job(hurried).status != "waiting_batch", "no room for the batch lane: it never parks"
    assert job(patient).status == "waiting_batch"
    wait_until(lambda: job(hurried).status == "completed", what="the hurried job, on-demand")
    assert served(hurried, 8, "on_demand") == 8


def test_a_deadline_already_past_is_refused(stack_factory):
    stack = stack_factory(FAST, extra_env=pool_env(), schedules=False)
    file_id = upload_pdf(services(), make_pdf(8), name="late.pdf", owner_id="tester")
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    status, body = api(stack, "POST", f"/api/v1/files/{file_id}/convert", {"options": {**BULK, "deadline": past}})
    assert (status, body["error"]["code"]) == (400, "DEADLINE_PAST") and "options.deadline" in body["error"]["message"], body
    assert services().db.one("SELECT count(*) AS n FROM large_conversion_jobs WHERE file_id = CAST(:id AS uuid)", id=file_id)["n"] == 0
