"""What a job would have cost all on-demand, and so what the batch lane saved (or lost): one definition.

Booked where it is known: each batch share carries its accepted answers at the on-demand price (batch/collect.py),
a chunk that could not use one (its prompt changed) takes it back (filejob/chunk.py), under ``BATCH_SERVED_KEY``
in the ledger row's metadata; the API, webhooks and reports sum the job's rows (:func:`ledger_money`).

``allOnDemandCostUsd`` is a function of the job's pages: what this engine bills to convert them on-demand.
A page the job converted on-demand counts what that conversion was billed (the ledger's on-demand rows); a
page a batch answer served counts what the on-demand engine would bill for that answer: the batch-served
pages grouped as its planner groups pages (``BATCHLANE_PAGES_PER_REQUEST`` a request, its output budget), each
group one request with the prompt once and a page marker per page, at the on-demand price. Batch tokens billed
and not used (a rejected answer, a record processed for a job that left) count in the total and not here, so
``savingUsd = allOnDemandCostUsd - totalCostUsd`` is negative when the batch lane cost more than it served.
Why this and not the billed tokens re-priced: docs/decisions (the "one source of truth for savings" record).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from batchlane.domain.cost import Usage

PERCENT = Decimal("0.1")
# The key of a chunk ledger row's metadata that carries its batch-served pages at the on-demand price.
BATCH_SERVED_KEY = "batchServedAtOnDemandUsd"


@dataclass(frozen=True)
class ServedAnswer:
    """A batch answer a page was served from: its page number and the record's tokens (what Bedrock billed for it)."""

    page: int
    usage: Usage


def on_demand_groups(answers: Sequence[ServedAnswer], *, page_limit: int, output_budget: float) -> list[list[ServedAnswer]]:
    """The requests the on-demand planner would make of these pages (ondemand/planner.GroupBuilder's rule, with
    each page's real output instead of its estimate): in page order, a new request when the page limit is
    reached or the next page's output would pass the budget (``max_tokens`` × fill)."""
    groups: list[list[ServedAnswer]] = []
    current: list[ServedAnswer] = []
    used = 0
    for answer in sorted(answers, key=lambda a: a.page):
        if current and (len(current) >= max(page_limit, 1) or used + answer.usage.output_tokens > output_budget):
            groups.append(current)
            current, used = [], 0
        current.append(answer)
        used += answer.usage.output_tokens
    if current:
        groups.append(current)
    return groups


def on_demand_usage(
    answers: Sequence[ServedAnswer],
    *,
    page_limit: int,
    output_budget: float,
    single_prompt_tokens: int,
    group_prompt_tokens: int,
    marker_tokens: Callable[[int], int],
) -> list[Usage]:
    """The usage of each on-demand request that would have converted these batch-served pages: each record's
    input less the prompt it carried alone, plus the group's prompt once; each answer plus its page's marker
    (a group of one is the single-page request: the record itself)."""
    requests: list[Usage] = []
    for group in on_demand_groups(answers, page_limit=page_limit, output_budget=output_budget):
        if len(group) == 1:
            requests.append(group[0].usage)
            continue
        inputs = sum(max(a.usage.input_tokens - single_prompt_tokens, 0) for a in group) + group_prompt_tokens
        outputs = sum(a.usage.output_tokens + marker_tokens(a.page) for a in group)
        requests.append(Usage(inputs, outputs))
    return requests


@dataclass(frozen=True)
class LedgerMoney:
    """A job's money from its ledger: what it cost, by lane, and what its batch-served pages would have cost on-demand."""

    total_usd: Decimal = Decimal(0)
    on_demand_usd: Decimal = Decimal(0)  # every on-demand call billed (the chunk rows)
    batch_usd: Decimal = Decimal(0)  # its shares of the Bedrock batch jobs that carried it, used or not
    batch_served_at_on_demand_usd: Decimal = Decimal(0)  # the batch answers it used, priced as the on-demand engine would bill them

    @property
    def all_on_demand_usd(self) -> Decimal:
        return self.on_demand_usd + self.batch_served_at_on_demand_usd

    @property
    def saving_usd(self) -> Decimal:
        """Negative when the job cost more than converting its pages on-demand would have (a loss)."""
        return self.all_on_demand_usd - self.total_usd

    @property
    def saving_percent(self) -> Decimal:
        if not self.all_on_demand_usd:
            return Decimal(0)
        return (self.saving_usd / self.all_on_demand_usd * 100).quantize(PERCENT)

    def to_json(self) -> dict[str, str]:
        """The figures as the API and ``--json`` give them (decimal strings)."""
        return {
            "totalCostUsd": str(self.total_usd),
            "onDemandCostUsd": str(self.on_demand_usd),
            "batchCostUsd": str(self.batch_usd),
            "allOnDemandCostUsd": str(self.all_on_demand_usd),
            "savingUsd": str(self.saving_usd),
            "savingPercent": str(self.saving_percent),
        }


def ledger_money(rows: Iterable[tuple[str, Decimal, Mapping[str, Any]]]) -> LedgerMoney:
    """A job's :class:`LedgerMoney` from its ledger rows, each (backend, cost, metadata) (db/read_model.py sums the same in SQL)."""
    total = on_demand = batch = served = Decimal(0)
    for backend, cost, metadata in rows:
        total += cost
        if backend == "batch":
            batch += cost
        else:
            on_demand += cost
        served += Decimal(str((metadata or {}).get(BATCH_SERVED_KEY) or 0))
    return LedgerMoney(total, on_demand, batch, served)
