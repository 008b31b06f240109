"""convert_page: one page in, one page result out, whatever the transport."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from batchlane.claude.request import ConverterConfig, build_page_request
from batchlane.claude.transports import ModelAnswer, ModelCallError, Transport
from batchlane.domain.acceptance import judge
from batchlane.domain.cost import PriceTable, Usage
from batchlane.pdf.split import Page


def spend_json(served_by: str | None, usage: Usage, cost_usd: Decimal, service_tier: str | None) -> dict[str, Any]:
    """What a page's or a picture's answer spent, as its stored JSON carries it (read back by :func:`spend_of`)."""
    return {
        "servedBy": served_by,
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "costUsd": str(cost_usd),
        "serviceTier": service_tier,
    }


def spend_of(data: dict[str, Any]) -> dict[str, Any]:
    """The keyword fields of a result (served_by, usage, cost_usd, service_tier) from its stored JSON."""
    return {
        "served_by": data.get("servedBy"),
        "usage": Usage(int(data.get("inputTokens", 0)), int(data.get("outputTokens", 0))),
        "cost_usd": Decimal(str(data.get("costUsd", "0"))),
        "service_tier": data.get("serviceTier"),
    }


@dataclass(frozen=True)
class PageResult:
    page_number: int
    status: str  # converted | blank | truncated | failed | captured
    markdown: str = ""
    reason: str | None = None
    served_by: str | None = None  # on_demand | batch | capture | None (blank)
    usage: Usage = field(default_factory=Usage)  # every call spent on the page (its share of a multi-page one), and its batch record
    cost_usd: Decimal = Decimal(0)  # on-demand spend on the page, every attempt; batch-served pages are billed by the lane
    retryable: bool = False
    service_tier: str | None = None  # on-demand pages: the Bedrock service tier that served them (default | flex)
    batch_usage: Usage | None = None  # the batch record's tokens when a batch answer served the page (domain/savings.py)

    def to_json(self) -> dict[str, Any]:
        return {
            "page": self.page_number,
            "status": self.status,
            "markdown": self.markdown,
            "reason": self.reason,
            **spend_json(self.served_by, self.usage, self.cost_usd, self.service_tier),
            **({"batchInputTokens": self.batch_usage.input_tokens, "batchOutputTokens": self.batch_usage.output_tokens} if self.batch_usage else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PageResult:
        return cls(
            page_number=int(data["page"]),
            status=data["status"],
            markdown=data.get("markdown", ""),
            reason=data.get("reason"),
            **spend_of(data),
            batch_usage=Usage(int(data["batchInputTokens"]), int(data.get("batchOutputTokens", 0))) if "batchInputTokens" in data else None,
        )


def convert_page(page: Page, config: ConverterConfig, transport: Transport, prices: PriceTable) -> PageResult:
    """Convert one page. Blank pages cost no call; a failed call becomes a visible failed page."""
    if page.blank:
        return PageResult(page.number, "blank")
    if page.failure:  # e.g. PAGE_TOO_LARGE: nothing sendable, so no call and no batch record
        return PageResult(page.number, "failed", reason=page.failure)
    request = build_page_request(chunk_index=page.chunk_index, page_number=page.number, pdf_bytes=page.pdf_bytes, config=config)
    try:
        answer = transport.send(request)
    except ModelCallError as exc:
        return PageResult(page.number, "failed", reason=exc.code, retryable=exc.retryable)
    if answer.served_by == "capture":
        return PageResult(page.number, "captured", served_by="capture")
    return page_result(page.number, request.model_id, answer, prices)


def page_result(page_number: int, model_id: str, answer: ModelAnswer, prices: PriceTable) -> PageResult:
    """Judge one page's answer: converted, truncated (text kept, marked) or failed; on-demand spend priced."""
    on_demand = answer.served_by == "on_demand"
    cost = prices.cost(model_id, answer.usage, tier=answer.service_tier) if on_demand else Decimal(0)
    tier = answer.service_tier if on_demand else None
    verdict = judge(answer.text, answer.stop_reason)
    if verdict.accepted:
        return PageResult(page_number, "converted", answer.text, served_by=answer.served_by, usage=answer.usage, cost_usd=cost, service_tier=tier)
    if verdict.truncated and answer.text.strip():
        # Keep what the model wrote; the marker says the page is incomplete.
        return PageResult(
            page_number, "truncated", answer.text, reason=answer.stop_reason, served_by=answer.served_by, usage=answer.usage, cost_usd=cost, service_tier=tier
        )
    return PageResult(page_number, "failed", reason=verdict.reason, served_by=answer.served_by, usage=answer.usage, cost_usd=cost, service_tier=tier)
