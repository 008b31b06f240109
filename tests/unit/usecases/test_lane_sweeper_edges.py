"""The sweeper's tally and its nets, at their edges (no server): every count it answers is its own, one lane's failure
or the bucket's refusal costs one error and stops nothing, an orphan is collected only once nobody can still be waiting."""

from __future__ import annotations

import dataclasses
import json
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from usecase_fakes import FakeBatchJobs, MemoryStore, Parked, backdate_lane, lane_row, parked_job

from batchlane.batch import sweeper as sweeper_module
from batchlane.batch.submit import submit_batch_job
from batchlane.batch.sweeper import sweep
from batchlane.batch.wait import register_wait
from batchlane.ports import Services
from fakes import FakeUnitOfWork
from fakes.pool import lane_rows

QUIET = {
    "woken": 0,
    "overdue": 0,
    "orphansCollected": 0,
    "adoptedStuck": 0,
    "lost": 0,
    "billedStopped": 0,
    "abandonedStuck": 0,
    "errors": 0,
    "membersPurged": 0,
}


@pytest.fixture
def svc(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> Services:
    """The fake clock on the wall clock's time: the sweeper compares the rows' times with time.time()."""
    fake_uow.state.clock.at = datetime.now(UTC)
    return svc_on_fakes


def _bedrock(svc: Services) -> FakeBatchJobs:
    assert isinstance(svc.batch_jobs, FakeBatchJobs)
    return svc.batch_jobs


def _submitted(svc: Services, **job: Any) -> tuple[Parked, str]:
    parked = parked_job(svc, **job)
    return parked, str(submit_batch_job(svc, parked.lane_id)["jobArn"])


def test_a_sweep_with_nothing_to_do_answers_every_count_as_zero(svc: Services) -> None:
    assert sweep(svc) == QUIET


def test_lanes_whose_jobs_bedrock_no_longer_knows_are_counted_lost_one_each(svc: Services) -> None:
    for _ in range(2):
        _, arn = _submitted(svc)
        del _bedrock(svc).jobs[arn]  # Bedrock forgot it

    assert sweep(svc)["lost"] == 2


def test_every_waiting_lane_whose_job_ended_is_woken(svc: Services) -> None:
    for token in ("token-1", "token-2"):
        parked, arn = _submitted(svc)
        register_wait(svc, parked.lane_id, token)
        _bedrock(svc).jobs[arn].status = "Completed"

    assert sweep(svc)["woken"] == 2


def test_every_overdue_lane_is_counted(svc: Services) -> None:
    for _ in range(2):
        parked, arn = _submitted(svc)
        _bedrock(svc).jobs[arn].status = "InProgress"
        backdate_lane(svc, parked.lane_id, deadline=timedelta(minutes=1))

    assert sweep(svc) == QUIET | {"overdue": 2}


@pytest.mark.parametrize(("seen_ago", "collected"), [(timedelta(seconds=590), False), (timedelta(seconds=610), True)])
def test_a_terminal_lane_nobody_waits_on_is_collected_only_ten_minutes_after_its_end_was_first_seen(
    svc: Services, fake_uow: FakeUnitOfWork, seen_ago: timedelta, collected: bool
) -> None:
    parked, arn = _submitted(svc)
    _bedrock(svc).jobs[arn].status = "Completed"
    fake_uow.state.clock.at = datetime.now(UTC) - seen_ago  # the sweep that first sees the end stamps it then

    answer = sweep(svc)

    assert answer["orphansCollected"] == (1 if collected else 0)
    assert lane_row(svc, parked.lane_id).state == ("closed" if collected else "submitted")


def test_an_orphan_that_forms_a_retry_batch_leaves_its_start_to_the_packer(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    fake_uow.state.clock.at = datetime.now(UTC)
    svc = dataclasses.replace(svc_on_fakes, settings=svc_on_fakes.settings.model_copy(update={"batch_conversion_min_records": 2}))
    parked, arn = _submitted(svc, records=2)
    manifest_key = lane_row(svc, parked.lane_id).manifest_key
    assert manifest_key is not None and isinstance(svc.store, MemoryStore)
    manifest = svc.store.get_json(manifest_key)
    shard = b"".join(json.dumps({"recordId": rid, "modelInput": {}}).encode() + b"\n" for rid in manifest["promptHashes"])
    svc.store.put_bytes("batch/in/shard.jsonl", shard)
    svc.store.put_json(manifest_key, {**manifest, "shards": [{"key": "batch/in/shard.jsonl", "bytes": len(shard)}]})
    row = lane_row(svc, parked.lane_id)
    assert row.output_uri is not None
    out = row.output_uri.removeprefix(f"s3://{svc.store.bucket}/").rstrip("/") + "/" + arn.rsplit("/", 1)[-1] + "/x.jsonl.out"
    throttled = [{"recordId": rid, "error": {"errorCode": 429, "errorMessage": "ThrottlingException"}} for rid in ("m0c0p1", "m0c1p51")]
    svc.store.put_bytes(out, "\n".join(json.dumps(t) for t in throttled).encode())
    _bedrock(svc).jobs[arn].status = "Completed"
    fake_uow.state.clock.at = datetime.now(UTC) - timedelta(hours=1)

    assert sweep(svc)["orphansCollected"] == 1

    assert [m for m in svc.uow().lanes.rows_waiting() if m.retry_of is not None] == [] and len(lane_rows(fake_uow.state).rows) == 2
    assert [kind for kind, _ in svc.workflows.started if kind == "batch"] == []  # type: ignore[attr-defined]


def test_every_stuck_prepare_is_counted_adopted_or_abandoned(svc: Services) -> None:
    adopted: list[str] = []
    for _ in range(2):
        parked = parked_job(svc)
        backdate_lane(svc, parked.lane_id, created_at=timedelta(hours=3))
        adopted.append(parked.lane_id)
    for _ in range(2):
        parked = parked_job(svc)
        backdate_lane(svc, parked.lane_id, created_at=timedelta(hours=3))
    for lane_id in adopted:  # a submit that created the Bedrock job but never recorded it
        submit_batch_job(svc, lane_id)
        backdate_lane(svc, lane_id, created_at=timedelta(hours=3))
        uow = svc.uow()
        assert isinstance(uow, FakeUnitOfWork)
        row = lane_row(svc, lane_id)
        lane_rows(uow.state).rows[row.id] = replace(row, state="preparing", bedrock_job_arn=None)

    answer = sweep(svc)

    assert (answer["adoptedStuck"], answer["abandonedStuck"]) == (2, 2)


def test_deleted_members_are_purged_and_a_bucket_that_refuses_costs_one_error(svc: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sweeper_module, "purge_deleted_members", lambda svc: 3)
    assert sweep(svc) == QUIET | {"membersPurged": 3}

    def refuse(svc: Services) -> int:
        raise RuntimeError("AccessDenied")

    monkeypatch.setattr(sweeper_module, "purge_deleted_members", refuse)
    assert sweep(svc) == QUIET | {"errors": 1}


def test_one_lane_that_fails_costs_one_error_and_the_others_are_swept(svc: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    broken, broken_arn = _submitted(svc)
    _bedrock(svc).jobs[broken_arn].status = "InProgress"
    backdate_lane(svc, broken.lane_id, deadline=timedelta(minutes=1))
    other, other_arn = _submitted(svc)
    _bedrock(svc).jobs[other_arn].status = "InProgress"
    backdate_lane(svc, other.lane_id, deadline=timedelta(minutes=1))
    real_stop = sweeper_module.stop_batch_job
    swept: list[str] = []

    def stop(svc: Services, lane_id: str, *, reason: str) -> bool:
        swept.append(lane_id)
        if lane_id == broken.lane_id:
            raise RuntimeError("boom")
        return real_stop(svc, lane_id, reason=reason)

    monkeypatch.setattr(sweeper_module, "stop_batch_job", stop)

    answer = sweep(svc)

    assert answer["errors"] == 1 and answer["overdue"] == 2
    assert sorted(swept) == sorted([broken.lane_id, other.lane_id])
    assert _bedrock(svc).stops == [other_arn]


def test_the_sweep_reports_jobs_past_their_deadline_and_live_jobs_by_state(svc: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    parked_job(svc)
    parked_job(svc)
    added: list[tuple[str, str, float]] = []
    singles: list[dict[str, Any]] = []
    monkeypatch.setattr(sweeper_module.metrics, "add_metric", lambda *, name, unit, value: added.append((name, unit, value)))

    class Single:
        def __init__(self, **kwargs: Any) -> None:
            self.seen = dict(kwargs)
            singles.append(self.seen)

        def add_dimension(self, *, name: str, value: str) -> None:
            self.seen["dimension"] = (name, value)

    @contextmanager
    def single_metric(**kwargs: Any) -> Any:
        yield Single(**kwargs)

    monkeypatch.setattr(sweeper_module, "single_metric", single_metric)
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")

    sweep(svc)

    assert added == [("JobsWaitingPastDeadline", "Count", 0)]
    assert singles == [
        {
            "name": "JobsByState",
            "unit": sweeper_module.MetricUnit.Count,
            "value": 2,
            "namespace": sweeper_module.metrics.namespace,
            "dimension": ("State", "waiting_batch"),
        }
    ]

    singles.clear()
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "TRUE")  # offline: nothing printed to stdout
    sweep(svc)
    assert singles == []


def test_errors_add_up_over_failing_lanes_and_a_refused_purge(svc: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    for _ in range(2):
        parked, arn = _submitted(svc)
        _bedrock(svc).jobs[arn].status = "InProgress"
        backdate_lane(svc, parked.lane_id, deadline=timedelta(minutes=1))

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("refused")

    monkeypatch.setattr(sweeper_module, "stop_batch_job", fail)
    monkeypatch.setattr(sweeper_module, "purge_deleted_members", fail)

    assert sweep(svc)["errors"] == 3


def test_every_orphan_and_every_stopped_lane_is_counted(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    for _ in range(2):
        _, arn = _submitted(svc)
        _bedrock(svc).jobs[arn].status = "Completed"
    for _ in range(2):
        parked, arn = _submitted(svc)
        _bedrock(svc).jobs[arn].status = "InProgress"
        svc.uow().lanes.mark_stopping(parked.lane_id, reason="collect_failed")
        _bedrock(svc).jobs[arn].status = "Stopped"
    fake_uow.state.clock.at = datetime.now(UTC) - timedelta(hours=1)

    answer = sweep(svc)

    assert (answer["orphansCollected"], answer["billedStopped"]) == (2, 2)


@pytest.mark.parametrize(("seen_ago", "collected"), [(timedelta(seconds=290), False), (timedelta(seconds=310), True)])
def test_on_a_faster_clock_an_orphan_is_collected_sooner(svc_on_fakes: Services, fake_uow: FakeUnitOfWork, seen_ago: timedelta, collected: bool) -> None:
    svc = dataclasses.replace(svc_on_fakes, settings=svc_on_fakes.settings.model_copy(update={"batchlane_time_scale": 2.0}))
    _, arn = _submitted(svc)
    _bedrock(svc).jobs[arn].status = "Completed"
    fake_uow.state.clock.at = datetime.now(UTC) - seen_ago

    assert sweep(svc)["orphansCollected"] == (1 if collected else 0), "ten minutes at twice the speed is five"
