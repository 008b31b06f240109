"""Pictures of born-digital documents described by Claude (``describeFigures``; docs/formats.md "Pictures described").

A picture rides as a record of its page's chunk (decision 0029): the split sizes and stores each one and counts
them per chunk (the pool packs chunks by it, ``chunk_jobs.records``), the job holds each one's worst case and parks
for the batch lane when it is eligible; prepare captures one request per picture with the page converter's
transports; the chunk processor answers each from its primed batch result, else on-demand under the job's hold,
and writes the answers as the figures' alt text. Acceptance, the ledger, failure marking and retries are the pages'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol, TypeVar

from batchlane import keys
from batchlane.claude import ConverterConfig, ModelCallError, OnDemandTransport, PageResult, PrimedResult, PrimedTransport, ReadTimeoutPolicy, Transport
from batchlane.claude.figure import FigureResult, FigureSource, build_figure_request, describe_figure, figure_result
from batchlane.domain.budget import PROMPT_TOKENS_PER_REQUEST
from batchlane.domain.chunk_outcome import ChunkFacts
from batchlane.domain.cost import PriceTable, Usage
from batchlane.domain.describe import EXPECTED_DESCRIPTION_TOKENS, FIGURE_MAX_TOKENS, OPTION, Described, expected_usage, with_descriptions, worst_usage
from batchlane.domain.eligibility import batch_eligible
from batchlane.domain.errors import NotFound
from batchlane.domain.file_types import DOCUMENTS
from batchlane.domain.folder_policy import DEADLINE, deadline_lane, parse_deadline
from batchlane.domain.service_tier import tier_breakdown
from batchlane.filejob import budget, service_tier_choice
from batchlane.filejob.source import document_figures, document_pages
from batchlane.formats.document import ConvertedDocument
from batchlane.formats.pictures_to_describe import CountedPicture, SizedFigure, size_figures
from batchlane.observability import logger
from batchlane.ondemand import Aborted, BackoffPolicy, GovernedTransport, Spend
from batchlane.pdf.split import ChunkSpan
from batchlane.ports import BudgetRepository, ObjectStore, Services, UnitOfWork
from batchlane.rows import ChunkRow, JobRow

DOCUMENT_TYPE_NAMES = frozenset(t.name for t in DOCUMENTS)
CONVERTER_LANE = "converter"  # pages.jsonl's lane of a born-digital page: the deterministic converter


def wanted(job: JobRow, *, source_type: str | None = None) -> bool:
    """The job is a born-digital document (``source_type``: its type before the split records it) whose pictures its
    owner asked to have described."""
    return (source_type or job.source_type) in DOCUMENT_TYPE_NAMES and bool((job.options or {}).get(OPTION))


# -- the split -------------------------------------------------------------------------------
@dataclass(frozen=True)
class FigurePlan:
    """What the split decided for a document's pictures: each one sized (or why not), the records per chunk, the hold."""

    sized: dict[str, SizedFigure] = field(default_factory=dict)
    records: dict[int, int] = field(default_factory=dict)  # chunk index → pictures to describe
    hold_usd: Decimal = Decimal(0)

    @property
    def total(self) -> int:
        return sum(self.records.values())


def plan_figures(svc: Services, document: ConvertedDocument, chunks: list[ChunkSpan], *, model_id: str, scratch: Path) -> FigurePlan:
    """Size every picture in the bounded child; count the ones to send per chunk; hold each one's worst case at the
    on-demand price (a batch answer costs half of it: the hold covers either lane)."""
    sized = size_figures(document, scratch)
    records = {
        span.index: sum(1 for s in document.sections[span.first_page - 1 : span.last_page] for f in s.figures if sized.get(f.name, SizedFigure(f.name)).path)
        for span in chunks
    }
    hold = sum((figure_worst_usd(svc.prices, model_id, f) for f in sized.values() if f.path is not None), Decimal(0))
    return FigurePlan(sized, records, hold)


def figure_worst_usd(prices: PriceTable, model_id: str, figure: SizedFigure | FigureSource) -> Decimal:
    """One picture's request at its worst, on-demand: what the hold keeps for it, and what the request reserves."""
    width, height = (figure.width, figure.height) if isinstance(figure, SizedFigure) else (figure.image.width, figure.image.height)
    return prices.cost(model_id, worst_usage(width, height))


def figures_lane(svc: Services, job: JobRow, records: int) -> tuple[bool, str]:
    """Whether the pictures wait for the batch lane (the pages' rule, their records counted as pages), and why."""
    settings, options = svc.settings, job.options or {}
    if job.process_now:
        return False, "process_now"
    eligible, why = batch_eligible(options, records, lane_configured=settings.batch_lane_configured, min_pages=settings.batch_conversion_min_pages)
    margin_h = settings.batch_deadline_margin_s / 3600
    if eligible and deadline_lane(parse_deadline(options.get("deadline")), datetime.now(UTC), settings.batch_deadline_hours, margin_h):
        return False, DEADLINE
    return eligible, why


# -- the batch lane's prepare ------------------------------------------------------------------
def capture_figures(store: ObjectStore, job_id: str, chunk: ChunkRow, config: ConverterConfig, capture: Transport, prices: PriceTable) -> None:
    """One request per picture of the chunk into ``capture``: the records prepare writes."""
    for figure in document_figures(store, job_id, chunk)[1]:
        describe_figure(figure, config, capture, prices)


# -- the chunk processor -----------------------------------------------------------------------
class Heartbeat(Protocol):
    """What the run reads of the chunk's heartbeat (filejob/chunk.Heartbeat)."""

    def beat(self, pages_done: int) -> bool: ...
    def halted(self) -> bool: ...
    def stopped(self) -> bool: ...
    def out_of_time(self) -> bool: ...
    def hold_reached(self) -> None: ...


T = TypeVar("T")


class _Run(Protocol):
    aborted: bool
    out_of_time: bool


def drain(pending: set[Future[T]], heartbeat: Heartbeat, run: _Run, keep: Callable[[T], None], done: Callable[[], int], *, every_s: float = 1.0) -> None:
    """Wait for a run's requests, beating the heartbeat with ``done()`` every ``every_s``: ``keep`` stores each answer;
    an Aborted request marks the run stopped (cancelled or taken over) or out of time. The one loop of the chunk's
    pages (filejob/chunk.py) and of its pictures."""
    while pending:
        finished, pending = wait(pending, timeout=every_s, return_when=FIRST_COMPLETED)
        for future in finished:
            try:
                keep(future.result())
            except Aborted:  # the heartbeat says whether it was stopped; else it was the deadline
                if heartbeat.stopped():
                    run.aborted = True
                else:
                    run.out_of_time = True
        if not heartbeat.beat(done()):
            run.aborted = True


class FigureHold:
    """The job's one spend counter for picture requests: each reserves its worst case before it is sent (the hold
    placed at the split is the sum of them), its real cost replaces it after (BudgetRepository.reserve)."""

    def __init__(self, budgets: BudgetRepository, job_id: str, *, prices: PriceTable, model_id: str, on_reached: Callable[[], None]) -> None:
        self._budgets, self._job_id, self._prices, self._model_id, self._on_reached = budgets, job_id, prices, model_id, on_reached

    def reserve(self, figure: FigureSource) -> Decimal:
        cost = figure_worst_usd(self._prices, self._model_id, figure)
        taken = self._budgets.reserve(self._job_id, cost)
        if taken is None:
            return Decimal(0)
        if not taken:
            self._on_reached()
            raise budget.HoldReached("the job's funds hold cannot carry another picture's request")
        return cost

    def settle(self, reserved: Decimal, actual: Decimal) -> None:
        if reserved:
            self._budgets.settle_reservation(self._job_id, reserved=reserved, actual=actual)


@dataclass
class FigureRun:
    results: dict[str, FigureResult] = field(default_factory=dict)
    spend: Spend = field(default_factory=Spend)
    aborted: bool = False
    out_of_time: bool = False


def run_figures(
    figures: list[FigureSource],
    *,
    config: ConverterConfig,
    transport: Transport,
    prices: PriceTable,
    heartbeat: Heartbeat,
    concurrency: int,
    primed: PrimedTransport | None = None,
    hold: FigureHold | None = None,
    done_before: int = 0,
) -> FigureRun:
    """Describe ``figures``: from their batch answers where model and prompt hash match, else on-demand through
    ``transport``, at most ``concurrency`` at once. Once the heartbeat is out of time no new request starts."""
    run = FigureRun()
    if not heartbeat.beat(done_before):
        run.aborted = True
        return run

    def one(figure: FigureSource) -> FigureResult:
        if heartbeat.halted():
            raise Aborted("chunk no longer processing")
        request = build_figure_request(figure, config)
        answer = primed.lookup(request) if primed is not None else None
        if answer is not None:
            return figure_result(figure, config.model_id, answer, prices)
        reserved = hold.reserve(figure) if hold is not None else Decimal(0)
        try:
            answer = transport.send(request)
        except ModelCallError as exc:
            cost = Decimal(0)
            if exc.possibly_billed is not None:  # a read timeout: Bedrock bills it though no answer came back
                cost = prices.cost(config.model_id, exc.possibly_billed)
                run.spend.add(exc.possibly_billed, cost)
                run.spend.count("readTimeouts")
            if hold is not None:
                hold.settle(reserved, cost)
            return FigureResult(figure.name, figure.page, "failed", reason=exc.code, retryable=exc.retryable)
        except BaseException:
            if hold is not None:
                hold.settle(reserved, Decimal(0))
            raise
        result = figure_result(figure, config.model_id, answer, prices)
        if result.served_by == "on_demand":
            run.spend.add(result.usage, result.cost_usd)
        if hold is not None:
            hold.settle(reserved, result.cost_usd)
        return result

    with ThreadPoolExecutor(max_workers=max(concurrency, 1), thread_name_prefix="figures") as pool:
        pending: set[Future[FigureResult]] = set()
        for figure in figures:
            if heartbeat.stopped():
                run.aborted = True
                break
            if heartbeat.out_of_time():
                run.out_of_time = True
                break
            pending.add(pool.submit(one, figure))

        def keep(result: FigureResult) -> None:
            run.results[result.name] = result

        drain(pending, heartbeat, run, keep, lambda: done_before + len(run.results))
    return run


@dataclass
class FigureWork:
    """One claimed born-digital chunk whose pictures are described: its pages, its pictures, what earlier attempts kept."""

    job: JobRow
    claimed: ChunkRow
    config: ConverterConfig
    converter: str
    folder: str
    pages: list[tuple[int, str]]
    figures: list[FigureSource]
    skipped: dict[str, Described]
    kept: dict[str, FigureResult]
    continuations: int
    transport: GovernedTransport
    primed: PrimedTransport | None
    run: Callable[[], FigureRun]
    flex: str | None = None
    rates: dict[str, tuple[Decimal, Decimal]] = field(default_factory=dict)

    def facts(self, run: FigureRun, *, max_attempts: int) -> ChunkFacts:
        """The run as domain/chunk_outcome.decide_chunk reads a chunk's: a picture counts as a page does."""
        results = {**self.kept, **run.results}
        settled = {i for i, f in enumerate(self.figures) if f.name in results and not (results[f.name].status == "failed" and results[f.name].retryable)}
        return ChunkFacts(
            page_numbers=range(len(self.figures)),
            settled=settled,
            retryable_failures=sum(1 for r in run.results.values() if r.status == "failed" and r.retryable),
            aborted=run.aborted,
            out_of_time=run.out_of_time,
            attempts=self.claimed.attempts,
            continuations=self.continuations,
            max_attempts=max_attempts,
        )

    def metadata(self, run: FigureRun) -> dict[str, Any]:
        """What the attempt's ledger row says about it."""
        done = list(run.results.values())
        return {
            "attempt": self.claimed.attempts,
            "figures": len(self.figures),
            "figuresOnDemand": sum(1 for r in done if r.served_by == "on_demand"),
            "figuresBatchServed": sum(1 for r in done if r.served_by == "batch"),
            "figuresFailed": sum(1 for r in done if r.status == "failed"),
            "requests": self.transport.requests,
            "throttled": self.transport.throttled,
            **run.spend.counts,
            **({"flexLane": self.flex} if self.flex else {}),
            "serviceTiers": tier_breakdown(
                [PageResult(0, r.status, served_by=r.served_by, usage=r.usage, cost_usd=r.cost_usd, service_tier=r.service_tier) for r in done], self.rates
            ),
        }

    def keep(self, store: ObjectStore, run: FigureRun, *, continuations: int) -> None:
        """The pictures settled so far, for the next attempt (their spend is booked with this one)."""
        results = {**self.kept, **run.results}
        good = [r.to_json() for r in results.values() if not (r.status == "failed" and r.retryable)]
        store.put_json(keys.chunk_partial_key(self.job.id, self.claimed.chunk_index), {"figures": good, "continuations": continuations})

    def final(self, run: FigureRun) -> tuple[list[PageResult], list[FigureResult]]:
        """Every page with its pictures' alt texts written in, each carrying what was spent on its pictures; the pictures."""
        results = {**self.kept, **run.results}
        ordered = [results[f.name] for f in self.figures]
        outcomes = {**self.skipped, **{r.name: r.outcome for r in ordered}}
        pages = []
        for number, text in self.pages:
            mine = [r for r in ordered if r.page == number]
            usage = sum((r.usage for r in mine if r.served_by == "on_demand"), Usage())
            cost = sum((r.cost_usd for r in mine), Decimal(0))
            markdown = with_descriptions(text, self.folder, outcomes)
            status = "converted" if markdown.strip() else "blank"
            pages.append(PageResult(number, status, markdown, served_by=CONVERTER_LANE if markdown.strip() else None, usage=usage, cost_usd=cost))
        return pages, ordered


def start_figures(
    svc: Services,
    uow: UnitOfWork,
    job: JobRow,
    claimed: ChunkRow,
    *,
    config: ConverterConfig,
    heartbeat: Heartbeat,
    primed: Mapping[str, PrimedResult],
    deadline: float | None,
    stop_margin_s: float,
) -> FigureWork:
    """The claimed chunk's pictures wired to the pages' transports: primed answers first (``primed``: the chunk's batch
    results, empty unless the job was primed), else on-demand, governed by the shared limiter, Flex where the job's
    pages would go Flex, each request under the job's hold."""
    settings = svc.settings
    converter, pages = document_pages(svc.store, job.id, claimed)
    folder, figures, skipped = document_figures(svc.store, job.id, claimed)
    kept, continuations = _load_kept(svc.store, job.id, claimed.chunk_index)
    shared = svc.page_thread_database()

    def halted() -> bool:
        if heartbeat.halted():
            return True
        if not shared.jobs.chunk_still_owned(job.id, claimed.chunk_index, str(claimed.worker_id)):
            return True
        return False

    flex = service_tier_choice.flex_lane(svc, uow.service_tiers, job, retrying=False)
    raw = OnDemandTransport(
        svc.model_runtime, timeouts=ReadTimeoutPolicy.from_settings(settings), ends_at=None if deadline is None else deadline + stop_margin_s
    )
    transport = GovernedTransport(
        service_tier_choice.with_flex(flex, raw), shared.limiter(owner=job.owner_id), BackoffPolicy.from_settings(settings), aborted=halted, waiting=heartbeat.halted
    )
    primed_transport = PrimedTransport(primed, transport) if primed else None
    hold = FigureHold(shared.budgets, job.id, prices=svc.prices, model_id=config.model_id, on_reached=heartbeat.hold_reached)
    todo = [f for f in figures if f.name not in kept]

    def run() -> FigureRun:
        return run_figures(
            todo,
            config=config,
            transport=transport,
            prices=svc.prices,
            heartbeat=heartbeat,
            concurrency=settings.batchlane_chunk_concurrency,
            primed=primed_transport,
            hold=hold,
            done_before=len(kept),
        )

    rates = {"default": svc.prices.rate(config.model_id), **({"flex": svc.prices.rate(config.model_id, "flex")} if flex else {})}
    return FigureWork(job, claimed, config, converter, folder, pages, figures, skipped, kept, continuations, transport, primed_transport, run, flex, rates)


def with_skipped_figures(store: ObjectStore, job_id: str, chunk: ChunkRow, pages: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """A chunk with no picture to send (records 0) whose pictures were asked to be described: each page with the alt
    text of a picture that could not be sent saying why (a vector EMF, a damaged file)."""
    if not chunk.records and chunk.records is not None:
        folder, _, skipped = document_figures(store, job_id, chunk)
        if skipped:
            return [(number, with_descriptions(text, folder, skipped)) for number, text in pages]
    return pages


def pause_at_hold(svc: Services, job: JobRow) -> bool:
    """Before a chunk's pictures start: True (the job is ``paused_budget``) when its spend reached its hold, or a
    request that did not fit is waiting (BudgetRepository.pause_at_hold)."""
    paused = svc.uow().budgets.pause_at_hold(job.id)
    if paused:
        logger.warning("job paused at its funds hold", job_id=job.id, figures=True)
    return paused


def _load_kept(store: ObjectStore, job_id: str, chunk_index: int) -> tuple[dict[str, FigureResult], int]:
    """The pictures a previous attempt settled (their spend was booked by it: counted as spent), and its continuations."""
    try:
        data = store.get_json(keys.chunk_partial_key(job_id, chunk_index))
    except NotFound:
        return {}, 0
    kept = {}
    for item in data.get("figures", []):
        result = FigureResult.from_json(item)
        kept[result.name] = FigureResult(result.name, result.page, result.status, result.text, result.reason, result.served_by, result.usage, Decimal(0))
    return kept, int(data.get("continuations", 0))


# -- the dry run -------------------------------------------------------------------------------
DRY_RUN_LISTED = 100  # pictures listed one by one in a dry run's answer; the totals count them all


def dry_run_figures(svc: Services, options: Mapping[str, Any], *, model_id: str, pictures: list[CountedPicture] | None) -> dict[str, Any]:
    """What describing a born-digital file's pictures would cost: each picture (its size as Claude reads it, its
    tokens, its cost at the lane) and in all, on the lane the job would take (the pages' rule, a picture a record),
    with the hold (each picture's worst case). ``pictures``: the file's, counted from its container; None: not counted."""
    settings = svc.settings
    if pictures is None:
        return {
            "pictures": None,
            "toDescribe": None,
            "lane": None,
            "basis": "the file's pictures were not counted within the dry run's bounds: each costs what its size says (docs/formats.md)",
        }
    sent = [p for p in pictures if p.skipped is None]
    eligible, why = batch_eligible(options, len(sent), lane_configured=settings.batch_lane_configured, min_pages=settings.batch_conversion_min_pages)
    lane = "batch" if eligible else "on_demand"
    expected = [expected_usage(p.width, p.height) for p in sent]
    each = [svc.prices.cost(model_id, u, batch=eligible) for u in expected]
    total = sum(expected, Usage())
    skipped: dict[str, int] = {}
    for p in pictures:
        if p.skipped is not None:
            skipped[p.skipped] = skipped.get(p.skipped, 0) + 1
    hold = sum((svc.prices.cost(model_id, worst_usage(p.width, p.height)) for p in sent), Decimal(0))
    return {
        "pictures": len(pictures),
        "toDescribe": len(sent),
        "notDescribed": skipped,
        "lane": lane,
        "laneReason": why,
        "perPicture": [
            {"name": p.name, "width": p.width, "height": p.height, "inputTokens": u.input_tokens, "costUsd": str(c)}
            for p, u, c in list(zip(sent, expected, each, strict=True))[:DRY_RUN_LISTED]
        ],
        "listed": min(len(sent), DRY_RUN_LISTED),
        "inputTokens": total.input_tokens,
        "outputTokens": total.output_tokens,
        "onDemandUsd": str(svc.prices.cost(model_id, total)),
        "batchUsd": str(svc.prices.cost(model_id, total, batch=True)),
        "costUsd": str(sum(each, Decimal(0))),
        "holdUsd": str(hold),
        "basis": (
            f"a request per picture: the picture at the size Claude reads it (width × height / 750 tokens) and the prompt "
            f"({PROMPT_TOKENS_PER_REQUEST} tokens) in, about {EXPECTED_DESCRIPTION_TOKENS} tokens out; held at {FIGURE_MAX_TOKENS} out; "
            f"counted from the file's own pictures (one used twice is described twice); {'the batch lane, half price' if eligible else 'on-demand'}"
        ),
    }
