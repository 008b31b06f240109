"""Chunk work admitted per owner on real PostgreSQL (issue 21, point 4): one owner's many jobs cannot take
every chunk slot; a second owner's chunk is admitted as soon as a slot frees, before the first owner's next."""

from __future__ import annotations

import uuid

import pytest

from batchlane.conversion.admission import ChunkNotAdmitted, chunk_slot
from batchlane.db.admission import admit, fair_share, release

CAPACITY = 4


@pytest.fixture
def slots(app_db):  # type: ignore[no-untyped-def]
    app_db.run("DELETE FROM chunk_admissions")
    app_db.run("DELETE FROM chunk_admission_waiters")
    yield app_db
    app_db.run("DELETE FROM chunk_admissions")
    app_db.run("DELETE FROM chunk_admission_waiters")


def _take(db, owner: str, job: str, chunk: int) -> bool:  # type: ignore[no-untyped-def]
    return admit(db, job_id=job, chunk_index=chunk, owner_id=owner, capacity=CAPACITY, ttl_s=900).admitted


def test_an_owner_alone_may_use_every_slot_and_no_more(slots) -> None:  # type: ignore[no-untyped-def]
    jobs = [str(uuid.uuid4()) for _ in range(20)]  # 20 live jobs x 8 chunks wanting to run
    taken = [_take(slots, "owner-a", job, chunk) for job in jobs for chunk in range(8)]
    assert sum(taken) == CAPACITY


def test_a_second_owner_is_admitted_when_a_slot_frees_before_the_first_owners_next_chunk(slots) -> None:  # type: ignore[no-untyped-def]
    a_jobs = [str(uuid.uuid4()) for _ in range(20)]
    running = [(job, c) for job in a_jobs for c in range(8) if _take(slots, "owner-a", job, c)]
    assert len(running) == CAPACITY
    b_job = str(uuid.uuid4())
    assert not _take(slots, "owner-b", b_job, 0), "every slot is taken: B waits (and now counts toward the share)"
    release(slots, job_id=running[0][0], chunk_index=running[0][1])  # one of A's chunks ends
    assert not _take(slots, "owner-a", a_jobs[5], 0), "A holds 3, its share with B waiting is 2"
    assert _take(slots, "owner-b", b_job, 0), "B's chunk takes the freed slot"
    assert _take(slots, "owner-b", b_job, 0), "a continuation of the same chunk keeps its slot"
    for job, chunk in running[1:3]:
        release(slots, job_id=job, chunk_index=chunk)
    assert _take(slots, "owner-b", b_job, 1), "B up to its share of 2"
    assert _take(slots, "owner-a", a_jobs[5], 0), "A again, within its share"
    assert not _take(slots, "owner-b", b_job, 2), "B at its share"


def test_the_slot_is_freed_when_the_chunk_ends_even_by_an_error(slots) -> None:  # type: ignore[no-untyped-def]
    job = str(uuid.uuid4())
    with pytest.raises(RuntimeError), chunk_slot(slots, job_id=job, chunk_index=0, owner_id="owner-a", capacity=1, ttl_s=900):
        raise RuntimeError("the chunk failed")
    with chunk_slot(slots, job_id=job, chunk_index=1, owner_id="owner-a", capacity=1, ttl_s=900):
        with pytest.raises(ChunkNotAdmitted):
            with chunk_slot(slots, job_id=job, chunk_index=2, owner_id="owner-a", capacity=1, ttl_s=900):
                pass


def test_a_slot_of_a_killed_invocation_expires(slots) -> None:  # type: ignore[no-untyped-def]
    assert admit(slots, job_id=str(uuid.uuid4()), chunk_index=0, owner_id="owner-a", capacity=1, ttl_s=-1).admitted
    assert _take(slots, "owner-a", str(uuid.uuid4()), 0)


def test_the_share_is_an_equal_part_never_zero() -> None:
    assert [fair_share(100, n) for n in (0, 1, 2, 3, 200)] == [100, 100, 50, 33, 1]
