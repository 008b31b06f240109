"""ChunkAdmissions' contract, on the fake and on PostgreSQL (issue 21, point 4): one owner's many jobs cannot take
every chunk slot; a second owner's chunk is admitted as soon as a slot frees, before the first owner's next.
The gate around a chunk (filejob/admission.chunk_slot) frees its slot however the chunk ends."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from batchlane.db.admission import fair_share
from batchlane.filejob.admission import ChunkNotAdmitted, chunk_slot

CAPACITY = 4


@pytest.fixture(params=["fake", "postgres"])
def slots(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "fake":
        from fakes.admission import FakeChunkAdmissions

        yield FakeChunkAdmissions()
        return
    from batchlane.db.admission import PgChunkAdmissions

    app_db = request.getfixturevalue("app_db")  # the slots are shared by every chunk: this file alone empties them
    app_db.run("DELETE FROM chunk_admissions")
    app_db.run("DELETE FROM chunk_admission_waiters")
    yield PgChunkAdmissions(app_db)
    app_db.run("DELETE FROM chunk_admissions")
    app_db.run("DELETE FROM chunk_admission_waiters")


def _take(slots: Any, owner: str, job: str, chunk: int) -> bool:
    return bool(slots.admit(job_id=job, chunk_index=chunk, owner_id=owner, capacity=CAPACITY, ttl_s=900).admitted)


def test_an_owner_alone_may_use_every_slot_and_no_more(slots: Any) -> None:
    jobs = [str(uuid.uuid4()) for _ in range(20)]  # 20 live jobs x 8 chunks wanting to run
    taken = [_take(slots, "owner-a", job, chunk) for job in jobs for chunk in range(8)]
    assert sum(taken) == CAPACITY


def test_a_second_owner_is_admitted_when_a_slot_frees_before_the_first_owners_next_chunk(slots: Any) -> None:
    a_jobs = [str(uuid.uuid4()) for _ in range(20)]
    running = [(job, c) for job in a_jobs for c in range(8) if _take(slots, "owner-a", job, c)]
    assert len(running) == CAPACITY
    b_job = str(uuid.uuid4())
    refused = slots.admit(job_id=b_job, chunk_index=0, owner_id="owner-b", capacity=CAPACITY, ttl_s=900)
    assert (refused.admitted, refused.share, refused.held, refused.total) == (False, 2, 0, 4), "every slot is taken: B waits (and now counts)"
    slots.release(job_id=running[0][0], chunk_index=running[0][1])  # one of A's chunks ends
    assert not _take(slots, "owner-a", a_jobs[5], 0), "A holds 3, its share with B waiting is 2"
    assert _take(slots, "owner-b", b_job, 0), "B's chunk takes the freed slot"
    again = slots.admit(job_id=b_job, chunk_index=0, owner_id="owner-b", capacity=CAPACITY, ttl_s=900)
    assert (again.admitted, again.held, again.total) == (True, 0, 3), "a continuation of the same chunk keeps its slot (not counted twice)"
    for job, chunk in running[1:3]:
        slots.release(job_id=job, chunk_index=chunk)
    assert _take(slots, "owner-b", b_job, 1), "B up to its share of 2"
    assert _take(slots, "owner-a", a_jobs[5], 0), "A again, within its share"
    assert not _take(slots, "owner-b", b_job, 2), "B at its share"


def test_releasing_a_slot_not_held_changes_nothing(slots: Any) -> None:
    job = str(uuid.uuid4())
    slots.release(job_id=job, chunk_index=0)
    assert [_take(slots, "owner-a", job, c) for c in range(CAPACITY + 1)] == [True] * CAPACITY + [False]


def test_the_slot_is_freed_when_the_chunk_ends_even_by_an_error(slots: Any) -> None:
    job = str(uuid.uuid4())
    with pytest.raises(RuntimeError), chunk_slot(slots, job_id=job, chunk_index=0, owner_id="owner-a", capacity=1, ttl_s=900):
        raise RuntimeError("the chunk failed")
    with chunk_slot(slots, job_id=job, chunk_index=1, owner_id="owner-a", capacity=1, ttl_s=900):
        with pytest.raises(ChunkNotAdmitted):
            with chunk_slot(slots, job_id=job, chunk_index=2, owner_id="owner-a", capacity=1, ttl_s=900):
                pass


def test_a_slot_of_a_killed_invocation_expires(slots: Any) -> None:
    assert slots.admit(job_id=str(uuid.uuid4()), chunk_index=0, owner_id="owner-a", capacity=1, ttl_s=-1).admitted
    assert _take(slots, "owner-a", str(uuid.uuid4()), 0)


def test_the_share_is_an_equal_part_never_zero() -> None:
    assert [fair_share(100, n) for n in (0, 1, 2, 3, 200)] == [100, 100, 50, 33, 1]
