"""LaneRepository's pool half, on the fake and on PostgreSQL: what the packer writes (a lane and its members) and reads
(the fair order, a model's page budget, the folder window), and where a job stands with the pool and its lanes.

The pool is the whole database's: every test makes its own owners and model ids and reads only those. Where a rule is
about time gone by, ``past`` moves a row's timestamp back (the fake's clock and PostgreSQL's now() both stay put).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from batchlane.domain import status as st
from batchlane.domain.limits import estimated_record_bytes
from batchlane.domain.status import JobStatus
from batchlane.pdf.split import plan_chunks
from batchlane.rows import NewFolderFile, PooledChunk
from fakes import FakeUnitOfWork

WINDOW_S = 900.0


def _owner() -> str:
    return f"owner-{uuid.uuid4().hex[:10]}"


def _model(profile: str = "us") -> str:
    return f"{profile}.acme.pool-{uuid.uuid4().hex[:10]}-v1:0"


def _shift(uow: Any, table: str, column: str, where: str, seconds: float, **ids: Any) -> None:
    uow.runner.run(f"UPDATE {table} SET {column} = {column} - make_interval(secs => :s) WHERE {where}", s=seconds, **ids)


class _Past:
    """Rows' timestamps moved ``seconds`` back, on either side (a test seam: no use case writes the past)."""

    def __init__(self, uow: Any) -> None:
        self.uow = uow
        self.fake = isinstance(uow, FakeUnitOfWork)

    def pooled(self, job_id: str, seconds: float) -> None:
        if self.fake:
            pooled = self.uow.state.parts["lanes"].pooled_at
            if job_id in pooled:  # NULL - interval is NULL
                pooled[job_id] -= timedelta(seconds=seconds)
        else:
            _shift(self.uow, "large_conversion_jobs", "pooled_at", "id = CAST(:j AS uuid)", seconds, j=job_id)

    def left_pool(self, job_id: str, seconds: float) -> None:
        if self.fake:
            self.uow.state.parts["lanes"].pool_left_at[job_id] -= timedelta(seconds=seconds)
        else:
            _shift(self.uow, "large_conversion_jobs", "pool_left_at", "id = CAST(:j AS uuid)", seconds, j=job_id)

    def created(self, job_id: str, seconds: float) -> None:
        if self.fake:
            jobs = self.uow.state.parts["jobs"].jobs
            jobs[job_id] = _back(jobs[job_id], "created_at", seconds)
        else:
            _shift(self.uow, "large_conversion_jobs", "created_at", "id = CAST(:j AS uuid)", seconds, j=job_id)

    def closed(self, lane_id: str, seconds: float) -> None:
        if self.fake:
            rows = self.uow.state.parts["lanes"].rows
            [row] = [r for r in rows.values() if r.lane_id == lane_id]
            rows[row.id] = _back(row, "closed_at", seconds)
        else:
            _shift(self.uow, "lanes", "closed_at", "lane_id = CAST(:l AS uuid)", seconds, l=lane_id)

    def started(self, folder_job_id: str, seconds: float) -> None:
        if self.fake:
            files = self.uow.state.parts["folder_jobs"].files
            for key, f in list(files.items()):
                if key[0] == folder_job_id and f.started_at is not None:
                    files[key] = _back(f, "started_at", seconds)
        else:
            _shift(self.uow, "folder_job_files", "started_at", "folder_job_id = :f AND started_at IS NOT NULL", seconds, f=folder_job_id)


def _back(row: Any, column: str, seconds: float) -> Any:
    return replace(row, **{column: getattr(row, column) - timedelta(seconds=seconds)})


@pytest.fixture
def past(uow: Any) -> _Past:
    return _Past(uow)


def _file(uow: Any, owner: str) -> str:
    return str(uow.jobs.insert_file(owner_id=owner, name="a.pdf", s3_key=f"uploads/{uuid.uuid4()}.pdf", size_bytes=10).id)


def _parked(
    uow: Any, owner: str, model: str, *, pages: int = 4, per_chunk: int = 2, chunk_bytes: dict[int, int] | None = None, file_id: str | None = None
) -> str:
    """A job split and parked for the batch lane (waiting_batch), as the split leaves it: in the pool, no lane yet."""
    job = uow.jobs.insert_job(
        file_id=file_id or _file(uow, owner), owner_id=owner, status=JobStatus.SPLITTING, options={}, model_id=model, total_pages=0,
        pages_per_chunk=per_chunk, chunks=[],
    )  # fmt: skip
    parked = uow.jobs.finish_split(job.id, parked=True, total_pages=pages, chunks=plan_chunks(pages, per_chunk) if pages else [], chunk_bytes=chunk_bytes or {})
    assert parked is not None and parked.status == JobStatus.WAITING_BATCH
    return str(job.id)


def _lane(uow: Any, model: str, chunks: list[tuple[str, int, int]]) -> Any:
    return uow.lanes.insert_lane(lane_id=str(uuid.uuid4()), model_id=model, deadline_hours=26, chunks=chunks)


def _pool(uow: Any, model: str, **budgets: Any) -> list[PooledChunk]:
    return [c for c in uow.lanes.read_pool(**budgets).chunks if c.model_id == model]


def _order(uow: Any, model: str) -> list[tuple[str, int]]:
    return [(c.job_id, c.chunk_index) for c in _pool(uow, model)]


# -- a lane as the packer writes it -----------------------------------------------------------------
def test_insert_lane_opens_a_preparing_lane_carrying_its_chunks(uow: Any, now: datetime) -> None:
    owner, model = _owner(), _model()
    first, second = _parked(uow, owner, model), _parked(uow, owner, model, pages=2)
    lane_id = str(uuid.uuid4())

    row = uow.lanes.insert_lane(lane_id=lane_id, model_id=model, deadline_hours=26, chunks=[(first, 1, 2), (second, 0, 2), (first, 0, 2)])

    assert (row.lane_id, row.state, row.model_id, row.member_count, row.job_id, row.retry_of) == (lane_id, "preparing", model, 2, None, None)
    assert (row.bedrock_job_arn, row.task_tokens, row.attempts, row.record_count, row.closed_at) == (None, [], 0, None, None)
    assert row.deadline is not None and abs(row.deadline - (now + timedelta(hours=26))) < timedelta(minutes=5)
    assert (lane_id, row.id) in uow.lanes.preparing_lanes()
    assert uow.lanes.in_flight_by_model()[model] == 1
    assert _order(uow, model) == [], "every chunk rides: the pool has nothing more of either job"
    outcome = uow.lanes.job_lane_outcome(first)
    assert (outcome.settled, outcome.lanes) == (False, 1), "riding a lane: not settled"


def test_insert_lane_tags_each_job_in_order_of_first_appearance(uow: Any) -> None:
    owner, model = _owner(), _model()
    first, second = _parked(uow, owner, model), _parked(uow, owner, model)

    row = _lane(uow, model, [(second, 1, 2), (first, 0, 2), (second, 0, 2), (first, 1, 2)])

    members = uow.lanes.members(row.id)
    assert [(m.job_id, m.chunk_index, m.member_tag, m.pages, m.state) for m in members] == [
        (second, 0, "m0", 2, "packed"), (second, 1, "m0", 2, "packed"), (first, 0, "m1", 2, "packed"), (first, 1, "m1", 2, "packed"),
    ]  # fmt: skip
    assert uow.lanes.member_job_ids(row.id) == [second, first]


def test_insert_lane_writes_nothing_where_the_tables_refuse_it(uow: Any) -> None:
    owner, model = _owner(), _model()
    job = _parked(uow, owner, model)
    taken = _lane(uow, model, [(job, 0, 2)])
    refused = [
        [(job, 0, 2)],  # the chunk rides in an open lane already
        [(job, 1, 2), (job, 1, 2)],  # one chunk twice in one lane
        [(job, 1, 2), (str(uuid.uuid4()), 0, 2)],  # no such job
    ]
    for chunks in refused:
        with pytest.raises(Exception), uow:  # the constraint's error (pg8000's) or the fake's ValueError; the block rolls back
            _lane(uow, model, chunks)
    with pytest.raises(Exception), uow:
        uow.lanes.insert_lane(lane_id=taken.lane_id, model_id=model, deadline_hours=26, chunks=[(job, 1, 2)])  # the lane id is taken

    assert uow.lanes.in_flight_by_model()[model] == 1, "no second lane was written"
    assert _order(uow, model) == [(job, 1)], "the chunk no lane took is still in the pool"


def test_lanes_in_flight_count_per_model_and_per_base_model(uow: Any) -> None:
    owner, us = _owner(), _model("us")
    worldwide, base = us.replace("us.", "global.", 1), us.removeprefix("us.")
    job = _parked(uow, owner, us, pages=6)
    for index, model in enumerate([us, us, worldwide]):
        _lane(uow, model, [(job, index, 2)])

    per_model = uow.lanes.in_flight_by_model()
    assert (per_model[us], per_model[worldwide]) == (2, 1)
    assert uow.lanes.in_flight_by_base_model()[base] == 3, "the us. and global. profiles share the base model's quota"
    assert us not in uow.lanes.in_flight_by_base_model()


def test_preparing_lanes_come_oldest_first(uow: Any) -> None:
    owner, model = _owner(), _model()
    job = _parked(uow, owner, model, pages=6)
    made = [_lane(uow, model, [(job, index, 2)]) for index in (2, 0, 1)]

    ours = [pair for pair in uow.lanes.preparing_lanes() if pair[0] in {row.lane_id for row in made}]

    assert ours == [(row.lane_id, row.id) for row in made]
    assert [row.id for row in made] == sorted(row.id for row in made)


def test_lock_claims_is_taken_inside_a_unit_of_work(uow: Any) -> None:
    with uow:
        uow.lanes.lock_claims()
        uow.lanes.lock_claims()  # the transaction's own lock: taking it again does not wait


# -- the fair order ------------------------------------------------------------------------------------
def test_the_pool_is_read_in_owner_turns_weighted_by_lanes_in_flight(uow: Any, tick: Callable[[], None]) -> None:
    model = _model()
    a, b, c = _owner(), _owner(), _owner()
    made: dict[str, str] = {}
    for name, owner in [("a1", a), ("c1", c), ("a2", a), ("b1", b), ("c2", c), ("a3", a)]:
        made[name] = _parked(uow, owner, model, pages=3)  # chunks of 2 and 1 pages
        tick()
    _lane(uow, model, [(made["c1"], 0, 2), (made["c1"], 1, 1)])  # c's first job rides whole: one lane in flight

    order = _order(uow, model)

    # turns: a1 1, a2 2, a3 3, b1 1, c1 1 (nothing left to read), c2 2 + 1 lane in flight = 3; ties oldest first
    expected = ["a1", "b1", "a2", "c2", "a3"]
    assert order == [(made[name], index) for name in expected for index in (0, 1)]


def test_chunks_that_rode_in_any_lane_never_return_to_the_pool(uow: Any) -> None:
    owner, model = _owner(), _model()
    job = _parked(uow, owner, model, pages=6)
    _lane(uow, model, [(job, 1, 2)])

    assert _order(uow, model) == [(job, 0), (job, 2)]
    # The two reads agree on this model's chunks (its own: the session's database holds other tests' rows) but for
    # waited_s, which each statement reads from its own now().
    def mine(chunks: Any) -> list[tuple[str, int, int, int | None]]:
        return [(c.job_id, c.chunk_index, c.pages, c.source_bytes) for c in chunks if c.model_id == model]

    assert mine(uow.lanes.pool_chunks()) == mine(uow.lanes.read_pool().chunks)
    assert [(c.job_id, c.chunk_index) for c in uow.lanes.pool_chunks() if c.model_id == model] == [(job, 0), (job, 2)]


def test_a_models_budget_reads_the_prefix_whose_pages_before_each_chunk_stay_under_it(uow: Any, tick: Callable[[], None]) -> None:
    owner, model, other = _owner(), _model(), _model()
    big = _parked(uow, owner, model, pages=150, per_chunk=50, chunk_bytes={0: 40_000, 1: 90_000, 2: 2_000})
    tick()
    small = _parked(uow, owner, model, pages=20, per_chunk=20)  # its one chunk's bytes unknown
    tick()
    elsewhere = _parked(uow, _owner(), other, pages=30, per_chunk=10)

    read = uow.lanes.read_pool(budgets={model: 120}, default_budget=15)

    mine = [(c.job_id, c.chunk_index, c.pages, c.source_bytes) for c in read.chunks if c.model_id == model]
    assert mine == [(big, 0, 50, 40_000), (big, 1, 50, 90_000), (big, 2, 50, 2_000)], "0, 50, 100 pages before: under 120; 150: not"
    assert read.truncated[model] is True
    assert read.smallest[model] == 20, "the fewest pages of ANY waiting chunk of the model, read or not"
    assert read.lightest[model] == 0, "a chunk of unknown size weighs nothing in the estimate"
    theirs = [(c.job_id, c.chunk_index) for c in read.chunks if c.model_id == other]
    assert theirs == [(elsewhere, 0), (elsewhere, 1)], "a model without a budget of its own reads the default (0, 10 before: under 15)"
    assert read.truncated[other] is True and read.smallest[other] == 10
    whole = uow.lanes.read_pool(budgets={model: 1_000})
    assert whole.truncated[model] is False
    assert whole.lightest[model] == 0 and [c.job_id for c in whole.chunks if c.model_id == model][-1] == small
    none = uow.lanes.read_pool(budgets={model: 0})
    assert model not in none.truncated and model not in none.smallest and not [c for c in none.chunks if c.model_id == model]


def test_the_lightest_chunk_is_the_domains_estimate_of_its_records(uow: Any) -> None:
    owner, model = _owner(), _model()
    _parked(uow, owner, model, pages=5, per_chunk=2, chunk_bytes={0: 90_000, 1: 7_000, 2: 3_000})

    read = uow.lanes.read_pool()

    assert read.lightest[model] == min(estimated_record_bytes(b, p) for b, p in [(90_000, 2), (7_000, 2), (3_000, 1)])
    assert read.smallest[model] == 1
    assert read.truncated[model] is False


def test_a_jobs_wait_runs_from_when_the_pool_first_saw_it(uow: Any, past: _Past) -> None:
    owner, model = _owner(), _model()
    job = _parked(uow, owner, model)
    assert {c.waited_s for c in _pool(uow, model)} == {0.0}, "not seen yet: no wait"

    uow.lanes.note_pooled(window_s=WINDOW_S)
    past.pooled(job, 600)
    uow.lanes.note_pooled(window_s=WINDOW_S)  # seen before: its window does not start again

    waited = [c.waited_s for c in _pool(uow, model)]
    assert len(waited) == 2 and all(600 <= w < 660 for w in waited)


def test_jobs_the_pool_let_go_are_not_read_and_are_let_go_once(uow: Any) -> None:
    owner, model = _owner(), _model()
    kept, gone = _parked(uow, owner, model), _parked(uow, owner, model)

    assert uow.lanes.leave_pool([gone, gone], reason="pool_too_small") == [gone]
    assert uow.lanes.leave_pool([gone, kept], reason="process_now") == [kept]
    assert uow.lanes.leave_pool([str(uuid.uuid4())], reason="pool_too_small") == []

    assert _order(uow, model) == []
    assert uow.lanes.job_lane_outcome(gone).settled, "let go, nothing riding: settled"


def test_a_job_in_another_status_is_not_in_the_pool(uow: Any) -> None:
    owner, model = _owner(), _model()
    job = _parked(uow, owner, model)
    assert uow.jobs.move_job(job, st.leave_batch_lane()) is not None

    uow.lanes.note_pooled(window_s=WINDOW_S)

    assert _order(uow, model) == []


# -- the folder window -----------------------------------------------------------------------------------
def _folder(uow: Any, owner: str, keys: list[str]) -> str:
    folder_id = "fj-" + uuid.uuid4().hex[:24]
    assert uow.folder_jobs.add(job_id=folder_id, owner_id=owner, name=None, spec={}, source=("b", "in/"), target=("b", "out/")) is not None
    uow.folder_jobs.add_files(folder_id, [NewFolderFile(key, 10, f"out/{key}.md") for key in keys])
    return folder_id


def _open(uow: Any, folder_id: str, owner: str, model: str, count: int) -> list[str]:
    """The folder loop's turn: claim queued files and open each one's conversion, parked."""
    jobs = []
    for f in uow.folder_jobs.claim_queued(folder_id, count):
        job_id = _parked(uow, owner, model)
        uow.folder_jobs.attach_conversion(folder_id, f.source_key, file_id=uow.jobs.get_job(job_id).file_id, conversion_job_id=job_id)
        jobs.append(job_id)
    return jobs


def _listed(uow: Any, folder_id: str) -> None:
    uow.folder_jobs.save_checkpoint(folder_id, token=None, listed=0, excluded=0, done=True)
    assert uow.folder_jobs.move(folder_id, st.folder_job("enumerated")) is not None


def _noted(uow: Any, past: _Past, model: str, jobs: list[str], *, window_s: float = WINDOW_S) -> list[bool]:
    """note_pooled, then whether each job's window started: a noted job's wait grows when its start is moved back."""
    uow.lanes.note_pooled(window_s=window_s)
    for job in jobs:
        past.pooled(job, 100)
    waited = {c.job_id: c.waited_s for c in _pool(uow, model)}
    return [waited[job] >= 100 for job in jobs]


def test_a_folders_files_wait_while_the_folder_may_bring_more_then_start_together(uow: Any, past: _Past) -> None:
    owner, model = _owner(), _model()
    folder = _folder(uow, owner, ["a", "b", "c"])
    first = _open(uow, folder, owner, model, 2)

    assert _noted(uow, past, model, first) == [False, False], "still listing"
    _listed(uow, folder)
    assert _noted(uow, past, model, first) == [False, False], "listed, one file still queued"
    [last_file] = uow.folder_jobs.claim_queued(folder, 1)
    assert _noted(uow, past, model, first) == [False, False], "the last file is read, its conversion not attached yet"
    opening = uow.jobs.insert_job(
        file_id=_file(uow, owner), owner_id=owner, status=JobStatus.SPLITTING, options={}, model_id=model, total_pages=0, pages_per_chunk=2,
        chunks=[],
    )  # fmt: skip
    uow.folder_jobs.attach_conversion(folder, last_file.source_key, file_id=opening.file_id, conversion_job_id=opening.id)
    assert _noted(uow, past, model, first) == [False, False], "the last file is still splitting"
    uow.jobs.finish_split(opening.id, parked=True, total_pages=4, chunks=plan_chunks(4, 2))

    assert _noted(uow, past, model, [*first, opening.id]) == [True, True, True], "every file in the pool: the windows start together"


def test_a_folder_that_started_nothing_for_a_window_lets_its_files_windows_start(uow: Any, past: _Past) -> None:
    owner, model = _owner(), _model()
    folder = _folder(uow, owner, ["a", "b", "c"])
    first = _open(uow, folder, owner, model, 2)
    past.started(folder, 121)

    assert _noted(uow, past, model, first) == [False, False], "121 s is not a 900 s window"
    assert _noted(uow, past, model, first, window_s=1) == [True, True], "a stall is the window, at least 120 s"


def test_a_stall_is_never_shorter_than_two_minutes(uow: Any, past: _Past) -> None:
    owner, model = _owner(), _model()
    folder = _folder(uow, owner, ["a", "b"])
    first = _open(uow, folder, owner, model, 1)
    past.started(folder, 100)

    assert _noted(uow, past, model, first, window_s=0.001) == [False], "a scaled window (offline) still waits 120 s for the folder"


def test_an_ended_folder_holds_none_of_its_files_back(uow: Any, past: _Past) -> None:
    owner, model = _owner(), _model()
    folder = _folder(uow, owner, ["a", "b", "c"])
    first = _open(uow, folder, owner, model, 1)
    assert _noted(uow, past, model, first) == [False]

    assert uow.folder_jobs.move(folder, st.folder_job("cancel")) is not None

    assert _noted(uow, past, model, first) == [True]


def test_a_file_read_from_a_folder_but_not_attached_waits_a_window_at_most(uow: Any, past: _Past) -> None:
    owner, model = _owner(), _model()
    unattached = _parked(uow, owner, model, file_id=_source_file(uow, owner))
    uploaded = _parked(uow, owner, model)

    assert _noted(uow, past, model, [unattached, uploaded]) == [False, True], "an upload is no folder's: its window starts at once"
    past.created(unattached, 901)
    assert _noted(uow, past, model, [unattached]) == [True]


def _source_file(uow: Any, owner: str) -> str:
    """A files row for a folder's object, read where it lies (source_bucket set)."""
    return str(uow.folder_jobs.insert_source_file(owner_id=owner, name="a.pdf", bucket="b", key=f"in/{uuid.uuid4()}.pdf", size_bytes=10).id)


# -- where a job stands ----------------------------------------------------------------------------------
def test_a_jobs_lane_outcome_settles_once_nothing_rides_and_the_pool_has_nothing_more(uow: Any) -> None:
    owner, model = _owner(), _model()
    job = _parked(uow, owner, model, pages=4)
    outcome = uow.lanes.job_lane_outcome(job)
    assert (outcome.settled, outcome.accepted, outcome.lanes) == (False, 0, 0), "in the pool"

    _lane(uow, model, [(job, 0, 2)])
    assert (uow.lanes.job_lane_outcome(job).settled, uow.lanes.job_lane_outcome(job).lanes) == (False, 1), "riding, and a chunk in the pool"
    _lane(uow, model, [(job, 1, 2)])
    assert uow.lanes.job_lane_outcome(job).lanes == 2
    uow.lanes.leave_pool([job], reason="pool_too_small")
    assert not uow.lanes.job_lane_outcome(job).settled, "let go, but still riding"

    assert uow.lanes.job_lane_outcome(str(uuid.uuid4())) == type(outcome)(False, 0, 0)


def test_stranded_jobs_are_parked_ones_nothing_carries_whose_pool_let_go_long_ago(uow: Any, past: _Past) -> None:
    owner, model = _owner(), _model()
    stranded, recent, riding, moved_on = (_parked(uow, owner, model) for _ in range(4))
    empty = _parked(uow, owner, model, pages=0)
    _lane(uow, model, [(riding, 0, 2)])
    uow.lanes.leave_pool([stranded, recent, riding, empty, moved_on], reason="pool_too_small")
    assert uow.jobs.move_job(moved_on, st.leave_batch_lane()) is not None
    for job in (stranded, riding, empty, moved_on):
        past.left_pool(job, 700)
    past.left_pool(recent, 300)

    found = set(uow.lanes.stranded_job_ids(older_than_s=600)) & {stranded, recent, riding, empty, moved_on}

    assert found == {stranded}


def test_a_job_still_in_the_pool_is_never_stranded(uow: Any) -> None:
    owner, model = _owner(), _model()
    job = _parked(uow, owner, model)

    assert job not in uow.lanes.stranded_job_ids(older_than_s=0)


def test_job_deadlines_read_each_jobs_deadline_option(uow: Any) -> None:
    owner, model = _owner(), _model()
    due = uow.jobs.insert_job(
        file_id=_file(uow, owner), owner_id=owner, status=JobStatus.WAITING_BATCH, options={"deadline": "2026-01-06T09:00:00Z"}, model_id=model,
        total_pages=2, pages_per_chunk=2, chunks=plan_chunks(2, 2),
    ).id  # fmt: skip
    free = _parked(uow, owner, model)

    assert uow.lanes.job_deadlines([due, free, str(uuid.uuid4())]) == {due: "2026-01-06T09:00:00Z", free: None}
    assert uow.lanes.job_deadlines([]) == {}


# -- with lanes that closed ------------------------------------------------------------------------------
def _closed(uow: Any, model: str, chunks: list[tuple[str, int, int]]) -> Any:
    """A lane that left before submitting (preparing → closed): its members collected, nothing accepted."""
    row = _lane(uow, model, chunks)
    closed = uow.lanes.close(row.lane_id, st.leave_before_submit(), end_state="skipped")
    assert closed is not None and closed.state == "closed"
    return closed


def test_a_closed_lane_holds_no_slot_and_weighs_nothing_in_its_owners_turn(uow: Any, tick: Callable[[], None]) -> None:
    model, a, c = _model(), _owner(), _owner()
    c1 = _parked(uow, c, model, pages=2)
    tick()
    a1 = _parked(uow, a, model, pages=2)
    tick()
    c2 = _parked(uow, c, model, pages=2)
    tick()
    a2 = _parked(uow, a, model, pages=2)
    lane = _lane(uow, model, [(c1, 0, 2)])
    assert _order(uow, model) == [(a1, 0), (a2, 0), (c2, 0)], "c2: turn 2 + 1 lane in flight = 3, after a2's 2"

    uow.lanes.close(lane.lane_id, st.leave_before_submit(), end_state="skipped")

    assert uow.lanes.in_flight_by_model().get(model, 0) == 0
    assert lane.lane_id not in {lane_id for lane_id, _ in uow.lanes.preparing_lanes()}
    assert _order(uow, model) == [(a1, 0), (c2, 0), (a2, 0)], "turn 2 each now: c2 is older than a2"


def test_an_owner_whose_job_left_a_lane_still_in_flight_still_has_it_counted(uow: Any, tick: Callable[[], None]) -> None:
    model, a, c = _model(), _owner(), _owner()
    c1 = _parked(uow, c, model, pages=4)
    tick()
    a1 = _parked(uow, a, model, pages=2)
    shared = _lane(uow, model, [(c1, 0, 2), (a1, 0, 2)])
    tick()
    c2 = _parked(uow, c, model, pages=2)
    tick()
    a2 = _parked(uow, a, model, pages=2)

    uow.lanes.leave_lanes(a1)  # a's member left; the lane goes on for c's

    assert uow.lanes.get_row(shared.lane_id).state == "preparing"
    # turns: c1 1 + 1 (its chunk 1 still waits), c2 2 + 1; a1 done, a2 2 + 1 (the lane a's member left counts still)
    assert _order(uow, model) == [(c1, 1), (c2, 0), (a2, 0)]


def test_a_jobs_lane_outcome_adds_up_what_its_collected_members_brought(uow: Any) -> None:
    owner, model = _owner(), _model()
    job = _parked(uow, owner, model, pages=6)
    first = _closed(uow, model, [(job, 0, 2), (job, 1, 2)])
    uow.lanes.record_accepted(first.id, {(job, 0): 2, (job, 1): 1})
    assert uow.lanes.job_lane_outcome(job) == type(uow.lanes.job_lane_outcome(job))(False, 3, 1), "chunk 2 still in the pool"

    second = _lane(uow, model, [(job, 2, 2)])
    uow.lanes.leave_lanes(job)  # left: rode, brought nothing
    assert uow.lanes.get_row(second.lane_id) is not None

    outcome = uow.lanes.job_lane_outcome(job)
    assert (outcome.settled, outcome.accepted, outcome.lanes) == (True, 3, 2)


def test_a_job_whose_last_lane_closed_long_ago_is_stranded(uow: Any, past: _Past) -> None:
    owner, model = _owner(), _model()
    old, recent, partly = _parked(uow, owner, model), _parked(uow, owner, model), _parked(uow, owner, model)
    lanes = {job: _closed(uow, model, [(job, 0, 2), (job, 1, 2)]) for job in (old, recent)}
    partial = _closed(uow, model, [(partly, 0, 2)])  # chunk 1 still in the pool
    past.closed(lanes[old].lane_id, 700)
    past.closed(lanes[recent].lane_id, 300)
    past.closed(partial.lane_id, 700)

    found = set(uow.lanes.stranded_job_ids(older_than_s=600)) & {old, recent, partly}

    assert found == {old}
    uow.lanes.leave_pool([partly], reason="pool_too_small")  # let go just now: the later of the two moments counts
    assert partly not in uow.lanes.stranded_job_ids(older_than_s=600)


def test_members_to_purge_are_those_of_closed_lanes_of_deleted_files_or_of_the_jobs_named(uow: Any) -> None:
    owner, model = _owner(), _model()
    deleted, kept, riding = _parked(uow, owner, model), _parked(uow, owner, model), _parked(uow, owner, model)
    lane = _closed(uow, model, [(kept, 0, 2), (deleted, 0, 2), (deleted, 1, 2), (kept, 1, 2)])
    _lane(uow, model, [(riding, 0, 2)])  # open: Bedrock may still read its files
    for job in (deleted, riding):
        uow.jobs.mark_file_deleted(uow.jobs.get_job(job).file_id)

    swept = [t for t in uow.lanes.members_to_purge(limit=10_000) if t.job_id in {deleted, kept, riding}]
    named = uow.lanes.members_to_purge(job_ids=[kept, riding])

    assert [(t.lane_row_id, t.lane_id, t.job_id, t.member_tag) for t in swept] == [(lane.id, lane.lane_id, deleted, "m1")], "one per member job"
    assert [(t.job_id, t.member_tag) for t in named] == [(kept, "m0")]
    assert uow.lanes.members_to_purge(job_ids=[]) == []
    uow.lanes.mark_purged(swept[0])
    assert uow.lanes.members_to_purge(job_ids=[deleted, kept]) == named, "purged once"
    assert uow.lanes.members_to_purge(job_ids=[deleted, kept], limit=0) == []
