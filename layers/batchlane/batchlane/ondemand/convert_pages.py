"""Converting a group of pages on-demand: one request, halved until each page is good.

* A group's answer is split on its ``<!-- Page N -->`` markers. When the markers are
  missing, repeated, out of order, or the answer was cut short (max_tokens) or refused,
  the whole answer is discarded and the group is split in two and each half asked
  again, down to single pages. A single page still cut short keeps its text and is
  marked truncated (``<!-- Page N: truncated -->`` in the Markdown), counted and logged.
* A page whose section came back empty is asked alone (same rule as a single page).
* A converted page whose answer covers too little of its text layer is re-asked once.
* Every answer that returned tokens is priced into the :class:`Spend` meter, kept or
  discarded: that is what the chunk books. A call that timed out is booked too, at an
  upper estimate (its pages, max_tokens): Bedrock bills it though no answer came back.
* Throttling past the budget fails the group's pages as retryable (the chunk retries
  them later); halving would not help against a quota.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Protocol

from batchlane.claude import (
    ConverterConfig,
    MarkerProblem,
    ModelAnswer,
    ModelCallError,
    PageResult,
    Transport,
    build_pages_request,
    page_result,
    split_by_markers,
    strip_own_marker,
)
from batchlane.domain.acceptance import judge
from batchlane.domain.cost import PriceTable, Usage
from batchlane.domain.pool import split_by_weight
from batchlane.observability import logger
from batchlane.ondemand.coverage import CoverageRule, build_reask_request
from batchlane.ondemand.planner import PlannedPage
from batchlane.pdf.split import Page
from batchlane.ports import Aborted


@dataclass
class Spend:
    """What this chunk's on-demand calls used and cost, plus counters for its ledger row, and the same spend
    page by page (``by_page``): each call's tokens and cost split over the pages it carried, exactly (largest
    remainder), kept or discarded, so a page's result says all that was spent on it and the pages add up to the ledger."""

    usage: Usage = field(default_factory=Usage)
    cost: Decimal = Decimal(0)
    counts: dict[str, int] = field(default_factory=dict)
    by_page: dict[int, tuple[Usage, Decimal]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, usage: Usage, cost: Decimal, pages: Sequence[int] = ()) -> None:
        with self._lock:
            self.usage = self.usage + usage
            self.cost += cost
            for page, share in split_spend(usage, cost, pages).items():
                self._carry(page, *share)

    def carry(self, page: int, usage: Usage, cost: Decimal) -> None:
        """Spend an earlier attempt booked on ``page`` (not this run's: it is not added to the totals)."""
        with self._lock:
            self._carry(page, usage, cost)

    def _carry(self, page: int, usage: Usage, cost: Decimal) -> None:
        was = self.by_page.get(page, (Usage(), Decimal(0)))
        self.by_page[page] = (was[0] + usage, was[1] + cost)

    def on_page(self, page: int) -> tuple[Usage, Decimal]:
        with self._lock:
            return self.by_page.get(page, (Usage(), Decimal(0)))

    def count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.counts[name] = self.counts.get(name, 0) + n


def split_spend(usage: Usage, cost: Decimal, pages: Sequence[int]) -> dict[int, tuple[Usage, Decimal]]:
    """One call's tokens and cost shared by its pages equally, to the token and the micro-dollar (the shares add up)."""
    if not pages:
        return {}
    keys = {str(page): 1 for page in pages}
    costs = split_by_weight(cost, keys)
    inputs = split_by_weight(Decimal(usage.input_tokens), keys, unit=Decimal(1))
    outputs = split_by_weight(Decimal(usage.output_tokens), keys, unit=Decimal(1))
    return {int(k): (Usage(int(inputs[k]), int(outputs[k])), costs[k]) for k in keys}


class Hold(Protocol):
    """The job's spend counter (filejob/budget.JobHold): a request's worst case reserved before it is sent."""

    def reserve(self, pages: list[Page]) -> Decimal: ...

    def settle(self, reserved: Decimal, actual: Decimal) -> None: ...


class GroupConverter:
    def __init__(
        self,
        *,
        chunk_index: int,
        config: ConverterConfig,
        transport: Transport,
        prices: PriceTable,
        coverage: CoverageRule,
        spend: Spend,
        aborted: Callable[[], bool] = lambda: False,
        hold: Hold | None = None,
    ) -> None:
        self._chunk_index = chunk_index
        self._config = config
        self._transport = transport
        self._prices = prices
        self._coverage = coverage
        self.spend = spend
        self._aborted = aborted
        self._hold = hold

    def _send(self, request_pages: list[PlannedPage], *, reask_of: str | None = None) -> ModelAnswer:
        if self._aborted():
            raise Aborted("chunk no longer processing")
        if reask_of is None:
            request = build_pages_request(chunk_index=self._chunk_index, pages=[(p.number, p.page.pdf_bytes) for p in request_pages], config=self._config)
        else:
            page = request_pages[0]
            request = build_reask_request(
                chunk_index=self._chunk_index, page_number=page.number, pdf_bytes=page.page.pdf_bytes, config=self._config, first_answer=reask_of
            )
        pages = [p.page for p in request_pages]
        if reask_of is not None:  # the first answer goes in too
            pages = [replace(pages[0], text_chars=pages[0].text_chars + len(reask_of))]
        reserved = self._hold.reserve(pages) if self._hold is not None else Decimal(0)  # raises Aborted when it does not fit
        try:
            answer = self._transport.send(request)
        except ModelCallError as exc:
            cost = Decimal(0)
            if exc.possibly_billed is not None:
                # Bedrock bills a call that timed out on our side: book it (an upper estimate)
                # before anyone sends the request again.
                cost = self._prices.cost(self._config.model_id, exc.possibly_billed)
                self.spend.add(exc.possibly_billed, cost, request.page_numbers)
                self.spend.count("readTimeouts")
            self._settle(reserved, cost)
            raise
        except BaseException:
            self._settle(reserved, Decimal(0))
            raise
        cost = self._prices.cost(self._config.model_id, answer.usage, tier=answer.service_tier) if answer.served_by == "on_demand" else Decimal(0)
        if answer.served_by == "on_demand":
            self.spend.add(answer.usage, cost, request.page_numbers)
        self._settle(reserved, cost)
        return answer

    def _settle(self, reserved: Decimal, cost: Decimal) -> None:
        if self._hold is not None:
            self._hold.settle(reserved, cost)

    def convert(self, group: list[PlannedPage]) -> dict[int, PageResult]:
        """Results for every page of ``group`` (raises Aborted when the chunk stopped)."""
        try:
            answer = self._send(group)
        except ModelCallError as exc:
            if exc.retryable or len(group) == 1:
                return {p.number: PageResult(p.number, "failed", reason=exc.code, retryable=exc.retryable) for p in group}
            return self._halve(group, f"error {exc.code}")
        if len(group) == 1:
            return {group[0].number: self._single(group[0], answer)}
        verdict = judge(answer.text, answer.stop_reason)
        sections = split_by_markers(answer.text, [p.number for p in group]) if verdict.accepted else MarkerProblem(verdict.reason or "rejected")
        if isinstance(sections, MarkerProblem):
            return self._halve(group, sections.reason)
        self.spend.count("pagesMultiServed", len(group))
        shares = split_spend(answer.usage, self._prices.cost(self._config.model_id, answer.usage, tier=answer.service_tier), [p.number for p in group])
        results: dict[int, PageResult] = {}
        for page in group:
            body = sections[page.number]
            if not body:
                self.spend.count("emptySectionRetried")
                results.update(self.convert([page]))
                continue
            usage, share = shares[page.number]
            results[page.number] = self._check_coverage(
                page, PageResult(page.number, "converted", body, served_by="on_demand", usage=usage, cost_usd=share, service_tier=answer.service_tier)
            )
        return results

    def _halve(self, group: list[PlannedPage], reason: str) -> dict[int, PageResult]:
        self.spend.count("halvings")
        logger.info("multi-page answer discarded; halving", pages=[p.number for p in group], reason=reason)
        middle = len(group) // 2
        return {**self.convert(group[:middle]), **self.convert(group[middle:])}

    def _single(self, page: PlannedPage, answer: ModelAnswer) -> PageResult:
        text = strip_own_marker(answer.text, page.number)
        result = page_result(page.number, self._config.model_id, replace(answer, text=text), self._prices)
        if result.status == "truncated":
            self.spend.count("pagesTruncated")
            logger.warning("page truncated; kept and marked", page=page.number, stop_reason=result.reason, max_tokens=self._config.max_tokens)
        return self._check_coverage(page, result)

    def check_coverage(self, page: PlannedPage, result: PageResult) -> PageResult:
        """Public for batch-served pages: their re-ask is on-demand too."""
        return self._check_coverage(page, result)

    def _check_coverage(self, page: PlannedPage, result: PageResult) -> PageResult:
        # page.layer is extracted on first use: not at all with the check off.
        if result.status != "converted" or not self._coverage.enabled or not self._coverage.too_low(result.markdown, page.layer):
            return result
        self.spend.count("coverageReasks")
        try:
            answer = self._send([page], reask_of=result.markdown)
        except ModelCallError as exc:
            logger.warning("coverage re-ask failed; keeping the first answer", page=page.number, code=exc.code)
            return result
        second = page_result(
            page.number,
            self._config.model_id,
            replace(answer, text=strip_own_marker(answer.text, page.number)),
            self._prices,
        )
        before = self._coverage.coverage(result.markdown, page.layer) or 0.0
        after = self._coverage.coverage(second.markdown, page.layer) or 0.0
        if second.status == "converted" and after > before:
            self.spend.count("coverageImproved")
            return PageResult(
                page.number,
                "converted",
                second.markdown,
                served_by="on_demand",
                usage=result.usage + second.usage,
                cost_usd=result.cost_usd + second.cost_usd,
                service_tier=second.service_tier,
                batch_usage=result.batch_usage,
            )
        return result
