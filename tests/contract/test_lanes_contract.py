"""LaneRepository's lane half, on the fake and on PostgreSQL: a lane's life (preparing → submitted → stopping → closed),
its members (packed → collected or left) and what the sweeper and the steps read back.

Every move is guarded as domain.status allows; a terminal Bedrock status is never overwritten by a late one; a first
reason, a first stamp and a first token count once. Lanes are the whole database's: each test reads only its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from batchlane.domain import status as st
from batchlane.domain.status import BatchMemberState, JobStatus, LaneState
from batchlane.pdf.split import plan_chunks
from batchlane.rows import Lane

OWNER = "owner-lanes-contract"
MODEL = "us.acme.lanes-contract-v1:0"


def _job(uow: Any, *, chunks: int = 2) -> str:
    """A parked job of ``chunks`` chunks of 2 pages."""
    file_id = uow.jobs.insert_file(owner_id=OWNER, name="book.pdf", s3_key=f"uploads/{uuid.uuid4()}.pdf", size_bytes=1000).id
    job = uow.jobs.insert_job(
        file_id=str(file_id), owner_id=OWNER, status=JobStatus.WAITING_BATCH, options={}, model_id=MODEL, total_pages=2 * chunks,
        pages_per_chunk=2, chunks=plan_chunks(2 * chunks, 2),
    )  # fmt: skip
    return str(job.id)


def _lane(uow: Any, chunks: list[tuple[str, int]], *, deadline_hours: float = 24) -> Lane:
    row = uow.lanes.insert_lane(lane_id=str(uuid.uuid4()), model_id=MODEL, deadline_hours=deadline_hours, chunks=[(j, c, 2) for j, c in chunks])
    return row  # type: ignore[no-any-return]


def _submitted(uow: Any, chunks: list[tuple[str, int]], *, records: int = 4) -> Lane:
    row = _lane(uow, chunks)
    assert uow.lanes.record_prepared(row.lane_id, record_count=records, input_bytes=100, manifest_key=f"batch/{row.lane_id}/manifest.json")
    arn = f"arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/{uuid.uuid4().hex[:12]}"
    submitted = uow.lanes.mark_submitted(row.lane_id, arn=arn, name=f"lane-{row.lane_id}", output_uri="s3://b/out/", deadline_hours=24)
    assert submitted is not None and submitted.state == LaneState.SUBMITTED
    return submitted  # type: ignore[no-any-return]


def _states(uow: Any, row_id: int) -> dict[tuple[str, int], tuple[str, int | None]]:
    return {(m.job_id, m.chunk_index): (m.state, m.accepted) for m in uow.lanes.members(row_id)}


# -- reading a lane ----------------------------------------------------------------------------
def test_a_lane_is_read_by_its_lane_id_or_its_row_id_and_an_unknown_one_is_none(uow: Any) -> None:
    job = _job(uow)
    row = _lane(uow, [(job, 0), (job, 1)])
    assert uow.lanes.get_row(row.lane_id) == row
    assert uow.lanes.get_row_by_id(row.id) == row
    assert (row.state, row.member_count, row.retry_of, row.task_tokens, row.attempts) == (LaneState.PREPARING, 1, None, [], 0)
    with uow:
        assert uow.lanes.lock_row(row.lane_id) == row
    assert uow.lanes.get_row(str(uuid.uuid4())) is None
    assert uow.lanes.lock_row(str(uuid.uuid4())) is None
    assert uow.lanes.get_row_by_id(row.id + 10_000_000) is None


def test_members_come_by_tag_then_chunk_and_the_jobs_in_tag_order_m2_before_m10(uow: Any) -> None:
    """Tags sort as text in members() (m10 before m2) but by length first in member_job_ids()."""
    jobs = [_job(uow, chunks=1) for _ in range(11)]
    row = _lane(uow, [(j, 0) for j in jobs])
    members = uow.lanes.members(row.id)
    assert [m.member_tag for m in members] == sorted(f"m{k}" for k in range(11))
    assert [m.member_tag for m in members][:3] == ["m0", "m1", "m10"]
    assert uow.lanes.member_job_ids(row.id) == jobs
    assert {m.job_id: m.member_tag for m in members}[jobs[2]] == "m2"
    assert all((m.pages, m.records, m.accepted, m.state) == (2, None, None, BatchMemberState.PACKED) for m in members)

    other = _job(uow, chunks=3)
    lane = _lane(uow, [(other, 2), (other, 0), (other, 1)])
    assert [m.chunk_index for m in uow.lanes.members(lane.id)] == [0, 1, 2]
    assert uow.lanes.members(lane.id, state=BatchMemberState.LEFT) == []
    assert uow.lanes.members(row.id + 10_000_000) == [] and uow.lanes.member_job_ids(row.id + 10_000_000) == []


def test_records_per_member_chunk_are_written_whatever_its_state_and_accepted_only_once_collected(uow: Any) -> None:
    a, b = _job(uow), _job(uow)
    row = _submitted(uow, [(a, 0), (a, 1), (b, 0)])
    uow.lanes.record_member_records(row.id, {(a, 0): 3, (b, 0): 2})
    uow.lanes.record_member_records(row.id, {})
    assert {(m.job_id, m.chunk_index): m.records for m in uow.lanes.members(row.id)} == {(a, 0): 3, (a, 1): None, (b, 0): 2}

    uow.lanes.record_accepted(row.id, {(a, 0): 1})
    assert _states(uow, row.id)[(a, 0)] == (BatchMemberState.PACKED, None), "a packed member's accepted is not written"
    uow.lanes.leave_lanes(b)
    assert uow.lanes.close(row.lane_id, st.close(), end_state="Completed", accepted=3, fallback=1) is not None
    uow.lanes.record_accepted(row.id, {(a, 0): 2, (b, 0): 5})
    uow.lanes.record_accepted(row.id, {})
    assert _states(uow, row.id) == {
        (a, 0): (BatchMemberState.COLLECTED, 2),
        (a, 1): (BatchMemberState.COLLECTED, 0),  # collected with nothing accepted until told otherwise
        (b, 0): (BatchMemberState.LEFT, None),  # it left first: never collected, never counted
    }


def test_has_packed_members_until_the_last_one_leaves(uow: Any) -> None:
    a, b = _job(uow), _job(uow)
    row = _lane(uow, [(a, 0), (b, 0)])
    assert uow.lanes.has_packed_members(row.id)
    uow.lanes.leave_lanes(a)
    assert uow.lanes.has_packed_members(row.id)
    uow.lanes.leave_lanes(b)
    assert not uow.lanes.has_packed_members(row.id)


def test_a_job_leaves_every_lane_it_rides_in_and_only_its_own_members_move(uow: Any) -> None:
    job, other = _job(uow, chunks=3), _job(uow)
    first = _lane(uow, [(job, 0), (other, 0)])
    second = _submitted(uow, [(job, 1), (other, 1)])
    closed = _submitted(uow, [(job, 2)])
    assert uow.lanes.close(closed.lane_id, st.close(), end_state="Completed") is not None

    left = uow.lanes.leave_lanes(job)
    assert [lane.id for lane in left] == [first.id, second.id], "the lanes it left, by id; not the closed one"
    assert [lane.state for lane in left] == [LaneState.PREPARING, LaneState.SUBMITTED]
    assert _states(uow, first.id) == {(job, 0): (BatchMemberState.LEFT, None), (other, 0): (BatchMemberState.PACKED, None)}
    assert _states(uow, second.id) == {(job, 1): (BatchMemberState.LEFT, None), (other, 1): (BatchMemberState.PACKED, None)}
    assert _states(uow, closed.id) == {(job, 2): (BatchMemberState.COLLECTED, 0)}
    assert uow.lanes.leave_lanes(job) == [], "a second leave finds nothing to leave"
    assert [lane.id for lane in uow.lanes.lanes_of_job(job)] == [first.id, second.id, closed.id]
    assert [lane.id for lane in uow.lanes.lanes_of_job(other)] == [first.id, second.id]
    assert uow.lanes.lanes_of_job(_job(uow)) == []


# -- a lane's life -----------------------------------------------------------------------------
def test_prepared_counts_are_written_only_while_preparing(uow: Any, now: datetime) -> None:
    job = _job(uow)
    row = _lane(uow, [(job, 0)])
    prepared = uow.lanes.record_prepared(row.lane_id, record_count=7, input_bytes=1234, manifest_key="batch/x/manifest.json")
    assert (prepared.state, prepared.record_count, prepared.input_bytes, prepared.manifest_key) == (LaneState.PREPARING, 7, 1234, "batch/x/manifest.json")
    assert prepared.prepared_at is not None and abs(prepared.prepared_at - now) < timedelta(minutes=1)
    assert uow.lanes.mark_submitted(row.lane_id, arn="arn:x:" + row.lane_id, name="n", output_uri="s3://b/o/", deadline_hours=1) is not None
    assert uow.lanes.record_prepared(row.lane_id, record_count=1, input_bytes=1, manifest_key="k") is None
    assert uow.lanes.get_row(row.lane_id).record_count == 7
    assert uow.lanes.record_prepared(str(uuid.uuid4()), record_count=1, input_bytes=1, manifest_key="k") is None


def test_a_submit_moves_a_preparing_lane_once_and_a_retried_submit_gets_the_row_as_it_is(uow: Any, now: datetime) -> None:
    job = _job(uow)
    row = _lane(uow, [(job, 0)])
    arn = "arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/" + uuid.uuid4().hex[:12]
    submitted = uow.lanes.mark_submitted(row.lane_id, arn=arn, name="lane-a", output_uri="s3://b/out/", deadline_hours=2)
    assert (submitted.state, submitted.bedrock_job_arn, submitted.bedrock_job_name, submitted.output_uri, submitted.attempts) == (
        LaneState.SUBMITTED, arn, "lane-a", "s3://b/out/", 1,
    )  # fmt: skip
    assert submitted.submitted_at is not None and abs(submitted.submitted_at - now) < timedelta(minutes=1)
    assert abs(submitted.deadline - (submitted.submitted_at + timedelta(hours=2))) < timedelta(seconds=1)
    again = uow.lanes.mark_submitted(row.lane_id, arn="arn:other", name="lane-b", output_uri="s3://b/other/", deadline_hours=9)
    assert again == submitted, "not moved again: the first submit's job, name and attempt stand"
    assert uow.lanes.mark_submitted(str(uuid.uuid4()), arn="arn:none", name="n", output_uri="s3://b/o/", deadline_hours=1) is None
    assert uow.lanes.close(row.lane_id, st.close(), end_state="Completed") is not None
    assert uow.lanes.mark_submitted(row.lane_id, arn="arn:late", name="n", output_uri="s3://b/o/", deadline_hours=1).state == LaneState.CLOSED


def test_a_waiting_executions_token_is_kept_once_whatever_the_lanes_state(uow: Any) -> None:
    job = _job(uow)
    row = _submitted(uow, [(job, 0)])
    assert uow.lanes.add_task_token(row.lane_id, "token-1").task_tokens == ["token-1"]
    assert uow.lanes.add_task_token(row.lane_id, "token-2").task_tokens == ["token-1", "token-2"]
    assert uow.lanes.add_task_token(row.lane_id, "token-1").task_tokens == ["token-1", "token-2"]
    assert uow.lanes.close(row.lane_id, st.close(), end_state="Completed") is not None
    closed = uow.lanes.add_task_token(row.lane_id, "token-3")
    assert (closed.state, closed.task_tokens) == (LaneState.CLOSED, ["token-1", "token-2", "token-3"])
    assert uow.lanes.add_task_token(str(uuid.uuid4()), "token-1") is None


def test_a_terminal_bedrock_status_is_never_overwritten_by_a_late_one_and_first_seen_once(uow: Any, tick: Callable[[], None]) -> None:
    job = _job(uow)
    row = _submitted(uow, [(job, 0)])
    assert uow.lanes.record_status("arn:aws:bedrock:nobody-" + uuid.uuid4().hex, "Completed") is None
    running = uow.lanes.record_status(row.arn, "InProgress")
    assert (running.bedrock_status, running.terminal_seen_at) == ("InProgress", None)
    tick()
    done = uow.lanes.record_status(row.arn, "Completed")
    assert done.bedrock_status == "Completed" and done.terminal_seen_at is not None
    tick()
    late = uow.lanes.record_status(row.arn, "InProgress")
    assert (late.bedrock_status, late.terminal_seen_at) == ("Completed", done.terminal_seen_at), "a late event changes nothing"
    tick()
    lost = uow.lanes.record_status(row.arn, "Lost")
    assert (lost.bedrock_status, lost.terminal_seen_at) == ("Lost", done.terminal_seen_at), "a terminal status follows another; first seen stays"
    assert lost.state == LaneState.SUBMITTED, "a status moves no lane"


def test_a_submitted_lane_stops_once_its_members_leave_and_every_record_falls_back(uow: Any) -> None:
    a, b = _job(uow), _job(uow)
    preparing = _lane(uow, [(a, 1)])
    assert uow.lanes.mark_stopping(preparing.lane_id, reason="members_left") is None, "only a submitted lane stops"
    row = _submitted(uow, [(a, 0), (b, 0)], records=6)
    uow.lanes.leave_lanes(b)
    stopping = uow.lanes.mark_stopping(row.lane_id, reason="collect_failed")
    assert (stopping.state, stopping.reason, stopping.accepted_count, stopping.fallback_count) == (LaneState.STOPPING, "collect_failed", 0, 6)
    assert _states(uow, row.id) == {(a, 0): (BatchMemberState.LEFT, None), (b, 0): (BatchMemberState.LEFT, None)}
    assert uow.lanes.mark_stopping(row.lane_id, reason="again") is None
    assert _states(uow, preparing.id) == {(a, 1): (BatchMemberState.PACKED, None)}

    reasoned = _submitted(uow, [(b, 1)])
    assert uow.lanes.set_reason(reasoned.lane_id, "cancelled").reason == "cancelled"
    assert uow.lanes.mark_stopping(reasoned.lane_id, reason="overdue").reason == "cancelled", "the first reason stays"
    assert uow.lanes.mark_stopping(str(uuid.uuid4()), reason="x") is None


def test_the_first_reason_stays_in_any_state(uow: Any) -> None:
    job = _job(uow)
    row = _lane(uow, [(job, 0)])
    assert uow.lanes.set_reason(row.lane_id, "cancelled").reason == "cancelled"
    assert uow.lanes.set_reason(row.lane_id, "process_now").reason == "cancelled"
    assert uow.lanes.close(row.lane_id, st.leave_before_submit(), end_state="skipped", reason="members_left").reason == "cancelled"
    assert uow.lanes.set_reason(str(uuid.uuid4()), "cancelled") is None


def test_a_close_is_won_once_along_its_move_and_collects_the_packed_members(uow: Any, now: datetime) -> None:
    a, b = _job(uow), _job(uow)
    row = _submitted(uow, [(a, 0), (b, 0)])
    with pytest.raises(ValueError):
        uow.lanes.close(row.lane_id, st.stop(), end_state="x")
    with pytest.raises(ValueError):
        uow.lanes.close(row.lane_id, st.cancel(), end_state="x")
    assert uow.lanes.close(row.lane_id, st.leave_before_submit(), end_state="skipped") is None, "a submitted lane is not closed as if preparing"
    assert uow.lanes.close(row.lane_id, st.settle_stopping(), end_state="Stopped") is None
    uow.lanes.leave_lanes(b)
    closed = uow.lanes.close(row.lane_id, st.close(), end_state="Completed", reason="done", accepted=3, fallback=1, cost_usd=Decimal("0.1234567"))
    assert (closed.state, closed.end_state, closed.reason, closed.accepted_count, closed.fallback_count) == (LaneState.CLOSED, "Completed", "done", 3, 1)
    assert closed.cost_usd == Decimal("0.123457"), "numeric(14, 6)"
    assert closed.closed_at is not None and abs(closed.closed_at - now) < timedelta(minutes=1)
    assert _states(uow, row.id) == {(a, 0): (BatchMemberState.COLLECTED, 0), (b, 0): (BatchMemberState.LEFT, None)}
    assert uow.lanes.close(row.lane_id, st.close(), end_state="Failed", accepted=9) is None, "the second closer loses"
    assert uow.lanes.get_row(row.lane_id) == closed
    assert uow.lanes.close(str(uuid.uuid4()), st.close(), end_state="Completed") is None

    skipped = _lane(uow, [(a, 1)])
    left = uow.lanes.close(skipped.lane_id, st.leave_before_submit(), end_state="skipped")
    assert (left.state, left.end_state, left.reason, left.accepted_count, left.fallback_count, left.cost_usd) == (
        LaneState.CLOSED, "skipped", None, 0, 0, None,
    )  # fmt: skip

    stopping = _submitted(uow, [(b, 1)])
    assert uow.lanes.mark_stopping(stopping.lane_id, reason="overdue") is not None
    assert uow.lanes.close(stopping.lane_id, st.close(), end_state="Stopped") is None, "a stopping lane settles, it is not collected"
    settled = uow.lanes.close(stopping.lane_id, st.settle_stopping(), end_state="Stopped", fallback=4, cost_usd=Decimal(1))
    assert (settled.state, settled.reason, settled.cost_usd) == (LaneState.CLOSED, "overdue", Decimal("1.000000"))
    assert _states(uow, stopping.id) == {(b, 1): (BatchMemberState.LEFT, None)}


def test_a_stamp_counts_the_first_time_and_moves_nothing_else(uow: Any, tick: Callable[[], None]) -> None:
    job = _job(uow)
    row = _lane(uow, [(job, 0)])
    with pytest.raises(ValueError):
        uow.lanes.stamp(row.lane_id, "updated_at")
    tick()
    uow.lanes.stamp(row.lane_id, "prepare_started_at")
    first = uow.lanes.get_row(row.lane_id)
    assert first.prepare_started_at is not None and first.prepare_started_at > row.created_at
    assert first.updated_at == row.updated_at
    tick()
    with uow:  # one transaction: one now()
        uow.lanes.stamp(row.lane_id, "prepare_started_at")
        uow.lanes.stamp(row.lane_id, "collect_started_at")
        uow.lanes.stamp(row.lane_id, "resumed_at")
    again = uow.lanes.get_row(row.lane_id)
    assert again.prepare_started_at == first.prepare_started_at
    assert again.collect_started_at is not None and again.collect_started_at > first.prepare_started_at
    assert again.resumed_at == again.collect_started_at
    uow.lanes.stamp(str(uuid.uuid4()), "resumed_at")  # no lane: nothing to stamp, no error


def test_a_retry_lane_is_born_prepared_once_carrying_the_failed_records(uow: Any, now: datetime) -> None:
    a, b = _job(uow), _job(uow)
    first = _submitted(uow, [(a, 0), (a, 1), (b, 0)])
    assert uow.lanes.close(first.lane_id, st.close(), end_state="PartiallyCompleted") is not None
    lane_id = str(uuid.uuid4())
    members = [(a, 0, "m0", 2), (a, 1, "m0", 1), (b, 0, "m1", 3)]
    retry = uow.lanes.insert_retry_lane(
        lane_id=lane_id, retry_of=first.id, model_id=MODEL, deadline_hours=2, manifest_key=f"batch/{lane_id}/manifest.json", input_bytes=512,
        members=members,
    )  # fmt: skip
    assert (retry.lane_id, retry.state, retry.retry_of, retry.member_count, retry.record_count, retry.input_bytes, retry.manifest_key) == (
        lane_id, LaneState.PREPARING, first.id, 2, 6, 512, f"batch/{lane_id}/manifest.json",
    )  # fmt: skip
    assert retry.prepared_at is not None and abs(retry.prepared_at - now) < timedelta(minutes=1)
    assert abs(retry.deadline - (retry.created_at + timedelta(hours=2))) < timedelta(seconds=1)
    assert [(m.job_id, m.chunk_index, m.member_tag, m.pages, m.records, m.state) for m in uow.lanes.members(retry.id)] == [
        (a, 0, "m0", 2, 2, BatchMemberState.PACKED), (a, 1, "m0", 1, 1, BatchMemberState.PACKED), (b, 0, "m1", 3, 3, BatchMemberState.PACKED),
    ]  # fmt: skip
    assert uow.lanes.get_row(lane_id) == retry
    again = uow.lanes.insert_retry_lane(
        lane_id=lane_id, retry_of=first.id, model_id=MODEL, deadline_hours=9, manifest_key="other", input_bytes=1, members=[(a, 0, "m0", 9)]
    )
    assert again is None, "the same retry lane whoever collects"
    assert uow.lanes.get_row(lane_id) == retry and len(uow.lanes.members(retry.id)) == 3


# -- what the sweeper reads --------------------------------------------------------------------
def test_the_sweeper_reads_submitted_lanes_oldest_submit_first_and_stopping_ones_least_recently_moved(uow: Any, tick: Callable[[], None]) -> None:
    job = _job(uow, chunks=4)
    first = _submitted(uow, [(job, 0)])
    tick()
    second = _submitted(uow, [(job, 1)])
    tick()
    preparing = _lane(uow, [(job, 2)])
    tick()
    uow.lanes.set_reason(first.lane_id, "touched")  # moves updated_at, not submitted_at
    ours = {first.id, second.id, preparing.id}
    assert [r.id for r in uow.lanes.rows_waiting(limit=100_000) if r.id in ours] == [first.id, second.id]
    assert len(uow.lanes.rows_waiting(limit=1)) == 1

    stop_first = _submitted(uow, [(job, 3)])
    tick()
    assert uow.lanes.mark_stopping(second.lane_id, reason="overdue") is not None
    tick()
    assert uow.lanes.mark_stopping(stop_first.lane_id, reason="overdue") is not None
    tick()
    uow.lanes.set_reason(second.lane_id, "again")  # second moved last: it comes last
    ours |= {stop_first.id}
    assert [r.id for r in uow.lanes.rows_stopping(limit=100_000) if r.id in ours] == [stop_first.id, second.id]
    assert [r.id for r in uow.lanes.rows_waiting(limit=100_000) if r.id in ours] == [first.id]
    assert len(uow.lanes.rows_stopping(limit=1)) == 1


def test_a_lane_preparing_for_longer_than_asked_is_stuck(uow: Any, tick: Callable[[], None]) -> None:
    job = _job(uow)
    older = _lane(uow, [(job, 0)])
    tick()
    newer = _lane(uow, [(job, 1)])
    tick()
    ours = {older.id, newer.id}
    assert [r.id for r in uow.lanes.rows_preparing_since(older_than_hours=0) if r.id in ours] == [older.id, newer.id]
    assert [r.id for r in uow.lanes.rows_preparing_since(older_than_hours=1) if r.id in ours] == []
    assert uow.lanes.close(older.lane_id, st.leave_before_submit(), end_state="skipped") is not None
    assert [r.id for r in uow.lanes.rows_preparing_since(older_than_hours=0) if r.id in ours] == [newer.id]


def test_lanes_past_their_deadline_are_counted_until_they_close(uow: Any, tick: Callable[[], None]) -> None:
    job = _job(uow, chunks=3)
    before = uow.lanes.count_past_deadline()
    overdue = _lane(uow, [(job, 0)], deadline_hours=-1)
    _lane(uow, [(job, 1)], deadline_hours=24)
    tick()
    assert uow.lanes.count_past_deadline() == before + 1
    assert uow.lanes.close(overdue.lane_id, st.leave_before_submit(), end_state="skipped") is not None
    assert uow.lanes.count_past_deadline() == before


def test_a_purged_member_is_purged_once_for_every_chunk_of_its_job_in_that_lane(uow: Any) -> None:
    a, b = _job(uow), _job(uow)
    row = _submitted(uow, [(a, 0), (a, 1), (b, 0)])
    assert uow.lanes.close(row.lane_id, st.close(), end_state="Completed") is not None
    targets = uow.lanes.members_to_purge(job_ids=[a, b])
    assert {(t.job_id, t.member_tag) for t in targets} == {(a, "m0"), (b, "m1")}
    uow.lanes.mark_purged(next(t for t in targets if t.job_id == a))
    assert [(t.job_id, t.member_tag) for t in uow.lanes.members_to_purge(job_ids=[a, b])] == [(b, "m1")]
    uow.lanes.mark_purged(next(t for t in targets if t.job_id == a))  # again: nothing changes, no error
    assert [(t.job_id, t.member_tag) for t in uow.lanes.members_to_purge(job_ids=[a, b])] == [(b, "m1")]
