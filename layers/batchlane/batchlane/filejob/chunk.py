"""The chunk processor: convert one chunk's pages, book the spend, record the result.

How it keeps pages and money across retries, continuations and cancels: docs/module-notes.md "batchlane.filejob.chunk".
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from decimal import Decimal
from functools import partial
from typing import Any, NoReturn

from batchlane import contract, keys
from batchlane.claude import (
    ConverterConfig,
    OnDemandTransport,
    PageResult,
    PrimedResult,
    PrimedTransport,
    ReadTimeoutPolicy,
    Transport,
    build_page_request,
    page_result,
)
from batchlane.domain.chunk_outcome import ChunkFacts, ChunkOutcome, decide_chunk
from batchlane.domain.cost import PriceTable, Usage
from batchlane.domain.errors import NotFound
from batchlane.domain.savings import BATCH_SERVED_KEY
from batchlane.domain.service_tier import tier_breakdown
from batchlane.domain.status import FINISHED_JOB_STATUSES
from batchlane.filejob import budget, describe, page_form_choice, service_tier_choice
from batchlane.filejob.admission import admitted_chunk
from batchlane.filejob.describe import CONVERTER_LANE, DOCUMENT_TYPE_NAMES
from batchlane.filejob.retry import retry_scope
from batchlane.filejob.savings import batch_answers_at_on_demand, unused_batch_answers
from batchlane.filejob.source import chunk_pages, document_pages, span_of
from batchlane.observability import logger
from batchlane.ondemand import Aborted, BackoffPolicy, CoverageRule, GovernedTransport, GroupConverter, PlannedPage, RequestPlan, Spend
from batchlane.pdf.split import ChunkSpan, Page
from batchlane.ports import Services, UnitOfWork
from batchlane.rows import ChunkRow, JobRow

# The ProcessChunk retriers in conversion.asl.json take their MaxAttempts from the same constants.
MAX_CHUNK_ATTEMPTS = contract.CHUNK_RETRY_LATER_MAX_ATTEMPTS + 1
MAX_CHUNK_CONTINUATIONS = contract.CHUNK_CONTINUE_MAX_ATTEMPTS
HEARTBEAT_EVERY_S = 1.0
# A model call's read timeout ends this long before the Lambda does: time to book what it cost.
BOOKING_MARGIN_S = 15.0


class ChunkRetryLater(Exception):
    """Some pages failed for a reason that may pass (throttling): retry the chunk later."""


class ChunkContinue(Exception):
    """The invocation ran out of time; what it converted is kept: continue in a fresh one."""


@dataclass
class ChunkRun:
    pages: dict[int, PageResult] = field(default_factory=dict)
    spend: Spend = field(default_factory=Spend)
    aborted: bool = False  # cancelled or taken over: the result is discarded
    out_of_time: bool = False  # stopped at the deadline: the result so far is kept


class Heartbeat:
    """Guarded heartbeat, and the chunk's two reasons to stop. ``beat()`` (the chunk's own
    thread only: it uses the database) is rate-limited. ``stopped()``: the guard failed
    (cancelled, or taken over), the result is discarded. ``out_of_time()``: past the
    invocation's deadline (``time.monotonic()``), the result so far is kept. ``halted()``,
    either one, is what page threads read before each unit and request."""

    def __init__(
        self,
        beat: Callable[[int], bool],
        *,
        recover: Callable[[], None] = lambda: None,
        deadline: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._beat = beat
        self._recover = recover
        self._deadline = deadline
        self._clock = clock
        self._last = 0.0
        self._stopped = threading.Event()
        self._hold_reached = threading.Event()

    def stopped(self) -> bool:
        return self._stopped.is_set()

    def out_of_time(self) -> bool:
        """Past the deadline, or the job's hold could not carry a request (:meth:`hold_reached`)."""
        if self._hold_reached.is_set():
            return True
        return self._deadline is not None and self._clock() >= self._deadline

    def hold_reached(self) -> None:
        """Stop like at the deadline: the pages so far are kept, the continuation finds the hold reached and pauses the job."""
        self._hold_reached.set()

    def halted(self) -> bool:
        return self.stopped() or self.out_of_time()

    def stop(self) -> None:
        self._stopped.set()

    def beat(self, pages_done: int) -> bool:
        """True while this worker still owns the chunk."""
        if self._stopped.is_set():
            return False
        if time.monotonic() - self._last >= HEARTBEAT_EVERY_S:
            try:
                alive = self._beat(pages_done)
            except Exception:
                # The connection died under us (failover, idle cut, terminated backend): reconnect once. An error
                # that is not the connection's is raised again by the second beat.
                self._recover()
                alive = self._beat(pages_done)
            self._last = time.monotonic()
            if not alive:
                self._stopped.set()
        return not self._stopped.is_set()


def load_primed_results(svc: Services, job_id: str, chunk_index: int) -> dict[str, PrimedResult]:
    try:
        data = svc.store.get_json(keys.batch_results_key(job_id, chunk_index))
    except NotFound:
        return {}
    return {item["recordId"]: PrimedResult.from_json(item) for item in data.get("results", [])}


@dataclass(frozen=True)
class OnDemandSetup:
    """What the on-demand path needs besides the pages: built from settings in process_chunk."""

    plan: RequestPlan = field(default_factory=RequestPlan)
    coverage: CoverageRule = field(default_factory=CoverageRule)


def _checked(converter: GroupConverter, planned: PlannedPage, result: PageResult) -> dict[int, PageResult]:
    """A batch-served page, with the coverage check (and its on-demand re-ask when thin)."""
    return {planned.number: converter.check_coverage(planned, result)}


def run_pages(
    pages: Iterable[Page],
    *,
    chunk_index: int,
    config: ConverterConfig,
    transport: Transport,
    prices: PriceTable,
    heartbeat: Heartbeat,
    concurrency: int,
    setup: OnDemandSetup | None = None,
    primed: PrimedTransport | None = None,
    done_before: int = 0,
    hold: budget.JobHold | None = None,
    carried: Mapping[int, tuple[Usage, Decimal]] | None = None,
) -> ChunkRun:
    """Convert ``pages``: primed pages from their batch result, the rest on-demand in groups,
    with at most ``concurrency`` units in flight. Once the heartbeat is out of time no new
    unit or request starts; the pages not converted by then are absent from the run.
    ``carried``: what earlier attempts spent on pages still to convert; each result says all spent on its page."""
    setup = setup or OnDemandSetup()
    run = ChunkRun()
    for number, (usage, cost) in (carried or {}).items():
        run.spend.carry(number, usage, cost)
    if not heartbeat.beat(done_before):
        run.aborted = True
        return run
    converter = GroupConverter(
        chunk_index=chunk_index,
        config=config,
        transport=transport,
        prices=prices,
        coverage=setup.coverage,
        spend=run.spend,
        aborted=heartbeat.halted,
        hold=hold,
    )

    def work(unit: Callable[[], dict[int, PageResult]]) -> dict[int, PageResult]:
        if heartbeat.halted():
            raise Aborted("chunk no longer processing")
        return unit()

    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix=f"chunk{chunk_index}-page") as pool:
        pending: set[Future[dict[int, PageResult]]] = set()

        def submit(unit: Callable[[], dict[int, PageResult]]) -> None:
            pending.add(pool.submit(work, unit))
            run.spend.count("requestsPlanned", 1)

        # Plan and send as we go: the first request leaves while later pages are still being
        # split and read, instead of after the whole chunk was planned.
        builder = setup.plan.builder()
        for page in pages:
            if heartbeat.stopped():
                run.aborted = True
                break
            if heartbeat.out_of_time():
                run.out_of_time = True
                break
            if page.blank:
                run.pages[page.number] = PageResult(page.number, "blank")
                continue
            if page.failure:  # PAGE_TOO_LARGE, PAGE_TOO_COMPLEX: failed at once, never sent, never retried
                run.pages[page.number] = PageResult(page.number, "failed", reason=page.failure)
                continue
            planned = setup.plan.plan(page)
            request = build_page_request(chunk_index=page.chunk_index, page_number=page.number, pdf_bytes=page.pdf_bytes, config=config)
            answer = primed.lookup(request) if primed else None
            if answer is not None:
                result = replace(page_result(page.number, config.model_id, answer, prices), batch_usage=answer.usage)
                submit(partial(_checked, converter, planned, result))
            elif group := builder.add(planned):
                submit(partial(converter.convert, group))
        if last := builder.flush():
            submit(partial(converter.convert, last))
        describe.drain(pending, heartbeat, run, run.pages.update, lambda: done_before + len(run.pages), every_s=HEARTBEAT_EVERY_S)
    for number, result in run.pages.items():  # each page carries all that was spent on it, its share of every call
        usage, cost = run.spend.on_page(number)
        run.pages[number] = replace(result, usage=usage + (result.batch_usage or Usage()), cost_usd=cost)
    return run


def process_admitted_chunk(svc: Services, job_id: str, chunk_index: int, *, worker_id: str | None, deadline: float, ttl_s: float) -> dict[str, Any]:
    """The chunk processor's use case: the chunk's admission slot (filejob/admission.py), then :func:`process_chunk`."""
    with admitted_chunk(svc, job_id, chunk_index, ttl_s=ttl_s):
        return process_chunk(svc, job_id, chunk_index, worker_id=worker_id, deadline=deadline)


def process_chunk(svc: Services, job_id: str, chunk_index: int, *, worker_id: str | None = None, deadline: float | None = None) -> dict[str, Any]:
    """Claim the chunk, convert its pages, then act on :func:`decide_chunk`'s outcome.

    ``deadline`` (``time.monotonic()``): when to stop starting requests and continue in a
    fresh invocation (the handler sets it from the Lambda's remaining time).
    """
    worker_id = worker_id or uuid.uuid4().hex
    uow = svc.uow()
    chunk = uow.jobs.get_chunk(job_id, chunk_index)
    if chunk is None:
        raise NotFound(f"no chunk {chunk_index} of job {job_id}")
    if chunk.status == "completed":
        return {"jobId": job_id, "chunkIndex": chunk_index, "status": "completed", "repeat": True}
    job = uow.jobs.get_job(job_id)
    if job is not None and job.source_type in DOCUMENT_TYPE_NAMES:  # converted at the split: no model call, no hold to reach
        if describe.wanted(job) and chunk.records:  # ... but its pictures, described (docs/formats.md "Pictures described")
            return process_figure_chunk(svc, uow, job, chunk_index, worker_id, deadline)
        return process_document_chunk(svc, uow, job_id, chunk_index, worker_id)
    # The job's hold grows by what this chunk may spend before its next check, or the job pauses when the request it
    # must send next cannot fit its owner's month (filejob/budget.py; docs/operations.md "Estimates, holds, savings and pauses").
    window = budget.open_window(svc, job, pages=_pages_to_convert(job, chunk)) if job is not None else budget.Window()
    if window.paused:
        return {"jobId": job_id, "chunkIndex": chunk_index, "status": "paused_budget"}
    spent = Decimal(0)
    growth = budget.Growth(svc, job) if job is not None else None
    try:
        claimed = uow.jobs.claim_chunk(job_id, chunk_index, worker_id)
        if claimed is None:
            logger.info("chunk not claimable", job_id=job_id, chunk=chunk_index, chunk_status=chunk.status)
            return {"jobId": job_id, "chunkIndex": chunk_index, "status": "skipped"}
        work = _start_work(svc, uow, job_id, chunk_index, claimed, worker_id, deadline, growth)
        run = work.run()
        spent = run.spend.cost
        uow.check_connection()  # minutes of model calls may lie behind us: never lose the booking to a dead connection
        return _act(svc, uow, work, run)
    finally:
        budget.close_window(svc, job_id, window, spent=spent, grown=growth.usd if growth is not None else Decimal(0))


def _pages_to_convert(job: JobRow, chunk: ChunkRow) -> int:
    """The pages this chunk's invocation may still send (a retry: only its pages; blank pages are not known yet)."""
    retry = retry_scope(job)
    if retry is not None:
        return sum(1 for page in retry[1] if chunk.first_page <= page <= chunk.last_page)
    return max(chunk.last_page - chunk.first_page + 1 - chunk.pages_done, 0)


def _act(svc: Services, uow: UnitOfWork, work: _ChunkWork, run: ChunkRun) -> dict[str, Any]:
    """Act on :func:`decide_chunk`'s outcome for this run."""
    results = {**work.kept, **run.pages}
    settled = {n: r for n, r in results.items() if not (r.status == "failed" and r.retryable)}
    decision = decide_chunk(
        ChunkFacts(
            page_numbers=work.span.page_numbers(),
            settled=settled.keys(),
            retryable_failures=sum(1 for r in run.pages.values() if r.status == "failed" and r.retryable),
            aborted=run.aborted,
            out_of_time=run.out_of_time,
            attempts=work.claimed.attempts,
            continuations=work.continuations,
            max_attempts=MAX_CHUNK_ATTEMPTS,
        )
    )
    if decision.outcome is ChunkOutcome.ABORTED:
        return _aborted(uow, work, run)
    if decision.outcome is ChunkOutcome.CONTINUE:
        _continue(svc, uow, work, run, settled, decision.pages_left)
    if decision.outcome is ChunkOutcome.RETRY_LATER:
        _retry_later(svc, uow, work, run, settled, decision.pages_to_retry)
    return _complete(svc, uow, work, run, results)


def process_document_chunk(svc: Services, uow: UnitOfWork, job_id: str, chunk_index: int, worker_id: str) -> dict[str, Any]:
    """A born-digital chunk: its pages' Markdown as the split converted it, completed at $0 with no ledger row
    (nothing was spent). Repeatable: a retried invocation writes the same result again."""
    claimed = uow.jobs.claim_chunk(job_id, chunk_index, worker_id)
    if claimed is None:
        return {"jobId": job_id, "chunkIndex": chunk_index, "status": "skipped"}
    converter, pages = document_pages(svc.store, job_id, claimed)
    pages = describe.with_skipped_figures(svc.store, job_id, claimed, pages)  # describeFigures: a picture never sent says why
    results = [PageResult(n, "converted" if text.strip() else "blank", text, served_by=CONVERTER_LANE if text.strip() else None) for n, text in pages]
    result_key = keys.chunk_result_key(job_id, chunk_index)
    svc.store.put_json(result_key, {"jobId": job_id, "chunkIndex": chunk_index, "pages": [r.to_json() for r in results]})
    with uow:
        completed = uow.jobs.complete_chunk(
            job_id, chunk_index, worker_id, pages_done=len(results), pages_failed=0, pages_batch=0, cost_usd=Decimal(0), result_key=result_key
        )
    status = "completed" if completed else "aborted"
    logger.info("document chunk done", job_id=job_id, chunk=chunk_index, status=status, pages=len(results), converter=converter)
    return {"jobId": job_id, "chunkIndex": chunk_index, "status": status, "pagesFailed": 0, "pagesBatch": 0}


def process_figure_chunk(svc: Services, uow: UnitOfWork, job: JobRow, chunk_index: int, worker_id: str, deadline: float | None) -> dict[str, Any]:
    """A born-digital chunk whose pictures are described (describeFigures): each picture a unit of the chunk as a page
    is (filejob/describe.py), and the same outcomes: aborted, continue, retry later, complete with the alt texts."""
    if describe.pause_at_hold(svc, job):
        return {"jobId": job.id, "chunkIndex": chunk_index, "status": "paused_budget"}
    claimed = uow.jobs.claim_chunk(job.id, chunk_index, worker_id)
    if claimed is None:
        return {"jobId": job.id, "chunkIndex": chunk_index, "status": "skipped"}
    settings = svc.settings
    config = page_form_choice.converter_config(uow.page_forms, settings, job.options, source_type=job.source_type)
    heartbeat = Heartbeat(lambda done: uow.jobs.heartbeat_chunk(job.id, chunk_index, worker_id, done), recover=uow.check_connection, deadline=deadline)
    primed = load_primed_results(svc, job.id, chunk_index) if job.batch_primed else {}
    margin = max(settings.batchlane_chunk_stop_margin_s - BOOKING_MARGIN_S, 0.0)
    work = describe.start_figures(svc, uow, job, claimed, config=config, heartbeat=heartbeat, primed=primed, deadline=deadline, stop_margin_s=margin)
    run = work.run()
    uow.check_connection()
    decision = decide_chunk(work.facts(run, max_attempts=MAX_CHUNK_ATTEMPTS))
    meta, usage, cost = work.metadata(run), run.spend.usage, run.spend.cost
    if decision.outcome is ChunkOutcome.ABORTED:
        _book(uow, job.id, chunk_index, config.model_id, usage, cost, {**meta, "aborted": True})
        return {"jobId": job.id, "chunkIndex": chunk_index, "status": "aborted"}
    if decision.outcome is ChunkOutcome.CONTINUE:
        work.keep(svc.store, run, continuations=work.continuations + 1)
        _book(uow, job.id, chunk_index, config.model_id, usage, cost, {**meta, "continued": decision.pages_left})
        raise ChunkContinue(f"{decision.pages_left} picture(s) of chunk {chunk_index} left at the invocation's deadline; continuing")
    if decision.outcome is ChunkOutcome.RETRY_LATER:
        work.keep(svc.store, run, continuations=work.continuations)
        _book(uow, job.id, chunk_index, config.model_id, usage, cost, {**meta, "retryLater": decision.pages_to_retry})
        raise ChunkRetryLater(f"{decision.pages_to_retry} picture(s) of chunk {chunk_index} hit retryable errors; retrying the chunk")
    pages, figures = work.final(run)
    result_key = keys.chunk_result_key(job.id, chunk_index)
    svc.store.put_json(
        result_key, {"jobId": job.id, "chunkIndex": chunk_index, "pages": [p.to_json() for p in pages], "figures": [f.to_json() for f in figures]}
    )
    batch_pages = len({f.page for f in figures if f.served_by == "batch"})
    with uow:
        _ledger_row(uow, job.id, chunk_index, config.model_id, usage, cost, {**meta, "primedMismatch": work.primed.mismatched if work.primed else 0})
        completed = uow.jobs.complete_chunk(
            job.id, chunk_index, worker_id, pages_done=len(pages), pages_failed=0, pages_batch=batch_pages, cost_usd=cost, result_key=result_key
        )
        if not completed:
            uow.jobs.add_chunk_spend(job.id, chunk_index, cost)
    status = "completed" if completed else "aborted"
    failed = sum(1 for f in figures if f.status == "failed")
    logger.info(
        "figure chunk done", job_id=job.id, chunk=chunk_index, status=status, figures=len(figures), failed=failed, batch_pages=batch_pages, cost_usd=str(cost)
    )
    return {"jobId": job.id, "chunkIndex": chunk_index, "status": status, "pagesFailed": 0, "pagesBatch": batch_pages}


@dataclass
class _ChunkWork:
    """One claimed chunk, ready to convert: what the run needs and what its effects book."""

    job_id: str
    chunk_index: int
    worker_id: str
    claimed: ChunkRow
    config: ConverterConfig
    span: ChunkSpan
    kept: dict[int, PageResult]
    continuations: int
    retry: tuple[int, frozenset[int]] | None
    transport: GovernedTransport
    primed: PrimedTransport | None
    plan: RequestPlan
    free: int | None
    run: Callable[[], ChunkRun]
    flex: str | None = None  # why this chunk's calls go Flex first (domain/service_tier.py), None: default tier
    rates: dict[str, tuple[Decimal, Decimal]] = field(default_factory=dict)  # tier -> (input, output) USD per MTok

    def metadata(self, run: ChunkRun) -> dict[str, Any]:
        """What the attempt's ledger row says about it."""
        return {
            "attempt": self.claimed.attempts,
            "worker": self.worker_id,
            "pagesOnDemand": sum(1 for r in run.pages.values() if r.served_by == "on_demand"),
            "requests": self.transport.requests,
            "throttled": self.transport.throttled,
            "budgetExhausted": self.transport.exhausted,
            "pagesPerRequest": self.plan.page_limit,
            "startsFree": self.free,
            **run.spend.counts,
            **({"retry": self.retry[0]} if self.retry is not None else {}),
            **({"flexLane": self.flex} if self.flex else {}),
            "serviceTiers": tier_breakdown(run.pages.values(), self.rates),
        }


def _start_work(
    svc: Services, uow: UnitOfWork, job_id: str, chunk_index: int, claimed: ChunkRow, worker_id: str, deadline: float | None, growth: budget.Growth | None
) -> _ChunkWork:
    job = uow.jobs.get_job(job_id)
    assert job is not None
    options = job.options or {}
    settings = svc.settings
    config = page_form_choice.converter_config(uow.page_forms, settings, options, source_type=job.source_type)

    span = span_of(claimed)
    kept, continuations, carried = _load_partial(svc, job_id, chunk_index)
    retry = retry_scope(job)
    if retry is not None:  # a retry converts only its pages: the chunk's other pages are kept as they were (with their cost)
        previous = _previous_pages(svc, uow, job_id, chunk_index, keep_all_but=frozenset())
        kept = {**kept, **{n: r for n, r in previous.items() if n not in retry[1]}}
        for n in retry[1]:  # what the earlier runs spent on a retried page stays on it
            if n in previous and n not in carried:
                batch = previous[n].batch_usage or Usage()
                carried[n] = (
                    Usage(previous[n].usage.input_tokens - batch.input_tokens, previous[n].usage.output_tokens - batch.output_tokens),
                    previous[n].cost_usd,
                )
    pages = (page for page in chunk_pages(svc.store, job_id, claimed, render=settings.batchlane_page_render) if page.number not in kept)

    heartbeat = Heartbeat(lambda done: uow.jobs.heartbeat_chunk(job_id, chunk_index, worker_id, done), recover=uow.check_connection, deadline=deadline)
    shared = svc.page_thread_database()  # page threads share one connection, never open their own
    # Every request takes its worst case from the job's one counter first (grown for it while the owner's month has
    # room): the chunk stops (continues, then pauses) at the first that does not fit, however many chunks run beside it.
    hold = budget.JobHold(
        shared.budgets, job_id, prices=svc.prices, model_id=config.model_id, max_tokens=config.max_tokens, on_reached=heartbeat.hold_reached, grow=growth
    )

    def halted() -> bool:
        """Checked before every attempt: the flags, then the row itself (one short read)."""
        if heartbeat.halted():
            return True
        if not shared.jobs.chunk_still_owned(job_id, chunk_index, worker_id):  # the heartbeat's guard, read-only
            heartbeat.stop()
        return heartbeat.stopped()

    # The read timeout is sized per request and never outlives the invocation (the Lambda ends
    # stop-margin seconds after ``deadline``), so a slow answer is waited for, or booked, never lost.
    ends_at = None if deadline is None else deadline + max(settings.batchlane_chunk_stop_margin_s - BOOKING_MARGIN_S, 0.0)
    limiter = shared.limiter(owner=job.owner_id)  # slots shared fairly by owner
    flex = service_tier_choice.flex_lane(svc, uow.service_tiers, job, retrying=retry is not None)  # Flex first, default when it sheds: one slot for both
    raw = OnDemandTransport(svc.model_runtime, timeouts=ReadTimeoutPolicy.from_settings(settings), ends_at=ends_at)
    transport = GovernedTransport(
        page_form_choice.with_form_fallback(uow.page_forms, settings, config, service_tier_choice.with_flex(flex, raw)),
        limiter,
        BackoffPolicy.from_settings(settings),
        aborted=halted,
        waiting=heartbeat.halted,
    )
    primed = PrimedTransport(load_primed_results(svc, job_id, chunk_index), transport) if job.batch_primed and retry is None else None
    # Group size from the pages and the starts free right now (planner.RequestPlan.for_chunk).
    # Blank and primed pages are not known yet: counting them makes groups smaller, never larger.
    free = limiter.free_now(config.model_id) if settings.batchlane_chunk_max_parallel else None
    plan, concurrency = RequestPlan.from_settings(settings).for_chunk(
        span.page_count - len(kept), free, concurrency=settings.batchlane_chunk_concurrency, most_parallel=settings.batchlane_chunk_max_parallel
    )
    setup = OnDemandSetup(
        plan=plan,
        coverage=CoverageRule(threshold=settings.batchlane_coverage_threshold, min_words=settings.batchlane_coverage_min_words),
    )
    run = partial(
        run_pages,
        pages,
        chunk_index=chunk_index,
        config=config,
        transport=transport,
        prices=svc.prices,
        heartbeat=heartbeat,
        concurrency=concurrency,
        setup=setup,
        primed=primed,
        done_before=len(kept),
        hold=hold,
        carried=carried,
    )
    rates = {"default": svc.prices.rate(config.model_id), **({"flex": svc.prices.rate(config.model_id, "flex")} if flex else {})}
    return _ChunkWork(job_id, chunk_index, worker_id, claimed, config, span, kept, continuations, retry, transport, primed, plan, free, run, flex, rates)


def _aborted(uow: UnitOfWork, work: _ChunkWork, run: ChunkRun) -> dict[str, Any]:
    """No longer ours: book what was spent, discard the pages."""
    cost = run.spend.cost
    _book(uow, work.job_id, work.chunk_index, work.config.model_id, run.spend.usage, cost, {**work.metadata(run), "aborted": True})
    logger.info("chunk aborted", job_id=work.job_id, chunk=work.chunk_index, pages_converted=len(run.pages), cost_usd=str(cost))
    return {"jobId": work.job_id, "chunkIndex": work.chunk_index, "status": "aborted"}


def _continue(svc: Services, uow: UnitOfWork, work: _ChunkWork, run: ChunkRun, settled: dict[int, PageResult], pages_left: int) -> NoReturn:
    """Out of time: keep the settled pages, book the spend, continue in a fresh invocation."""
    _keep_partial(svc, work.job_id, work.chunk_index, settled, work.continuations + 1, run.spend)
    _book(uow, work.job_id, work.chunk_index, work.config.model_id, run.spend.usage, run.spend.cost, {**work.metadata(run), "continued": pages_left})
    logger.info(
        "chunk out of time; continuing in a fresh invocation",
        job_id=work.job_id,
        chunk=work.chunk_index,
        pages_left=pages_left,
        continuation=work.continuations + 1,
    )
    raise ChunkContinue(f"{pages_left} page(s) of chunk {work.chunk_index} left at the invocation's deadline; continuing")


def _retry_later(svc: Services, uow: UnitOfWork, work: _ChunkWork, run: ChunkRun, settled: dict[int, PageResult], pages_to_retry: int) -> NoReturn:
    """Retryable failures with attempts left: keep the settled pages, book the spend, let Step Functions retry."""
    _keep_partial(svc, work.job_id, work.chunk_index, settled, work.continuations, run.spend)
    _book(uow, work.job_id, work.chunk_index, work.config.model_id, run.spend.usage, run.spend.cost, {**work.metadata(run), "retryLater": pages_to_retry})
    logger.warning("chunk will be retried", job_id=work.job_id, chunk=work.chunk_index, pages_pending=pages_to_retry, attempt=work.claimed.attempts)
    raise ChunkRetryLater(f"{pages_to_retry} page(s) of chunk {work.chunk_index} hit retryable errors; retrying the chunk")


def _complete(svc: Services, uow: UnitOfWork, work: _ChunkWork, run: ChunkRun, results: dict[int, PageResult]) -> dict[str, Any]:
    """Every page has its final result: write it, book the spend and complete the chunk in one transaction."""
    job_id, chunk_index, cost = work.job_id, work.chunk_index, run.spend.cost
    ordered = [results[n] for n in work.span.page_numbers()]
    result_key = keys.chunk_result_key(job_id, chunk_index, retry=work.retry[0] if work.retry is not None else None)
    svc.store.put_json(result_key, {"jobId": job_id, "chunkIndex": chunk_index, "pages": [r.to_json() for r in ordered]})
    failed = sum(1 for r in ordered if r.status == "failed")
    served_batch = sum(1 for r in ordered if r.served_by == "batch")
    with uow:
        meta = {**work.metadata(run), "pagesBatchServed": served_batch, "primedMismatch": work.primed.mismatched if work.primed else 0}
        if work.primed is not None and (unused := unused_batch_answers(ordered, work.primed.answers_by_page())):
            # collect counted these answers served; a changed prompt made the chunk convert their pages again on-demand
            meta[BATCH_SERVED_KEY] = str(-batch_answers_at_on_demand(unused, config=work.config, settings=svc.settings, prices=svc.prices))
        _ledger_row(uow, job_id, chunk_index, work.config.model_id, run.spend.usage, cost, meta)
        completed = uow.jobs.complete_chunk(
            job_id,
            chunk_index,
            work.worker_id,
            pages_done=len(ordered) - failed,
            pages_failed=failed,
            pages_batch=served_batch,
            cost_usd=cost,
            result_key=result_key,
        )
        if not completed:
            uow.jobs.add_chunk_spend(job_id, chunk_index, cost)
    status = "completed" if completed else "aborted"
    logger.info("chunk done", job_id=job_id, chunk=chunk_index, status=status, pages=len(ordered), failed=failed, batch_served=served_batch, cost_usd=str(cost))
    return {"jobId": job_id, "chunkIndex": chunk_index, "status": status, "pagesFailed": failed, "pagesBatch": served_batch}


def _book(uow: UnitOfWork, job_id: str, chunk_index: int, model_id: str, usage: Usage, cost: Decimal, metadata: dict[str, Any]) -> None:
    """Book an attempt that did not complete the chunk: its ledger row, and the chunk's spend."""
    with uow:
        _ledger_row(uow, job_id, chunk_index, model_id, usage, cost, metadata)
        uow.jobs.add_chunk_spend(job_id, chunk_index, cost)


def _ledger_row(uow: UnitOfWork, job_id: str, chunk_index: int, model_id: str, usage: Usage, cost: Decimal, metadata: dict[str, Any]) -> None:
    """The attempt's ledger row; a job that ended meanwhile (cancelled while the chunk ran) has its total follow it."""
    uow.ledger.add_chunk_cost(
        job_id=job_id,
        chunk_index=chunk_index,
        model_id=model_id,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cost_usd=cost,
        metadata=metadata,
    )
    if cost and (job := uow.jobs.get_job(job_id)) is not None and job.status in FINISHED_JOB_STATUSES:
        uow.ledger.carry_late_batch_cost(job_id)  # a live job's total is set when it settles


def _keep_partial(svc: Services, job_id: str, chunk_index: int, good: dict[int, PageResult], continuations: int, spend: Spend) -> None:
    """The settled pages, and what was spent on the others so far (the next attempt adds it to their results)."""
    spent = {str(n): [u.input_tokens, u.output_tokens, str(c)] for n, (u, c) in spend.by_page.items() if n not in good}
    svc.store.put_json(
        keys.chunk_partial_key(job_id, chunk_index), {"pages": [r.to_json() for r in good.values()], "continuations": continuations, "spent": spent}
    )


def _previous_pages(svc: Services, uow: UnitOfWork, job_id: str, chunk_index: int, *, keep_all_but: frozenset[int]) -> dict[int, PageResult]:
    """A retried chunk's pages that are not retried, from the result its last run wrote (cost kept: it was booked then)."""
    chunk = uow.jobs.get_chunk(job_id, chunk_index)
    if chunk is None or not chunk.result_key:
        return {}
    pages = (PageResult.from_json(item) for item in svc.store.get_json(chunk.result_key)["pages"])
    return {r.page_number: r for r in pages if r.page_number not in keep_all_but}


def _load_partial(svc: Services, job_id: str, chunk_index: int) -> tuple[dict[int, PageResult], int, dict[int, tuple[Usage, Decimal]]]:
    """The pages a previous attempt kept (with what they cost: it was booked then, and the page's result says it),
    how many of the attempts were continuations, and what was spent on the pages still to convert."""
    try:
        data = svc.store.get_json(keys.chunk_partial_key(job_id, chunk_index))
    except NotFound:
        return {}, 0, {}
    pages = {r.page_number: r for r in (PageResult.from_json(item) for item in data.get("pages", []))}
    spent = {int(n): (Usage(int(v[0]), int(v[1])), Decimal(v[2])) for n, v in (data.get("spent") or {}).items()}
    return pages, int(data.get("continuations", 0)), spent
