"""First-fit packing of pooled chunks into Bedrock jobs (batchlane.domain.pool.pack): pure, no database."""

from __future__ import annotations

import pytest

from batchlane.domain.pool import OPEN_JOBS, PoolChunk, pack


def _chunks(job: str, sizes: list[int], *, input_bytes: int = 0) -> list[PoolChunk]:
    return [PoolChunk(job, i, pages, 0.0, input_bytes) for i, pages in enumerate(sizes)]


def _shape(jobs: list[list[PoolChunk]]) -> list[list[tuple[str, int]]]:
    return [[(c.job_id, c.chunk_index) for c in job] for job in jobs]


def test_chunks_fill_a_job_to_its_record_cap_in_order_and_the_next_opens_a_new_one() -> None:
    jobs = pack(_chunks("a", [40, 40, 20, 30]), max_records=100)
    assert _shape(jobs) == [[("a", 0), ("a", 1), ("a", 2)], [("a", 3)]]
    assert [sum(c.pages for c in j) for j in jobs] == [100, 30]


def test_a_small_chunk_fills_the_gap_an_earlier_job_left() -> None:
    chunks = _chunks("a", [70]) + _chunks("b", [60]) + _chunks("c", [30])
    assert _shape(pack(chunks, max_records=100)) == [[("a", 0), ("c", 0)], [("b", 0)]]


def test_bytes_cap_a_job_as_records_do_and_a_chunk_heavier_than_the_cap_goes_alone() -> None:
    light = _chunks("a", [10, 10], input_bytes=400)
    heavy = _chunks("h", [5], input_bytes=2_000)
    jobs = pack(light + heavy + _chunks("b", [10], input_bytes=500), max_records=100, max_bytes=1_000)
    assert _shape(jobs) == [[("a", 0), ("a", 1)], [("h", 0)], [("b", 0)]]  # 400+400+500 > 1,000; the heavy one alone


def test_without_a_bytes_cap_only_records_count() -> None:
    assert len(pack(_chunks("a", [10, 10], input_bytes=10**12), max_records=100)) == 1


def test_a_chunk_over_the_record_cap_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="chunk 1 of job a has 101 pages, over the 100-record cap"):
        pack(_chunks("a", [5, 101]), max_records=100)


def test_only_the_last_open_jobs_are_tried_so_an_old_gap_stays_empty() -> None:
    # OPEN_JOBS + 1 jobs each left with 10 records free; a 10-page chunk then fits only the newest OPEN_JOBS.
    chunks = [c for i in range(OPEN_JOBS + 1) for c in _chunks(f"j{i}", [90])] + _chunks("late", [10])
    jobs = pack(chunks, max_records=100)
    assert len(jobs) == OPEN_JOBS + 1
    assert [c.job_id for c in jobs[0]] == ["j0"]  # the oldest gap is no longer tried
    assert [c.job_id for c in jobs[1]] == ["j1", "late"]
