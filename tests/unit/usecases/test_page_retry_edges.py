"""Retrying a completed job's failed pages, at its edges (no server): what the failed-page list says about each page
(its reason, lane, attempts over every run, in page order), what a retry writes and refuses, and what its answers say."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

import pytest
from usecase_fakes import MODEL, MemoryStore

from batchlane import keys
from batchlane.claude import PageResult
from batchlane.domain import status as st
from batchlane.domain.errors import BudgetExceeded, Conflict, NotFound
from batchlane.domain.limits import PAGE_TOO_LARGE
from batchlane.domain.status import FileStatus
from batchlane.filejob.retry import FailedPage, RetryStarted, end_retry, failed_pages, retry_cures, retry_history, retry_scope, start_retry
from batchlane.filejob.settle import settle_job
from batchlane.filejob.start import start_conversion
from batchlane.pdf.split import plan_chunks
from batchlane.ports import Services, UniqueViolation
from fakes import FakeUnitOfWork
from fakes.retries import FakeRetries

OWNER = "owner-1"
PAGES, PER_CHUNK = 4, 2  # chunk 0: pages 1-2, chunk 1: pages 3-4


class RecordingStore(MemoryStore):
    """The memory store, remembering each object's content type and which keys were read (and running a hook on a put)."""

    def __init__(self, bucket: str) -> None:
        super().__init__(bucket=bucket)
        self.content_types: dict[str, str] = {}
        self.reads: list[str] = []
        self.on_put: dict[str, Any] = {}  # key -> callable run once when the key is written

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        super().put_bytes(key, data, content_type)
        self.content_types[key] = content_type
        hook = self.on_put.pop(key, None)
        if hook is not None:
            hook()

    def get_bytes(self, key: str) -> bytes:
        self.reads.append(key)
        return super().get_bytes(key)


@pytest.fixture
def svc(svc_on_fakes: Services) -> Services:
    return dataclasses.replace(svc_on_fakes, store=RecordingStore(svc_on_fakes.store.bucket))


def _store(svc: Services) -> RecordingStore:
    assert isinstance(svc.store, RecordingStore)
    return svc.store


def _job(uow: FakeUnitOfWork) -> str:
    file_id = uow.jobs.insert_file(owner_id=OWNER, name="book.pdf", s3_key=f"uploads/{OWNER}/book.pdf", size_bytes=100).id
    job = uow.jobs.insert_job(
        file_id=file_id, owner_id=OWNER, status="processing", options={}, model_id=MODEL, total_pages=PAGES, pages_per_chunk=PER_CHUNK,
        chunks=plan_chunks(PAGES, PER_CHUNK),
    )  # fmt: skip
    assert uow.jobs.move_file(file_id, st.convert())
    uow.ledger.place_hold(job_id=job.id, owner_id=OWNER, amount_usd=Decimal("1.00"), hours=30)
    return job.id


def _convert(
    svc: Services,
    uow: FakeUnitOfWork,
    job_id: str,
    index: int,
    pages: list[PageResult],
    *,
    claims: int = 1,
    retry: int | None = None,
    cost: str = "0.10",
    batch: int = 0,
) -> None:
    """The chunk converted as the chunk processor leaves it (``claims``: how many times it was claimed, i.e. its attempts)."""
    key = keys.chunk_result_key(job_id, index, retry=retry)
    svc.store.put_json(key, {"jobId": job_id, "chunkIndex": index, "pages": [p.to_json() for p in pages]})
    svc.store.put_bytes(keys.chunk_source_key(job_id, index), b"%PDF-1.7 chunk", "application/pdf")
    if Decimal(cost):
        uow.ledger.add_chunk_cost(job_id=job_id, chunk_index=index, model_id=MODEL, input_tokens=100, output_tokens=50, cost_usd=Decimal(cost), metadata={})
    for _ in range(claims):
        assert uow.jobs.claim_chunk(job_id, index, "worker") is not None
    failed = sum(1 for p in pages if p.status == "failed")
    assert uow.jobs.complete_chunk(
        job_id, index, "worker", pages_done=len(pages) - failed, pages_failed=failed, pages_batch=batch, cost_usd=Decimal(cost), result_key=key
    )


def _ok(n: int) -> PageResult:
    return PageResult(n, "converted", f"page {n}")


def _failed(n: int, reason: str | None = "ThrottlingException", served_by: str | None = "on_demand") -> PageResult:
    return PageResult(n, "failed", reason=reason, served_by=served_by)


def _complete(svc: Services, uow: FakeUnitOfWork, job_id: str, *, markdown: bool = True) -> None:
    failed = sum(c.pages_failed for c in uow.jobs.get_chunks(job_id))
    columns: dict[str, Any] = {"pages_converted": PAGES - failed, "pages_failed": failed}
    if markdown:
        columns["markdown_key"] = keys.markdown_key(job_id)
        svc.store.put_bytes(keys.markdown_key(job_id), b"# the book", "text/markdown")
    assert uow.jobs.move_job(job_id, st.assemble(), **columns)
    assert settle_job(svc, job_id)["settled"] is True


def _two_failed_pages(svc: Services, uow: FakeUnitOfWork) -> str:
    """A completed job whose pages 2 (chunk 0, throttled) and 4 (chunk 1, a timeout) failed."""
    job_id = _job(uow)
    _convert(svc, uow, job_id, 0, [_ok(1), _failed(2)])
    _convert(svc, uow, job_id, 1, [_ok(3), _failed(4, "ReadTimeout")])
    _complete(svc, uow, job_id)
    return job_id


# -- the failed-page list ---------------------------------------------------------------------------
def test_the_failed_page_list_names_each_pages_reason_and_lane_and_never_sent_pages_have_none(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow)
    _convert(svc, fake_uow, job_id, 0, [_failed(2, "stop_reason=max_tokens", "batch"), _failed(1, None, None)])  # listed out of order
    _convert(svc, fake_uow, job_id, 1, [_failed(3, PAGE_TOO_LARGE, None), _ok(4)])
    _complete(svc, fake_uow, job_id)

    pages = failed_pages(svc, job_id)

    assert [(p.page, p.reason, p.lane, p.chunk_index, p.attempts) for p in pages] == [
        (1, "unknown", "on_demand", 0, 1),  # no reason recorded, no lane recorded: sent on demand
        (2, "stop_reason=max_tokens", "batch", 0, 1),
        (3, PAGE_TOO_LARGE, None, 1, 1),  # refused before any model call: it has no lane
    ]


def test_only_the_result_files_of_chunks_that_count_failed_pages_are_read(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow)
    _convert(svc, fake_uow, job_id, 0, [_ok(1), _ok(2)])
    _convert(svc, fake_uow, job_id, 1, [_ok(3), _failed(4)])
    _complete(svc, fake_uow, job_id)
    _store(svc).reads.clear()

    assert [p.page for p in failed_pages(svc, job_id)] == [4]
    assert _store(svc).reads == [keys.chunk_result_key(job_id, 1)]


def test_a_pages_attempts_add_up_over_the_conversion_and_every_retry_that_sent_it_again(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow)
    _convert(svc, fake_uow, job_id, 0, [_ok(1), _ok(2)])
    _convert(svc, fake_uow, job_id, 1, [_failed(3), _failed(4)], claims=3)  # the conversion tried chunk 1 three times
    _complete(svc, fake_uow, job_id)
    assert start_retry(svc, job_id, pages=[3]).pages == [3]
    assert start_conversion(fake_uow, job_id)["chunks"] == [1]
    _convert(svc, fake_uow, job_id, 1, [_failed(3), _failed(4)], retry=1, cost="0.05")  # one more attempt; page 3 fails again
    _complete(svc, fake_uow, job_id)

    attempts = {p.page: p.attempts for p in failed_pages(svc, job_id)}

    assert attempts == {3: 4, 4: 3}, "page 3 was sent in the conversion (3 tries) and in retry 1 (1 try); page 4 only in the conversion"


def test_a_retry_and_a_page_as_the_api_shows_them(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    assert FailedPage(4, "ReadTimeout", 2, None, 1).to_json() == {
        "page": 4,
        "status": "failed",
        "reason": "ReadTimeout",
        "attempts": 2,
        "lane": None,
        "chunkIndex": 1,
        "retryLikelyToHelp": True,  # a timeout: a retry is likely to convert it
        "nextStep": "A retry (on-demand, charged again) is likely to convert it.",
    }
    assert RetryStarted("job-1", 2, [3, 4], "pending").to_json() == {
        "jobId": "job-1",
        "retry": 2,
        "pages": [3, 4],
        "status": "pending",
        "alreadyRunning": False,
        "execution": "retry-job-1-2",
        "lane": "on_demand",
    }
    assert retry_cures("ThrottlingException") is True
    assert retry_cures("stop_reason=refusal") is False and retry_cures(PAGE_TOO_LARGE) is False


# -- choosing pages -----------------------------------------------------------------------------
def test_a_retry_takes_only_the_pages_of_the_asked_reason_or_the_asked_numbers(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _two_failed_pages(svc, fake_uow)
    assert start_retry(svc, job_id, error_ids=["ReadTimeout"]).pages == [4]
    [retry] = retry_history(svc, job_id)
    assert retry["errorIds"] == ["ReadTimeout"] and retry["pages"] == [4]

    other = _two_failed_pages(svc, fake_uow)
    assert start_retry(svc, other, pages=[2]).pages == [2]
    assert retry_history(svc, other)[0]["errorIds"] is None


# -- what a retry writes ------------------------------------------------------------------------------
def test_a_started_retry_clears_the_jobs_error_frees_its_chunk_and_reopens_its_file(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _two_failed_pages(svc, fake_uow)
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None and job.error_id == "PAGES_FAILED"

    started = start_retry(svc, job_id, pages=[4])

    assert (started.job_id, started.attempt, started.pages, started.status) == (job_id, 1, [4], "pending")
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None and (job.status, job.error_id, job.error_message) == ("pending", None, None)
    chunk = fake_uow.jobs.get_chunk(job_id, 1)
    assert chunk is not None and (chunk.status, chunk.attempts, chunk.worker_id) == ("pending", 0, None)
    assert fake_uow.jobs.get_file(job.file_id).status == FileStatus.CONVERTING  # type: ignore[union-attr]
    assert svc.store.get_json(keys.chunk_partial_key(job_id, 1)) == {"pages": [], "continuations": 0}
    before = keys.markdown_before_retry_key(job_id, 1)
    assert _store(svc).content_types[before] == "text/markdown; charset=utf-8"
    [row] = fake_uow.retries.history(job_id)
    assert row.previous_markdown_key == before
    assert retry_history(svc, job_id)[0]["markdownBeforeKey"] == before


def test_a_retry_of_a_job_with_no_markdown_keeps_no_copy(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow)
    _convert(svc, fake_uow, job_id, 0, [_failed(1), _failed(2)], cost="0")
    _convert(svc, fake_uow, job_id, 1, [_failed(3), _failed(4)], cost="0")
    _complete(svc, fake_uow, job_id, markdown=False)

    start_retry(svc, job_id, pages=[1])

    [row] = fake_uow.retries.history(job_id)
    assert row.previous_markdown_key is None
    assert row.previous_total_usd == Decimal(0), "the job had cost nothing: the retry's cost is all it spends"


def test_the_history_of_a_finished_retry_says_when_it_ended_and_what_it_cost(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _two_failed_pages(svc, fake_uow)
    start_retry(svc, job_id, pages=[4])
    [running] = retry_history(svc, job_id)
    assert (running["status"], running["costUsd"], running["finishedAt"], running["pagesFailedAfter"]) == ("running", None, None, None)
    assert running["pagesFailedBefore"] == 2 and running["execution"] == f"retry-{job_id}-1"
    assert running["createdAt"] == fake_uow.state.clock.now().isoformat()

    answer = end_retry(svc, job_id, outcome="cancelled", message="x" * 600)

    assert answer == {"jobId": job_id, "retry": 1, "status": "completed", "retryStatus": "cancelled", "previousStatus": "pending"}
    [ended] = retry_history(svc, job_id)
    assert (ended["status"], Decimal(ended["costUsd"]), ended["pagesFailedAfter"]) == ("cancelled", Decimal(0), 2)
    assert ended["finishedAt"] == fake_uow.state.clock.now().isoformat()
    assert ended["error"] == "x" * 500
    chunk = fake_uow.jobs.get_chunk(job_id, 1)
    assert chunk is not None
    assert (chunk.status, chunk.result_key, chunk.pages_done, chunk.pages_failed, chunk.pages_batch) == ("completed", keys.chunk_result_key(job_id, 1), 1, 1, 0)
    untouched = fake_uow.jobs.get_chunk(job_id, 0)
    assert untouched is not None and untouched.status == "completed"


def test_a_retry_that_is_assembling_can_no_longer_be_cancelled_but_can_still_fail(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _two_failed_pages(svc, fake_uow)
    start_retry(svc, job_id, pages=[4])
    start_conversion(fake_uow, job_id)
    assert fake_uow.jobs.move_job(job_id, st.assemble())

    with pytest.raises(Conflict) as refused:
        end_retry(svc, job_id, outcome="cancelled", message="stop")
    assert refused.value.error_id == "CONVERSION_FINISHING"

    failed = end_retry(svc, job_id, outcome="failed", message="assembly broke")
    assert failed is not None and (failed["retryStatus"], failed["previousStatus"]) == ("failed", "assembling")
    assert retry_history(svc, job_id)[0]["status"] == "failed"


def test_cancelling_a_retry_still_converting_puts_the_job_back(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _two_failed_pages(svc, fake_uow)
    start_retry(svc, job_id, pages=[4])
    start_conversion(fake_uow, job_id)

    answer = end_retry(svc, job_id, outcome="cancelled", message="stop")

    assert answer is not None and answer["previousStatus"] == "processing"
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None and (job.status, job.retry_attempt) == ("completed", None)


def test_a_retry_whose_workflow_cannot_start_is_ended_failed_and_the_job_put_back(
    svc: Services, fake_uow: FakeUnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = _two_failed_pages(svc, fake_uow)

    def refuse(job_id: str, attempt: int) -> str:
        raise RuntimeError("Step Functions is down")

    monkeypatch.setattr(svc.workflows, "start_retry", refuse)
    with pytest.raises(RuntimeError):
        start_retry(svc, job_id, pages=[4])

    [retry] = retry_history(svc, job_id)
    assert (retry["status"], retry["error"]) == ("failed", "The retry could not be started.")
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None and (job.status, job.retry_attempt, job.error_id) == ("completed", None, "PAGES_FAILED")


# -- races and refusals ---------------------------------------------------------------------------------
def test_a_post_that_finds_a_retry_running_answers_that_retry(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _two_failed_pages(svc, fake_uow)
    start_retry(svc, job_id, pages=[4])

    again = start_retry(svc, job_id, pages=[2])

    assert again.to_json() | {"execution": None} == {
        "jobId": job_id,
        "retry": 1,
        "pages": [4],
        "status": "pending",
        "alreadyRunning": True,
        "execution": None,
        "lane": "on_demand",
    }


def test_a_retry_that_a_concurrent_post_started_while_this_one_prepared_is_answered_not_doubled(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _two_failed_pages(svc, fake_uow)

    def the_other_post() -> None:  # lands between this POST's first look and its transaction
        fake_uow.retries.insert(
            job_id=job_id, pages=[2], error_ids=None, previous_pages_failed=2, previous_total_usd=Decimal("0.2"), previous_markdown_key=None, chunks_before=[]
        )
        assert fake_uow.jobs.move_job(job_id, st.retry(), retry_attempt=1, retry_pages=[2])

    _store(svc).on_put[keys.markdown_before_retry_key(job_id, 1)] = the_other_post

    answer = start_retry(svc, job_id, pages=[4])

    assert (answer.job_id, answer.attempt, answer.pages, answer.status, answer.already_running) == (job_id, 1, [2], "pending", True)
    assert len(fake_uow.retries.history(job_id)) == 1
    assert not [kind for kind, _ in svc.workflows.started if kind == "retry"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("meanwhile", "error_id"),
    [("job_moved", "NOT_RETRYABLE"), ("retry_came_and_went", "JOB_CHANGED"), ("file_converted_again", "CONVERSION_IN_PROGRESS")],
)
def test_a_job_that_changed_while_the_retry_prepared_is_refused_and_nothing_is_written(
    svc: Services, fake_uow: FakeUnitOfWork, meanwhile: str, error_id: str
) -> None:
    job_id = _two_failed_pages(svc, fake_uow)
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None

    def change() -> None:
        if meanwhile == "job_moved":
            assert fake_uow.jobs.move_job(job_id, st.retry())
        elif meanwhile == "retry_came_and_went":
            fake_uow.retries.insert(
                job_id=job_id, pages=[2], error_ids=None, previous_pages_failed=2, previous_total_usd=Decimal(0), previous_markdown_key=None, chunks_before=[]
            )
            assert fake_uow.retries.finish(job_id, 1, st.settle(st.Entity.RETRY), pages_failed=2, cost_usd=Decimal(0))
        else:  # the user converts the same file again: its new job is live
            fake_uow.jobs.insert_job(
                file_id=job.file_id, owner_id=OWNER, status="processing", options={}, model_id=MODEL, total_pages=PAGES, pages_per_chunk=PER_CHUNK,
                chunks=plan_chunks(PAGES, PER_CHUNK),
            )  # fmt: skip

    _store(svc).on_put[keys.markdown_before_retry_key(job_id, 1)] = change
    runs_before = len(fake_uow.retries.history(job_id))

    with pytest.raises(Conflict) as refused:
        start_retry(svc, job_id, pages=[4])

    assert refused.value.error_id == error_id
    assert len(fake_uow.retries.history(job_id)) == runs_before + (1 if meanwhile == "retry_came_and_went" else 0)
    chunk = fake_uow.jobs.get_chunk(job_id, 1)
    assert chunk is not None and chunk.status == "completed"


def test_a_retry_over_the_owners_monthly_budget_is_refused(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _two_failed_pages(svc, fake_uow)
    fake_uow.budgets.set_override(OWNER, usd_per_month=Decimal("0.25"), max_live_jobs=None, max_live_pages=None, updated_by="admin")

    with pytest.raises(BudgetExceeded):
        start_retry(svc, job_id, pages=[4])

    assert fake_uow.retries.history(job_id) == []


def test_a_retry_of_a_job_that_does_not_exist_is_not_found(svc: Services) -> None:
    with pytest.raises(NotFound) as missing:
        start_retry(svc, "00000000-0000-0000-0000-000000000000")
    assert missing.value.error_id == "JOB_NOT_FOUND"


def test_while_a_retry_runs_its_scope_is_on_the_job_and_its_pages_are_not_listed_as_failed(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _two_failed_pages(svc, fake_uow)
    start_retry(svc, job_id, pages=[4])
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None and retry_scope(job) == (1, frozenset({4}))
    assert [p.page for p in failed_pages(svc, job_id)] == [2], "page 4's chunk is being converted again"


@pytest.mark.parametrize("constraint", ["one_running_retry_per_job", "job_retries_job_id_attempt_key"])
def test_a_post_whose_retry_row_lost_a_race_starts_over_with_the_same_choice(
    svc: Services, fake_uow: FakeUnitOfWork, monkeypatch: pytest.MonkeyPatch, constraint: str
) -> None:
    job_id = _two_failed_pages(svc, fake_uow)
    real_insert = FakeRetries.insert
    lost: list[str] = []

    def racing_insert(self: FakeRetries, **row: Any) -> Any:
        if not lost:  # a concurrent POST committed its row first: the unique index refuses ours
            lost.append(constraint)
            raise UniqueViolation(constraint, "a concurrent POST won")
        return real_insert(self, **row)

    monkeypatch.setattr(FakeRetries, "insert", racing_insert)

    answer = start_retry(svc, job_id, error_ids=["throttled", "timeout"], pages=[4])

    assert lost == [constraint]
    assert (answer.job_id, answer.attempt, answer.pages) == (job_id, 1, [4])
    [row] = fake_uow.retries.history(job_id)
    assert (row.pages, row.error_ids) == ([4], ["throttled", "timeout"]), "both pages match the reasons: only the asked page is taken"


def test_another_unique_violation_while_starting_a_retry_is_not_taken_for_a_race(
    svc: Services, fake_uow: FakeUnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = _two_failed_pages(svc, fake_uow)

    def broken_insert(self: FakeRetries, **row: Any) -> Any:
        raise UniqueViolation("some_other_index", "not a race")

    monkeypatch.setattr(FakeRetries, "insert", broken_insert)
    with pytest.raises(UniqueViolation):
        start_retry(svc, job_id, pages=[4])


def test_a_failed_retry_puts_every_chunk_back_as_its_own_snapshot_and_the_job_as_it_was(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _job(fake_uow)
    _convert(svc, fake_uow, job_id, 0, [_ok(1), _failed(2)], batch=1)
    _convert(svc, fake_uow, job_id, 1, [_failed(3), _failed(4)])
    _complete(svc, fake_uow, job_id)
    start_retry(svc, job_id, pages=[2, 4])
    assert start_conversion(fake_uow, job_id)["chunks"] == [0, 1]
    _convert(svc, fake_uow, job_id, 0, [_ok(1), _ok(2)], retry=1, cost="0.05")  # chunk 0 converted again before the failure
    assert fake_uow.jobs.claim_chunk(job_id, 1, "worker-2") is not None  # chunk 1 in flight
    assert fake_uow.jobs.move_job(job_id, st.assemble(), pages_failed=0)

    end_retry(svc, job_id, outcome="failed", message="the retry broke")

    first, second = fake_uow.jobs.get_chunk(job_id, 0), fake_uow.jobs.get_chunk(job_id, 1)
    assert first is not None and second is not None
    assert (first.result_key, first.pages_done, first.pages_failed, first.pages_batch) == (keys.chunk_result_key(job_id, 0), 1, 1, 1)
    assert (second.result_key, second.pages_done, second.pages_failed, second.pages_batch) == (keys.chunk_result_key(job_id, 1), 0, 2, 0)
    assert (first.worker_id, second.worker_id) == (None, None)
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None
    assert (job.status, job.retry_attempt, job.retry_pages, job.pages_failed) == ("completed", None, None, 3)
    assert (job.error_id, job.error_message) == ("PAGES_FAILED", "3 of 4 pages could not be converted")
    assert job.total_cost_usd == Decimal("0.25"), "what the retry spent is added to what the job had cost"


def test_a_settled_retry_records_how_many_pages_still_failed_and_what_it_alone_cost(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _two_failed_pages(svc, fake_uow)
    start_retry(svc, job_id, pages=[4])
    start_conversion(fake_uow, job_id)
    _convert(svc, fake_uow, job_id, 1, [_ok(3), _ok(4)], retry=1, cost="0.05")
    _complete(svc, fake_uow, job_id)

    [row] = fake_uow.retries.history(job_id)

    assert (row.status, row.pages_failed, row.cost_usd) == ("completed", 1, Decimal("0.05"))
