"""RetryRepository's contract, on the fake and on PostgreSQL: a job's retries are numbered 1, 2, … with at most one
running, read back typed in attempt order, and each ends once, by a retry's own move."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from batchlane.domain import status as st
from batchlane.domain.status import Entity, JobStatus
from batchlane.pdf.split import plan_chunks
from batchlane.ports import UniqueViolation
from batchlane.rows import JobRetry

OWNER = "owner-retries-contract"
MINUTE = timedelta(minutes=1)
SNAPSHOT = [{"chunkIndex": 1, "resultKey": "results/c1.json", "pagesDone": 2, "pagesFailed": 1, "pagesBatch": 0, "attempts": 3}]


def _job(uow: Any) -> str:
    file_id = uow.jobs.insert_file(owner_id=OWNER, name="book.pdf", s3_key=f"uploads/{uuid.uuid4()}.pdf", size_bytes=1000).id
    job = uow.jobs.insert_job(
        file_id=file_id, owner_id=OWNER, status=JobStatus.COMPLETED, options={}, model_id="model-a", total_pages=4, pages_per_chunk=2,
        chunks=plan_chunks(4, 2),
    )  # fmt: skip
    return str(job.id)


def _insert(uow: Any, job: str, *, pages: list[int] | None = None, error_ids: list[str] | None = None, total: str = "0.40") -> JobRetry:
    retry: JobRetry = uow.retries.insert(
        job_id=job, pages=pages or [3], error_ids=error_ids, previous_pages_failed=1, previous_total_usd=Decimal(total),
        previous_markdown_key=f"markdown/{job}/before-1.md", chunks_before=SNAPSHOT,
    )  # fmt: skip
    return retry


def test_a_job_never_retried_has_no_retry(uow: Any) -> None:
    job = _job(uow)
    assert (uow.retries.running(job), uow.retries.history(job), uow.retries.get(job, 1)) == (None, [], None)


def test_the_first_retry_is_number_one_running_and_reads_back_whole(uow: Any, now: datetime) -> None:
    job = _job(uow)
    inserted = _insert(uow, job, pages=[3, 4], error_ids=["ThrottlingException"], total="0.123456")

    assert isinstance(inserted, JobRetry)
    assert (inserted.job_id, inserted.attempt, inserted.status, inserted.pages, inserted.error_ids) == (job, 1, "running", [3, 4], ["ThrottlingException"])
    assert (inserted.previous_pages_failed, inserted.previous_total_usd, inserted.previous_markdown_key) == (
        1,
        Decimal("0.123456"),
        f"markdown/{job}/before-1.md",
    )
    assert inserted.chunks_before == SNAPSHOT
    assert (inserted.pages_failed, inserted.cost_usd, inserted.error_message, inserted.finished_at) == (None, None, None, None)
    assert abs(inserted.created_at - now) < MINUTE
    assert uow.retries.running(job) == inserted == uow.retries.get(job, 1)
    assert uow.retries.history(job) == [inserted]


def test_no_error_ids_are_kept_as_none(uow: Any) -> None:
    job = _job(uow)
    assert _insert(uow, job, error_ids=[]).error_ids is None


def test_a_second_running_retry_of_a_job_is_refused_by_its_unique_index(uow: Any) -> None:
    job, other = _job(uow), _job(uow)
    _insert(uow, job)
    with pytest.raises(UniqueViolation) as refused, uow:
        _insert(uow, job)
    assert refused.value.constraint == "one_running_retry_per_job"
    assert _insert(uow, other).attempt == 1  # another job's retries are its own
    assert [r.attempt for r in uow.retries.history(job)] == [1]


def test_a_retry_ends_once_and_the_next_is_numbered_after_it(uow: Any, now: datetime) -> None:
    job = _job(uow)
    _insert(uow, job)
    assert uow.retries.finish(job, 1, st.settle(Entity.RETRY), pages_failed=0, cost_usd=Decimal("0.0500001")) is True
    assert uow.retries.finish(job, 1, st.cancel(Entity.RETRY), pages_failed=1, cost_usd=Decimal(1), error_message="late") is False  # ended already

    settled = uow.retries.get(job, 1)
    assert settled is not None and settled.finished_at is not None and abs(settled.finished_at - now) < MINUTE
    assert (settled.status, settled.pages_failed, settled.cost_usd, settled.error_message) == ("completed", 0, Decimal("0.050000"), None)
    assert uow.retries.running(job) is None

    second = _insert(uow, job)
    assert second.attempt == 2
    assert uow.retries.finish(job, 2, st.fail(Entity.RETRY), pages_failed=1, cost_usd=Decimal("0.02"), error_message="the retry could not start") is True
    third = _insert(uow, job)
    assert uow.retries.finish(job, 3, st.cancel(Entity.RETRY), pages_failed=None, cost_usd=Decimal(0)) is True
    history = uow.retries.history(job)
    assert [(r.attempt, r.status) for r in history] == [(1, "completed"), (2, "failed"), (3, "cancelled")]
    assert (history[1].error_message, history[2].pages_failed, third.attempt) == ("the retry could not start", None, 3)
    assert uow.retries.finish(job, 4, st.settle(Entity.RETRY), pages_failed=0, cost_usd=Decimal(0)) is False  # no such retry


def test_only_a_retrys_own_move_ends_it(uow: Any) -> None:
    job = _job(uow)
    _insert(uow, job)
    with pytest.raises(ValueError, match="not a transition of a retry"):
        uow.retries.finish(job, 1, st.settle(), pages_failed=0, cost_usd=Decimal(0))
    assert uow.retries.running(job) is not None


def test_a_retry_needs_its_job(uow: Any) -> None:
    with pytest.raises(Exception), uow:  # the foreign key's error (pg8000's) or the fake's ValueError
        _insert(uow, str(uuid.uuid4()))


def test_a_retry_inserted_in_a_block_that_raises_is_not_kept(uow: Any) -> None:
    job = _job(uow)
    with pytest.raises(RuntimeError), uow:
        _insert(uow, job)
        raise RuntimeError("the move that follows failed")
    assert uow.retries.history(job) == []
    assert _insert(uow, job).attempt == 1
