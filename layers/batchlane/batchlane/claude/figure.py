"""A picture of a born-digital document described by Claude (``describeFigures``): its request and its result.

The request is the page converter's (:class:`~batchlane.claude.request.PageRequest`) in the image form, with
the picture as the image, sized as Claude reads it (pdf/page_image.picture_image), and a prompt of its own; so
it rides every transport a page does (capture for the batch lane's records, primed, on-demand, Flex) and is
judged by the same acceptance. Its record id ``c<chunk>-p<page>-f<k>`` pins the figure (domain/records.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from typing import Any, ClassVar

from batchlane.claude.page import spend_json, spend_of
from batchlane.claude.request import ANTHROPIC_VERSION, ConverterConfig, PageRequest
from batchlane.claude.transports import ModelAnswer, ModelCallError, Transport
from batchlane.domain import page_form as forms
from batchlane.domain.acceptance import judge
from batchlane.domain.cost import PriceTable, Usage
from batchlane.domain.describe import FIGURE_MAX_TOKENS, Described, image_tokens
from batchlane.domain.records import figure_record_id
from batchlane.pdf.page_image import PageImage

FIGURE_SYSTEM = (
    "You describe pictures taken from documents for readers who cannot see them. Say what kind of picture it is "
    "(photo, chart, diagram, drawing, logo, screenshot, ...), what it shows, any text written in it, and for a chart "
    "or a table its axes, series and main values. Write plain text in one to four sentences: no Markdown, no preamble."
)
FIGURE_INSTRUCTION = "Describe this picture from a document."
# Part of the prompt hash, apart from the page requests' (a page's answer is never taken for a picture's).
FIGURE_REQUEST_FORMAT = "invoke-model/anthropic-messages/figure-image/v1"


@dataclass(frozen=True)
class FigureRequest(PageRequest):
    """One picture's request: the picture itself (already sized as Claude reads it), then the instruction."""

    request_format: ClassVar[str] = FIGURE_REQUEST_FORMAT

    picture: PageImage | None = None

    @cached_property
    def images(self) -> tuple[PageImage, ...]:
        assert self.picture is not None
        return (self.picture,)

    def with_form(self, page_form: str) -> FigureRequest:
        """A picture has one form, the image: a page form fallback leaves it as it is."""
        return self

    def _body(self, encoded: Callable[[bytes], str]) -> dict[str, Any]:
        (image,) = self.images
        content = [
            {"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": encoded(image.data)}},
            {"type": "text", "text": self.text},
        ]
        return {
            "anthropic_version": ANTHROPIC_VERSION,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "system": self.system,
            "messages": [{"role": "user", "content": content}],
        }

    def estimated_input_tokens(self) -> int:
        (image,) = self.images
        return image_tokens(image.width, image.height) + (len(self.system) + len(self.text)) // 4


@dataclass(frozen=True)
class FigureSource:
    """A picture to describe, as the split stored it: where it stands (chunk, page, its figure file) and its image."""

    chunk_index: int
    page: int
    name: str  # the figure file, p<page>-<k>.<ext>: its alt text in the Markdown is replaced
    index: int  # k
    image: PageImage

    @property
    def record_id(self) -> str:
        return figure_record_id(self.chunk_index, self.page, self.index)


def build_figure_request(figure: FigureSource, config: ConverterConfig) -> FigureRequest:
    """The request for ``figure``, with the job's model and temperature; the answer capped at FIGURE_MAX_TOKENS."""
    return FigureRequest(
        record_id=figure.record_id,
        model_id=config.model_id,
        system=FIGURE_SYSTEM,
        text=FIGURE_INSTRUCTION,
        max_tokens=FIGURE_MAX_TOKENS,
        temperature=config.temperature,
        documents=((f"figure-{figure.name}", b""),),
        page_numbers=(figure.page,),
        page_form=forms.IMAGE,
        picture=figure.image,
    )


@dataclass(frozen=True)
class FigureResult:
    """What one picture's request came to, for the chunk's result and its ledger row."""

    name: str
    page: int
    status: str  # described | truncated | failed | captured
    text: str = ""
    reason: str | None = None
    served_by: str | None = None  # on_demand | batch | capture
    usage: Usage = field(default_factory=Usage)
    cost_usd: Decimal = Decimal(0)  # on-demand spend only; a batch answer is billed by its lane
    retryable: bool = False
    service_tier: str | None = None

    @property
    def outcome(self) -> Described:
        return Described(self.status, self.text, self.reason)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "page": self.page,
            "status": self.status,
            "text": self.text,
            "reason": self.reason,
            **spend_json(self.served_by, self.usage, self.cost_usd, self.service_tier),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FigureResult:
        return cls(
            name=str(data["name"]),
            page=int(data["page"]),
            status=str(data["status"]),
            text=str(data.get("text") or ""),
            reason=data.get("reason"),
            **spend_of(data),
        )


def figure_result(figure: FigureSource, model_id: str, answer: ModelAnswer, prices: PriceTable) -> FigureResult:
    """Judge one picture's answer as a page's is judged: described, truncated (text kept) or failed; on-demand spend priced."""
    on_demand = answer.served_by == "on_demand"
    cost = prices.cost(model_id, answer.usage, tier=answer.service_tier) if on_demand else Decimal(0)
    tier = answer.service_tier if on_demand else None
    verdict = judge(answer.text, answer.stop_reason)
    if verdict.accepted:
        status, text, reason = "described", answer.text.strip(), None
    elif verdict.truncated and answer.text.strip():
        status, text, reason = "truncated", answer.text.strip(), answer.stop_reason
    else:
        status, text, reason = "failed", "", verdict.reason
    return FigureResult(figure.name, figure.page, status, text, reason, answer.served_by, answer.usage, cost, service_tier=tier)


def describe_figure(figure: FigureSource, config: ConverterConfig, transport: Transport, prices: PriceTable) -> FigureResult:
    """One picture through ``transport`` (the batch lane's capture records it): a failed call is a failed picture."""
    request = build_figure_request(figure, config)
    try:
        answer = transport.send(request)
    except ModelCallError as exc:
        return FigureResult(figure.name, figure.page, "failed", reason=exc.code, retryable=exc.retryable)
    if answer.served_by == "capture":
        return FigureResult(figure.name, figure.page, "captured", served_by="capture")
    return figure_result(figure, request.model_id, answer, prices)
