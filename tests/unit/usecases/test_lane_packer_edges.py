"""The packer's turn, at its edges (no server): what it answers, the hold it extends, the executions it starts, the
jobs it lets go or sends on-demand for their deadline, and one quota per base model across profiles in one turn."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from usecase_fakes import MODEL, new_job, packed_lane

from batchlane.batch.packer import pack_pool, plan_turn
from batchlane.domain import status as st
from batchlane.domain.limits import estimated_record_bytes
from batchlane.domain.pool import read_budget
from batchlane.pdf import plan_chunks
from batchlane.ports import Services
from batchlane.rows import PooledChunk, PoolRead
from fakes import FakeUnitOfWork
from fakes.jobs import FakeJobs
from fakes.pool import lane_rows

GLOBAL = MODEL.replace("us.", "global.", 1)  # the same base model through another profile


def _tuned(svc: Services, **update: object) -> Services:
    settings = {"batch_conversion_min_records": 1, "batch_pool_window_minutes": 0, **update}
    return dataclasses.replace(svc, settings=svc.settings.model_copy(update=settings))


def _started_lanes(svc: Services, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[str]]]:
    started: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(svc.workflows, "start_batch_lane", lambda lane_id, members: started.append((lane_id, sorted(members))) or "arn")
    return started


def _parked_on(svc: Services, model_id: str, owner: str, *, options: dict[str, object] | None = None) -> str:
    with svc.uow() as uow:
        file_row = uow.jobs.insert_file(owner_id=owner, name="a.pdf", s3_key=f"uploads/{owner}/a.pdf", size_bytes=10)
        job = uow.jobs.insert_job(
            file_id=file_row.id, owner_id=owner, status="waiting_batch", options=options or {}, model_id=model_id, total_pages=60, pages_per_chunk=50,
            chunks=plan_chunks(60, 50),
        )  # fmt: skip
        uow.ledger.place_hold(job_id=job.id, owner_id=owner, amount_usd=Decimal(5), hours=30)
    return job.id


def test_with_the_lane_off_the_packer_packs_nothing_and_says_why(svc_on_fakes: Services) -> None:
    svc = dataclasses.replace(svc_on_fakes, settings=svc_on_fakes.settings.model_copy(update={"batch_conversion_enabled": False}))
    new_job(svc)
    assert pack_pool(svc) == {"claimed": [], "lanes": [], "reason": "lane_off"}


def test_a_packed_lane_is_answered_its_jobs_holds_extended_and_its_execution_started_with_its_members(
    svc_on_fakes: Services, fake_uow: FakeUnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = _tuned(svc_on_fakes)
    started = _started_lanes(svc, monkeypatch)
    a, b = new_job(svc, pages=120), new_job(svc, pages=40, owner="owner-2")

    answer = pack_pool(svc)

    [lane] = answer["lanes"]
    assert answer == {"claimed": sorted([a, b]), "lanes": [lane], "letGo": [], "deadline": [], "waiting": 0}
    assert (lane["modelId"], lane["jobs"], lane["pages"]) == (MODEL, sorted([a, b]), 160)
    assert started == [(lane["laneId"], sorted([a, b]))]
    hours = svc.settings.batch_deadline_hours + svc.settings.batchlane_on_demand_window_hours
    for job_id in (a, b):
        hold = fake_uow.ledger.get_hold(job_id)
        assert hold is not None and hold.expires_at == fake_uow.state.clock.now() + timedelta(hours=hours)


def test_jobs_too_few_to_fill_a_lane_when_the_window_passed_are_let_go_and_resumed_on_demand(
    svc_on_fakes: Services, fake_uow: FakeUnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = _tuned(svc_on_fakes, batch_conversion_min_records=1000)
    started = _started_lanes(svc, monkeypatch)
    job_id = new_job(svc, pages=120)

    answer = pack_pool(svc)

    assert (answer["lanes"], answer["letGo"], answer["claimed"]) == ([], [job_id], [])
    assert lane_rows(fake_uow.state).lane_reason.get(job_id) == "pool_too_small"
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None and job.status == "pending"
    assert ("conversion", job_id) in svc.workflows.started and started == []  # type: ignore[attr-defined]


def test_jobs_still_within_their_window_wait_and_are_counted(svc_on_fakes: Services) -> None:
    svc = _tuned(svc_on_fakes, batch_conversion_min_records=1000, batch_pool_window_minutes=60)
    new_job(svc, pages=120)  # 3 chunks

    answer = pack_pool(svc)

    assert (answer["lanes"], answer["letGo"], answer["waiting"]) == ([], [], 3)


def test_jobs_whose_deadline_is_near_go_on_demand_and_one_that_cannot_does_not_stop_the_others(
    svc_on_fakes: Services, fake_uow: FakeUnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = _tuned(svc_on_fakes, batch_conversion_min_records=1000, batch_pool_window_minutes=60)
    soon = (fake_uow.state.clock.now() + timedelta(minutes=30)).isoformat()
    gone = _parked_on(svc, MODEL, "owner-1", options={"deadline": soon})
    due = _parked_on(svc, MODEL, "owner-2", options={"deadline": soon})
    assert fake_uow.jobs.move_job(gone, st.cancel()) is not None  # it left meanwhile
    real_due = FakeJobs.jobs_due
    monkeypatch.setattr(FakeJobs, "jobs_due", lambda self, *, margin_s: [gone, *real_due(self, margin_s=margin_s)])

    answer = pack_pool(svc)

    assert answer["deadline"] == [due]
    job = fake_uow.jobs.get_job(due)
    assert job is not None and job.status == "pending"
    assert lane_rows(fake_uow.state).lane_reason.get(due) == "deadline"


def test_two_profiles_of_one_base_model_share_its_last_slot_within_one_turn(svc_on_fakes: Services) -> None:
    svc = _tuned(svc_on_fakes, batch_conversion_max_concurrent_jobs=1)
    first, second = _parked_on(svc, MODEL, "owner-1"), _parked_on(svc, GLOBAL, "owner-2")

    answer = pack_pool(svc)

    assert len(answer["lanes"]) == 1, "the second profile's lane would be a second job of the same base model"
    assert answer["claimed"] in ([first], [second])


def test_with_room_for_two_lanes_each_profile_of_one_base_model_gets_one(svc_on_fakes: Services) -> None:
    svc = _tuned(svc_on_fakes, batch_conversion_max_concurrent_jobs=2)
    first, second = _parked_on(svc, MODEL, "owner-1"), _parked_on(svc, GLOBAL, "owner-2")

    answer = pack_pool(svc)

    assert sorted(lane["modelId"] for lane in answer["lanes"]) == sorted([MODEL, GLOBAL])
    assert answer["claimed"] == sorted([first, second])


def test_a_turn_reads_only_what_the_free_slots_of_each_model_can_pack(
    svc_on_fakes: Services, fake_uow: FakeUnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = _tuned(svc_on_fakes, batch_conversion_max_concurrent_jobs=3, batch_conversion_max_records=100)
    running = new_job(svc, pages=60)
    packed_lane(svc, [(running, 0)])  # one of the base model's three slots taken
    new_job(svc, pages=60, owner="owner-2")
    lanes_class = type(fake_uow.lanes)
    real_read = lanes_class.read_pool
    reads: list[tuple[dict[str, int] | None, int | None]] = []

    def spy(self: object, *, budgets: dict[str, int] | None = None, default_budget: int | None = None) -> object:
        reads.append((budgets, default_budget))
        return real_read(self, budgets=budgets, default_budget=default_budget)

    monkeypatch.setattr(lanes_class, "read_pool", spy)

    pack_pool(svc)

    assert reads == [({MODEL: read_budget(2, 100)}, read_budget(3, 100))], "one bounded read: two free slots for the model, three for any other"


class _FixedPool:
    """A pool that answers every bounded read with ``bounded`` and the whole read with ``whole``; what plan_turn
    reads, in order, is recorded as (budgets, default budget)."""

    def __init__(self, in_flight: dict[str, int], bounded: PoolRead, whole: PoolRead) -> None:
        self.reads: list[tuple[dict[str, int] | None, int | None]] = []
        self._in_flight, self._bounded, self._whole = in_flight, bounded, whole

    def in_flight_by_model(self) -> dict[str, int]:
        return dict(self._in_flight)

    def read_pool(self, *, budgets: dict[str, int] | None = None, default_budget: int | None = None) -> PoolRead:
        self.reads.append((budgets, default_budget))
        return self._whole if budgets is None else self._bounded


def _short_then_whole(in_flight: dict[str, int]) -> _FixedPool:
    """Bounded reads come back short (truncated, one small chunk still in its window); the whole read fills a job."""
    short = PoolRead([PooledChunk("young", MODEL, 0, 3, 0.0)], {MODEL: True}, {MODEL: 3}, {MODEL: 1})
    whole = PoolRead([PooledChunk(f"job-{i}", MODEL, 0, 50, 7200.0) for i in range(3)], {MODEL: False}, {MODEL: 50}, {MODEL: 1})
    return _FixedPool(in_flight, short, whole)


def test_a_read_short_at_both_budgets_is_made_whole_and_the_whole_pool_is_planned(svc_on_fakes: Services) -> None:
    settings = svc_on_fakes.settings.model_copy(
        update={"batch_conversion_min_records": 100, "batch_conversion_max_records": 150, "batch_pool_window_minutes": 60, "batch_conversion_max_concurrent_jobs": 3}
    )
    lanes = _short_then_whole({MODEL: 1})

    plans = plan_turn(lanes, settings)  # type: ignore[arg-type]

    free = 3 - 1
    assert lanes.reads == [
        ({MODEL: read_budget(free, 150)}, read_budget(3, 150)),
        ({MODEL: read_budget(free, 150, attempt=1)}, read_budget(3, 150, attempt=1)),
        (None, None),
    ]
    assert read_budget(free, 150, attempt=1) > read_budget(free, 150), "the second read has room for every open job"
    [(model, plan)] = plans
    assert model == MODEL and not plan.short
    assert [[c.job_id for c in job] for job in plan.bedrock_jobs] == [["job-0", "job-1", "job-2"]]


def test_an_unbounded_turn_reads_the_whole_pool_once(svc_on_fakes: Services) -> None:
    lanes = _short_then_whole({})
    settings = svc_on_fakes.settings.model_copy(update={"batch_conversion_min_records": 100, "batch_conversion_max_records": 150})

    [(_, plan)] = plan_turn(lanes, settings, bounded=False)  # type: ignore[arg-type]

    assert lanes.reads == [(None, None)]
    assert len(plan.bedrock_jobs) == 1


def _ripe(job_id: str, pages: int, source_bytes: int | None = None, model: str = MODEL) -> PooledChunk:
    return PooledChunk(job_id, model, 0, pages, 7200.0, source_bytes)


def _settings(svc: Services, **update: object) -> Any:
    base = {"batch_conversion_min_records": 50, "batch_conversion_max_records": 100, "batch_pool_window_minutes": 60, "batch_conversion_max_concurrent_jobs": 1}
    return svc.settings.model_copy(update={**base, **update})


def test_a_job_a_smaller_unread_chunk_could_still_fill_is_not_sent_from_a_truncated_read(svc_on_fakes: Services) -> None:
    # The prefix holds one 80-page chunk; the whole pool also has a 10-page one. By the prefix alone the job is full
    # (no chunk read is small enough for its 20 free records); by the whole pool's smallest chunk it is not.
    prefix = PoolRead([_ripe("a", 80)], {MODEL: True}, {MODEL: 10}, {MODEL: 0})
    whole = PoolRead([_ripe("a", 80), _ripe("b", 10)], {MODEL: False}, {MODEL: 10}, {MODEL: 0})
    lanes = _FixedPool({}, prefix, whole)

    [(_, plan)] = plan_turn(lanes, _settings(svc_on_fakes))  # type: ignore[arg-type]

    assert len(lanes.reads) == 3 and lanes.reads[-1] == (None, None), "undecided at both budgets: the whole pool is read"
    assert [[c.job_id for c in job] for job in plan.bedrock_jobs] == [["a", "b"]]


def test_a_job_a_lighter_unread_chunk_could_still_join_is_not_sent_from_a_truncated_read(svc_on_fakes: Services) -> None:
    # The same in bytes: a 1 MB job cap, a one-page prefix chunk of ~0.8 MB of records, and a light unread
    # chunk that fits beside it; by the prefix alone nothing read could join the job.
    settings = _settings(svc_on_fakes, batch_conversion_max_job_mb=1, batch_conversion_min_records=1)
    heavy, light = _ripe("a", 1, 600_000), _ripe("b", 1, 10_000)
    weigh = estimated_record_bytes
    assert weigh(600_000, 1) + weigh(10_000, 1) < 1_000_000 < 2 * weigh(600_000, 1)
    prefix = PoolRead([heavy], {MODEL: True}, {MODEL: 1}, {MODEL: weigh(10_000, 1)})
    whole = PoolRead([heavy, light], {MODEL: False}, {MODEL: 1}, {MODEL: weigh(10_000, 1)})
    lanes = _FixedPool({}, prefix, whole)

    [(_, plan)] = plan_turn(lanes, settings)  # type: ignore[arg-type]

    assert len(lanes.reads) == 3 and lanes.reads[-1] == (None, None)
    assert [[c.job_id for c in job] for job in plan.bedrock_jobs] == [["a", "b"]]


def test_the_job_size_cap_is_the_setting_in_megabytes(svc_on_fakes: Services) -> None:
    # Two one-page chunks whose records weigh together just over 1 MB of 10**6 bytes (Bedrock's GB quotas are
    # decimal; issue 42.4) by less than a KB go in two Bedrock jobs; a little under it, in one.
    cap, first = 1_000_000, 600_000
    second = next(n for n in range(1, 600_000, 3) if cap < estimated_record_bytes(first, 1) + estimated_record_bytes(n, 1) < cap + 1024)
    settings = _settings(svc_on_fakes, batch_conversion_max_job_mb=1, batch_conversion_min_records=1, batch_conversion_max_concurrent_jobs=2)
    for source, expected in ((second, [["a"], ["b"]]), (second - 3_000, [["a", "b"]])):
        read = PoolRead([_ripe("a", 1, first), _ripe("b", 1, source)], {MODEL: False}, {MODEL: 1}, {MODEL: 0})

        [(_, plan)] = plan_turn(_FixedPool({}, read, read), settings)  # type: ignore[arg-type]

        assert [[c.job_id for c in job] for job in plan.bedrock_jobs] == expected, source


def test_two_profiles_of_a_base_model_with_a_lane_in_flight_share_what_is_left_of_its_quota(svc_on_fakes: Services) -> None:
    # Quota 3, one lane of the base model in flight: the first profile's two full jobs take the two slots left,
    # and the second profile's job waits for the quota.
    chunks = [_ripe("g1", 100, model=GLOBAL), _ripe("g2", 100, model=GLOBAL), _ripe("u1", 100)]
    read = PoolRead(chunks, {GLOBAL: False, MODEL: False}, {GLOBAL: 100, MODEL: 100}, {GLOBAL: 0, MODEL: 0})
    settings = _settings(svc_on_fakes, batch_conversion_max_concurrent_jobs=3)

    plans = dict(plan_turn(_FixedPool({MODEL: 1}, read, read), settings))  # type: ignore[arg-type]

    assert len(plans[GLOBAL].bedrock_jobs) == 2
    assert plans[MODEL].bedrock_jobs == [] and plans[MODEL].why_waiting == "quota"
