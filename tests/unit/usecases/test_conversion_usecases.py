"""The conversion's use cases on the in-memory unit of work (no server): a job opened, settled, failed and paused at its
funds hold, and a retry of its failed pages numbered, capped and undone, as only the end-to-end suite checked before."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from usecase_fakes import MODEL

from batchlane import keys
from batchlane.claude import PageResult
from batchlane.domain import status as st
from batchlane.domain.errors import BudgetExceeded, Conflict, LimitReached, NotFound
from batchlane.domain.status import ChunkStatus, FileStatus, JobStatus
from batchlane.filejob import budget
from batchlane.filejob.admission import ChunkNotAdmitted
from batchlane.filejob.chunk import process_admitted_chunk, process_chunk
from batchlane.filejob.create import create_job
from batchlane.filejob.retry import failed_pages, retry_history, start_retry
from batchlane.filejob.settle import fail_job, settle_job
from batchlane.filejob.start import start_conversion
from batchlane.pdf.split import plan_chunks
from batchlane.ports import Services
from fakes import FakeUnitOfWork

OWNER = "owner-1"
PAGES, PER_CHUNK = 4, 2  # chunk 0: pages 1-2, chunk 1: pages 3-4


def _job(uow: FakeUnitOfWork, *, status: str = JobStatus.PROCESSING, hold_usd: str = "1.00", owner: str = OWNER) -> str:
    file_id = uow.jobs.insert_file(owner_id=owner, name="book.pdf", s3_key=f"uploads/{owner}/book.pdf", size_bytes=100).id
    job = uow.jobs.insert_job(
        file_id=file_id, owner_id=owner, status=status, options={}, model_id=MODEL, total_pages=PAGES, pages_per_chunk=PER_CHUNK,
        chunks=plan_chunks(PAGES, PER_CHUNK),
    )  # fmt: skip
    assert uow.jobs.move_file(file_id, st.convert())  # as create_job leaves it
    uow.ledger.place_hold(job_id=job.id, owner_id=owner, amount_usd=Decimal(hold_usd), hours=30)
    return job.id


def _spend(uow: FakeUnitOfWork, job_id: str, chunk_index: int, cost: str) -> None:
    uow.ledger.add_chunk_cost(job_id=job_id, chunk_index=chunk_index, model_id=MODEL, input_tokens=100, output_tokens=50, cost_usd=Decimal(cost), metadata={})


def _convert(svc: Services, uow: FakeUnitOfWork, job_id: str, chunk_index: int, *, failed: set[int] = frozenset(), retry: int | None = None) -> None:  # type: ignore[assignment]
    """The chunk converted as the chunk processor leaves it: its result file, its ledger row, the row completed."""
    chunk = uow.jobs.get_chunk(job_id, chunk_index)
    assert chunk is not None
    pages = [
        PageResult(n, "failed", reason="ThrottlingException", served_by="on_demand") if n in failed else PageResult(n, "converted", f"page {n}")
        for n in range(chunk.first_page, chunk.last_page + 1)
    ]
    key = keys.chunk_result_key(job_id, chunk_index, retry=retry)
    svc.store.put_json(key, {"jobId": job_id, "chunkIndex": chunk_index, "pages": [p.to_json() for p in pages]})
    svc.store.put_bytes(keys.chunk_source_key(job_id, chunk_index), b"%PDF-1.7 chunk", "application/pdf")
    _spend(uow, job_id, chunk_index, "0.10")
    assert uow.jobs.claim_chunk(job_id, chunk_index, "worker") is not None
    n_failed = sum(1 for p in pages if p.status == "failed")
    assert uow.jobs.complete_chunk(
        job_id, chunk_index, "worker", pages_done=len(pages) - n_failed, pages_failed=n_failed, pages_batch=0, cost_usd=Decimal("0.10"), result_key=key
    )


def _assembled(uow: FakeUnitOfWork, job_id: str) -> None:
    """What assemble records (the Markdown itself is assemble's own test's)."""
    failed = sum(c.pages_failed for c in uow.jobs.get_chunks(job_id))
    assert uow.jobs.move_job(job_id, st.assemble(), markdown_key=keys.markdown_key(job_id), pages_converted=PAGES - failed, pages_failed=failed)


def _completed_with_a_failed_page(svc: Services, uow: FakeUnitOfWork) -> str:
    """A job completed with page 3 failed (chunk 1), its Markdown written, 0.20 USD spent."""
    job_id = _job(uow)
    _convert(svc, uow, job_id, 0)
    _convert(svc, uow, job_id, 1, failed={3})
    _assembled(uow, job_id)
    svc.store.put_bytes(keys.markdown_key(job_id), b"# the book, page 3 missing", "text/markdown")
    assert settle_job(svc, job_id)["settled"] is True
    return job_id


def _events(svc: Services, job_id: str) -> list[str]:
    return [detail["status"] for _, detail in svc.bus.events if detail.get("jobId") == job_id]  # type: ignore[attr-defined]


# -- settle and fail ---------------------------------------------------------------------------
def test_a_settled_job_costs_what_its_ledger_says_and_its_hold_settles_at_that(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow, hold_usd="0.75")
    _convert(svc_on_fakes, fake_uow, job_id, 0)
    _convert(svc_on_fakes, fake_uow, job_id, 1, failed={4})
    _spend(fake_uow, job_id, 1, "0.05")  # an attempt that did not complete the chunk: booked all the same
    _assembled(fake_uow, job_id)

    answer = settle_job(svc_on_fakes, job_id)

    assert (answer["status"], answer["settled"], Decimal(answer["totalCostUsd"])) == ("completed", True, Decimal("0.25"))
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None
    assert (job.status, job.total_cost_usd, job.error_id, job.error_message) == (
        "completed",
        Decimal("0.25"),
        "PAGES_FAILED",
        "1 of 4 pages could not be converted",
    )
    hold = fake_uow.ledger.get_hold(job_id)
    assert hold is not None and (hold.outcome, hold.settled_usd) == ("settled", Decimal("0.25"))
    file_row = fake_uow.jobs.get_file(job.file_id)
    assert file_row is not None and file_row.status == FileStatus.CONVERTED
    assert _events(svc_on_fakes, job_id) == ["completed"]
    assert settle_job(svc_on_fakes, job_id) == {"jobId": job_id, "status": "completed", "settled": False}  # a repeated Settle changes nothing
    assert fake_uow.ledger.get_hold(job_id) == hold


def test_a_failed_job_keeps_its_spend_and_releases_its_hold(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow)
    _convert(svc_on_fakes, fake_uow, job_id, 0)

    answer = fail_job(svc_on_fakes, job_id, error_id="CHUNK_FAILED", message="chunk 1 failed for good")

    assert answer == {"jobId": job_id, "status": "failed", "errorId": "CHUNK_FAILED"}
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None and (job.status, job.total_cost_usd, job.error_id) == ("failed", Decimal("0.10"), "CHUNK_FAILED")
    assert [c.status for c in fake_uow.jobs.get_chunks(job_id)] == [ChunkStatus.COMPLETED, ChunkStatus.FAILED]  # what was converted stays
    hold = fake_uow.ledger.get_hold(job_id)
    assert hold is not None and (hold.outcome, hold.settled_usd) == ("released", Decimal(0))
    assert fake_uow.jobs.get_file(job.file_id).status == FileStatus.FAILED  # type: ignore[union-attr]
    assert fail_job(svc_on_fakes, job_id, error_id="AGAIN", message="late") == {"jobId": job_id, "status": "failed"}  # failed already


# -- the funds hold: pause, settle the pause, resume ----------------------------------------------
def _refused(uow: FakeUnitOfWork, job_id: str, cost: Decimal) -> None:
    """A request of ``cost`` did not fit the job's hold (its chunk stopped, a continuation is due)."""
    assert uow.budgets.reserve(job_id, cost) is False


def _budget(uow: FakeUnitOfWork, owner: str, usd: Decimal | str) -> None:
    uow.budgets.set_override(owner, usd_per_month=Decimal(usd), max_live_jobs=None, max_live_pages=None, updated_by="admin")


def test_a_chunk_does_not_start_when_the_request_that_did_not_fit_cannot_fit_the_owners_month(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    least = budget.cheapest_request_usd(svc_on_fakes, MODEL)
    roomy = _job(fake_uow, hold_usd=str(least), owner="owner-roomy")
    tight = _job(fake_uow, hold_usd=str(least), owner="owner-tight")
    for job_id in (roomy, tight):  # one request sent and booked (its worst case reserved, then what it cost); the next did not fit
        assert fake_uow.budgets.reserve(job_id, least) is True
        fake_uow.budgets.settle_reservation(job_id, reserved=least, actual=least)
        _spend(fake_uow, job_id, 0, str(least))
        _refused(fake_uow, job_id, least)
    _budget(fake_uow, "owner-tight", least * Decimal("1.5"))  # half a request left this month

    before = fake_uow.jobs.get_chunk(tight, 0)
    assert process_chunk(svc_on_fakes, tight, 0, worker_id="w") == {"jobId": tight, "chunkIndex": 0, "status": "paused_budget"}

    paused = fake_uow.jobs.get_job(tight)
    assert paused is not None and paused.status == JobStatus.PAUSED_BUDGET and paused.error_message is not None
    assert f"its next request may cost up to {least:.2f} USD" in paused.error_message
    chunk = fake_uow.jobs.get_chunk(tight, 0)
    assert chunk == before and chunk is not None and (chunk.worker_id, chunk.attempts) == (None, 0)  # never claimed
    job = fake_uow.jobs.get_job(roomy)
    assert job is not None and budget.open_window(svc_on_fakes, job, pages=PER_CHUNK).paused is False  # its month has room: the hold grows
    assert fake_uow.jobs.get_job(roomy).status == JobStatus.PROCESSING  # type: ignore[union-attr]


def test_a_paused_job_is_announced_once_by_the_recovery_sweep_and_may_then_be_resumed(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow, hold_usd="0.10")
    _convert(svc_on_fakes, fake_uow, job_id, 0)  # 0.10 spent
    _refused(fake_uow, job_id, Decimal("0.20"))
    _budget(fake_uow, OWNER, "0.10")
    assert process_chunk(svc_on_fakes, job_id, 1, worker_id="w")["status"] == "paused_budget"
    with pytest.raises(Conflict) as draining:
        budget.resume_job(svc_on_fakes, OWNER, job_id)
    assert draining.value.error_id == "PAUSE_DRAINING"  # its last chunks may still run: not yet

    assert settle_job(svc_on_fakes, job_id, once=True) == {"jobId": job_id, "status": "paused_budget", "settled": False}
    assert settle_job(svc_on_fakes, job_id, once=True)["settled"] is False
    assert _events(svc_on_fakes, job_id) == ["paused_budget"]  # the sweep's second pass announces nothing
    assert fake_uow.jobs.get_job(job_id).pause_settled is True  # type: ignore[union-attr]
    _budget(fake_uow, OWNER, "1")

    answer = budget.resume_job(svc_on_fakes, OWNER, job_id)

    hold = fake_uow.ledger.get_hold(job_id)
    assert hold is not None and answer == {"jobId": job_id, "status": "processing", "holdUsd": str(hold.amount_usd), "spentUsd": "0.100000", "resume": 1}
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None and (job.status, job.budget_resumes) == ("processing", 1)
    assert ("resume", f"{job_id}-1") in svc_on_fakes.workflows.started  # type: ignore[attr-defined]


def test_a_resume_the_owners_budget_cannot_carry_changes_nothing(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow, hold_usd="0.10")
    _convert(svc_on_fakes, fake_uow, job_id, 0)
    _refused(fake_uow, job_id, Decimal("0.20"))
    _budget(fake_uow, OWNER, "0.15")
    assert process_chunk(svc_on_fakes, job_id, 1, worker_id="w")["status"] == "paused_budget"
    settle_job(svc_on_fakes, job_id)

    with pytest.raises(BudgetExceeded):
        budget.resume_job(svc_on_fakes, OWNER, job_id)

    job = fake_uow.jobs.get_job(job_id)
    assert job is not None and (job.status, job.budget_resumes) == ("paused_budget", 0)
    assert fake_uow.ledger.get_hold(job_id).amount_usd == Decimal("0.10")  # type: ignore[union-attr]
    assert not [kind for kind, _ in svc_on_fakes.workflows.started if kind == "resume"]  # type: ignore[attr-defined]
    with pytest.raises(NotFound):
        budget.resume_job(svc_on_fakes, "someone-else", job_id)  # another owner's job is not there for them


# -- retrying failed pages ------------------------------------------------------------------------
def test_a_retry_reopens_only_the_failed_pages_chunk_and_a_second_post_answers_it(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _completed_with_a_failed_page(svc_on_fakes, fake_uow)
    assert [(p.page, p.reason, p.lane, p.chunk_index) for p in failed_pages(svc_on_fakes, job_id)] == [(3, "ThrottlingException", "on_demand", 1)]

    started = start_retry(svc_on_fakes, job_id)

    assert (started.attempt, started.pages, started.status, started.already_running) == (1, [3], "pending", False)
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None and (job.status, job.retry_attempt, job.retry_pages) == ("pending", 1, (3,))
    reopened, kept = fake_uow.jobs.get_chunk(job_id, 1), fake_uow.jobs.get_chunk(job_id, 0)
    assert reopened is not None and kept is not None
    assert (reopened.status, reopened.attempts, kept.status) == (ChunkStatus.PENDING, 0, ChunkStatus.COMPLETED)
    retry = fake_uow.retries.running(job_id)
    assert retry is not None and (retry.attempt, retry.pages, retry.previous_pages_failed, retry.previous_total_usd) == (1, [3], 1, Decimal("0.2"))
    assert [s["chunkIndex"] for s in retry.chunks_before] == [1] and retry.chunks_before[0]["resultKey"] == keys.chunk_result_key(job_id, 1)
    hold = fake_uow.ledger.get_hold(job_id)
    assert hold is not None and hold.outcome is None and hold.amount_usd == Decimal("0.2")  # open again; the retry's chunk starts grow it
    assert svc_on_fakes.store.get_bytes(keys.markdown_before_retry_key(job_id, 1)) == b"# the book, page 3 missing"
    assert ("retry", f"{job_id}-1") in svc_on_fakes.workflows.started  # type: ignore[attr-defined]

    again = start_retry(svc_on_fakes, job_id)
    assert (again.attempt, again.pages, again.already_running) == (1, [3], True)
    assert len(fake_uow.retries.history(job_id)) == 1


def test_a_settled_retry_books_only_what_it_cost_and_the_next_retry_is_number_two(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _completed_with_a_failed_page(svc_on_fakes, fake_uow)
    start_retry(svc_on_fakes, job_id)
    assert start_conversion(fake_uow, job_id)["chunks"] == [1]
    _convert(svc_on_fakes, fake_uow, job_id, 1, failed={3}, retry=1)  # page 3 fails again
    _assembled(fake_uow, job_id)

    assert settle_job(svc_on_fakes, job_id)["settled"] is True

    [first] = retry_history(svc_on_fakes, job_id)
    assert (first["retry"], first["status"], Decimal(first["costUsd"]), Decimal(first["totalUsdBefore"])) == (1, "completed", Decimal("0.10"), Decimal("0.20"))
    assert (first["pagesFailedBefore"], first["pagesFailedAfter"]) == (1, 1)  # page 3 failed again: the history says so
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None and (job.status, job.retry_attempt, job.total_cost_usd) == ("completed", None, Decimal("0.30"))
    assert start_retry(svc_on_fakes, job_id).attempt == 2
    assert [r.attempt for r in fake_uow.retries.history(job_id)] == [1, 2]


def test_a_failed_retry_puts_the_job_back_as_it_was_with_the_retrys_spend_added(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _completed_with_a_failed_page(svc_on_fakes, fake_uow)
    start_retry(svc_on_fakes, job_id)
    start_conversion(fake_uow, job_id)
    _spend(fake_uow, job_id, 1, "0.04")  # what the retry spent before it failed

    answer = fail_job(svc_on_fakes, job_id, error_id="CHUNK_FAILED", message="the retried chunk failed")

    assert answer == {"jobId": job_id, "status": "completed", "errorId": "CHUNK_FAILED", "retryFailed": 1}
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None
    assert (job.status, job.retry_attempt, job.pages_failed, job.total_cost_usd, job.error_id) == ("completed", None, 1, Decimal("0.24"), "PAGES_FAILED")
    chunk = fake_uow.jobs.get_chunk(job_id, 1)
    assert chunk is not None and (chunk.status, chunk.result_key, chunk.pages_failed) == (ChunkStatus.COMPLETED, keys.chunk_result_key(job_id, 1), 1)
    [retry] = fake_uow.retries.history(job_id)
    assert (retry.status, retry.cost_usd, retry.error_message) == ("failed", Decimal("0.04"), "CHUNK_FAILED: the retried chunk failed")
    hold = fake_uow.ledger.get_hold(job_id)
    assert hold is not None and (hold.outcome, hold.settled_usd) == ("settled", Decimal("0.24"))
    assert fake_uow.jobs.get_file(job.file_id).status == FileStatus.CONVERTED  # type: ignore[union-attr]


def test_a_retry_is_a_live_job_again_and_refused_at_the_owners_live_job_cap(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _completed_with_a_failed_page(svc_on_fakes, fake_uow)
    _job(fake_uow)  # another of the owner's jobs, still running
    fake_uow.budgets.set_override(OWNER, usd_per_month=None, max_live_jobs=1, max_live_pages=None, updated_by="admin")
    settled_hold = fake_uow.ledger.get_hold(job_id)

    with pytest.raises(LimitReached) as refused:
        start_retry(svc_on_fakes, job_id)

    assert refused.value.error_id == "LIVE_JOBS_LIMIT"
    assert fake_uow.retries.history(job_id) == []
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None and (job.status, job.retry_attempt) == ("completed", None)
    assert fake_uow.jobs.get_chunk(job_id, 1).status == ChunkStatus.COMPLETED  # type: ignore[union-attr]
    assert fake_uow.ledger.get_hold(job_id) == settled_hold
    assert not [kind for kind, _ in svc_on_fakes.workflows.started if kind == "retry"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("setup", "error_id"),
    [
        ("running", "NOT_RETRYABLE"),
        ("other_reason", "NOTHING_TO_RETRY"),
        ("expired", "SOURCE_EXPIRED"),
    ],
)
def test_a_retry_that_cannot_be_is_refused_before_anything_is_written(svc_on_fakes: Services, fake_uow: FakeUnitOfWork, setup: str, error_id: str) -> None:
    if setup == "running":
        job_id = _job(fake_uow)
    else:
        job_id = _completed_with_a_failed_page(svc_on_fakes, fake_uow)
    if setup == "expired":
        svc_on_fakes.store.delete_keys([keys.chunk_source_key(job_id, 1)])  # the bucket's 14-day lifecycle
    with pytest.raises(Conflict) as refused:
        start_retry(svc_on_fakes, job_id, error_ids=["max_tokens"] if setup == "other_reason" else None)
    assert refused.value.error_id == error_id
    assert fake_uow.retries.history(job_id) == []


# -- opening a job ------------------------------------------------------------------------------
def _upload(svc: Services, uow: FakeUnitOfWork, *, size: int = 1000) -> str:
    file_row = uow.jobs.insert_file(owner_id=OWNER, name="new.pdf", s3_key=f"uploads/{OWNER}/new.pdf", size_bytes=size)
    svc.store.put_bytes(file_row.s3_key, b"x" * size, "application/pdf")
    return file_row.id


def test_a_new_job_is_recorded_splitting_and_its_intake_started(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    file_id = _upload(svc_on_fakes, fake_uow)
    created = create_job(svc_on_fakes, file_id=file_id, options={"highFidelity": False})
    job = fake_uow.jobs.get_job(created.job_id)
    assert job is not None and (created.status, job.status, job.model_id, job.options["highFidelity"]) == ("splitting", "splitting", MODEL, False)
    assert fake_uow.jobs.get_file(file_id).status == FileStatus.CONVERTING  # type: ignore[union-attr]
    assert svc_on_fakes.workflows.started == [("intake", created.job_id)]  # type: ignore[attr-defined]


def test_a_job_for_an_unpriced_model_is_recorded_failed_and_its_file_rejected(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    file_id = _upload(svc_on_fakes, fake_uow)
    created = create_job(svc_on_fakes, file_id=file_id, options={"modelId": "vendor.unpriced-model-v1"})
    assert (created.status, created.error_id) == ("failed", "MODEL_UNKNOWN")
    assert fake_uow.jobs.get_job(created.job_id).status == JobStatus.FAILED  # type: ignore[union-attr]
    assert fake_uow.jobs.get_file(file_id).status == FileStatus.FAILED  # type: ignore[union-attr]
    assert svc_on_fakes.workflows.started == []  # type: ignore[attr-defined]


def test_a_job_over_the_live_job_cap_is_not_recorded_at_all(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    _job(fake_uow)
    fake_uow.budgets.set_override(OWNER, usd_per_month=None, max_live_jobs=1, max_live_pages=None, updated_by="admin")
    file_id = _upload(svc_on_fakes, fake_uow)
    with pytest.raises(LimitReached):
        create_job(svc_on_fakes, file_id=file_id)
    assert fake_uow.jobs.live_job_of_file(file_id) is None
    assert fake_uow.jobs.get_file(file_id).status == FileStatus.UPLOADED  # type: ignore[union-attr]
    assert svc_on_fakes.workflows.started == []  # type: ignore[attr-defined]


def test_a_job_whose_intake_cannot_start_ends_failed(svc_on_fakes: Services, fake_uow: FakeUnitOfWork, monkeypatch: pytest.MonkeyPatch) -> None:
    file_id = _upload(svc_on_fakes, fake_uow)

    def unavailable(job_id: str) -> str:
        raise RuntimeError("StartExecution throttled")

    monkeypatch.setattr(svc_on_fakes.workflows, "start_intake", unavailable)
    with pytest.raises(RuntimeError):
        create_job(svc_on_fakes, file_id=file_id)
    [job] = fake_uow.jobs.jobs_of_owner(OWNER)
    assert (job.status, job.error_id) == ("failed", "INTAKE_UNAVAILABLE")


# -- the chunk processor's gate -------------------------------------------------------------------
def test_a_chunk_over_its_owners_share_is_not_admitted_and_a_finished_chunk_frees_its_slot(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    svc_on_fakes.settings = svc_on_fakes.settings.model_copy(update={"batchlane_chunk_slots": 1})
    job_id = _job(fake_uow)
    _convert(svc_on_fakes, fake_uow, job_id, 0)
    slots: Any = svc_on_fakes.chunk_admissions()
    assert slots.admit(job_id=job_id, chunk_index=1, owner_id=OWNER, capacity=1, ttl_s=900).admitted  # chunk 1 runs elsewhere

    with pytest.raises(ChunkNotAdmitted):
        process_admitted_chunk(svc_on_fakes, job_id, 0, worker_id="w", deadline=1e12, ttl_s=900)
    slots.release(job_id=job_id, chunk_index=1)

    assert process_admitted_chunk(svc_on_fakes, job_id, 0, worker_id="w", deadline=1e12, ttl_s=900)["repeat"] is True  # converted already
    assert slots.slots == {}  # its slot freed once it answered
