"""Building the hi-fi single-pass request for one page: the Anthropic Messages body.

Pages go to Bedrock as the Anthropic Messages body through InvokeModel, on-demand and in
batch records (``modelInvocationType: InvokeModel``) alike: that is the form in which
Claude sees the page as text AND image. A Converse ``document`` block without citations
is text extraction only (Anthropic, "PDF support", Amazon Bedrock section; see
docs/architecture.md "Claude sees the page").

The same builder serves the on-demand call, the batch record (capture) and the primed
lookup, so a batch answer can only be reused when the request it answered is the one
the chunk processor would send now (same model + prompt hash, which covers the format).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, ClassVar

from batchlane.domain import page_form as forms
from batchlane.domain.limits import MAX_REQUEST_BYTES, REQUEST_OVERHEAD_BYTES
from batchlane.domain.prompt import prompt_hash
from batchlane.domain.records import record_id
from batchlane.pdf.page_image import MAX_IMAGE_BYTES, PageImage, render_page_image

SYSTEM_PROMPT = (
    "You convert pages of PDF documents into clean GitHub-flavoured Markdown. "
    "Reproduce every piece of text on the page in reading order, leaving out running headers, running footers "
    "and page numbers. Use #-headings for headings, "
    "Markdown lists for lists and Markdown tables for tables; write formulas in LaTeX between $ signs. "
    "Describe figures in one short italic sentence ending with (region: left, top, right, bottom), its box as fractions of the page from the top left. Output only the Markdown of the page, without commentary."
)
PAGE_INSTRUCTION = "Convert this PDF page to Markdown."
ANTHROPIC_VERSION = "bedrock-2023-05-31"  # the value Bedrock requires in an Anthropic Messages body
# Part of the prompt hash: a batch answer to a request of another shape (e.g. the former
# Converse text-extraction form) is never reused for this one. Both page forms share it
# (module docstring), so the value keeps its first name.
REQUEST_FORMAT = "invoke-model/anthropic-messages/pdf-document/v1"
# Anthropic, "PDF support": a page costs about 1,500-3,000 text tokens plus its image in
# visual mode. The upper end is what a read timeout books for a call whose usage never came back.
ESTIMATED_INPUT_TOKENS_PER_PAGE = 3000


@dataclass(frozen=True)
class ConverterConfig:
    model_id: str
    max_tokens: int
    temperature: float
    system: str = SYSTEM_PROMPT
    instruction: str = PAGE_INSTRUCTION
    page_form: str = forms.PDF  # pdf | image: resolved from the setting and what was recorded (domain/page_form.py)

    @classmethod
    def from_settings(cls, settings: Any, options: Mapping[str, Any] | None = None, *, recorded_forms: Mapping[str, str] | None = None) -> ConverterConfig:
        """``recorded_forms``: model id -> the form the doctor or a refused call recorded (db/page_forms.py)."""
        options = options or {}
        model_id = str(options.get("modelId") or settings.batchlane_model_id)
        return cls(
            model_id=model_id,
            max_tokens=int(settings.batchlane_max_tokens),
            temperature=float(settings.batchlane_temperature),
            page_form=forms.effective_form(str(getattr(settings, "batchlane_page_form", forms.PDF)), recorded_forms or {}, model_id),
        )


@dataclass(frozen=True)
class PageRequest:
    """One model request for one or more pages; ``body()`` is the Anthropic Messages body."""

    request_format: ClassVar[str] = REQUEST_FORMAT  # part of the prompt hash: a kind of request's answers are its own
    record_id: str
    model_id: str
    system: str
    text: str
    max_tokens: int
    temperature: float
    documents: tuple[tuple[str, bytes], ...]  # (document title "page-N", one-page PDF bytes)
    page_numbers: tuple[int, ...]
    page_form: str = forms.PDF
    service_tier: str | None = None  # InvokeModel serviceTier (domain/service_tier.py); None: the default tier

    def with_tier(self, service_tier: str | None) -> PageRequest:
        """The same request at another Bedrock service tier (same record id and prompt hash)."""
        return replace(self, service_tier=service_tier)

    def with_form(self, page_form: str) -> PageRequest:
        """The same request with the pages in ``page_form`` (same record id and prompt hash)."""
        return replace(self, page_form=page_form)

    @cached_property
    def images(self) -> tuple[PageImage, ...]:
        """The pages rendered (image form), once per request object. Each image gets its share of the
        request's byte limit (base64 in the JSON body), so a group of scans never exceeds it."""
        share = (MAX_REQUEST_BYTES - REQUEST_OVERHEAD_BYTES) // max(len(self.documents), 1) * 3 // 4
        return tuple(render_page_image(data, max_bytes=min(MAX_IMAGE_BYTES, share)) for _, data in self.documents)

    @cached_property
    def prompt_hash(self) -> str:
        return prompt_hash(
            model_id=self.model_id,
            system=self.system,
            text=self.text,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            request_format=self.request_format,
        )

    def body(self) -> dict[str, Any]:
        """The Anthropic Messages body: the pages first (documents, or image + text layer each), then the instruction."""
        return self._body(lambda data: base64.b64encode(data).decode())

    def _body(self, encoded: Callable[[bytes], str]) -> dict[str, Any]:
        """:meth:`body` with ``encoded(data)`` as each page's base64 ``source.data``."""
        content: list[dict[str, Any]] = []
        if self.page_form == forms.IMAGE:
            for (name, _), image in zip(self.documents, self.images, strict=True):
                content.append({"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": encoded(image.data)}})
                layer = f"The text layer of {name}:\n{image.text}" if image.text else f"{name} has no text layer."
                content.append({"type": "text", "text": layer})
        else:
            content = [
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": encoded(data)}, "title": name}
                for name, data in self.documents
            ]
        content.append({"type": "text", "text": self.text})
        return {
            "anthropic_version": ANTHROPIC_VERSION,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "system": self.system,
            "messages": [{"role": "user", "content": content}],
        }

    def invoke_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``bedrock-runtime`` ``invoke_model``."""
        kwargs = {
            "modelId": self.model_id,
            "body": self.body_json(),
            "contentType": "application/json",
            "accept": "application/json",
        }
        return {**kwargs, "serviceTier": self.service_tier} if self.service_tier else kwargs

    def body_json(self) -> bytes:
        """``json.dumps(self.body(), separators=(",", ":"))``, byte for byte (:meth:`body_json_parts` joined)."""
        return b"".join(self.body_json_parts())

    def body_json_parts(self) -> list[bytes]:
        """:meth:`body_json` in pieces whose join is it, each page's base64 one piece as ``b64encode`` made it.

        A base64 string needs no JSON escape (its alphabet is letters, digits, ``+/=``), so the encoder never
        sees it: the body is dumped with a mark in each one's place, and the pieces are cut at the marks. A
        real book's page is ~200 KB of base64; it is copied once more, by whoever joins the pieces (the batch
        shard, or :meth:`body_json`), instead of ~7 times through str, escaping checks and joins."""
        pages: list[bytes] = []

        def mark(data: bytes) -> str:
            pages.append(data)
            return f"\x00base64 {len(pages) - 1}\x00"

        skeleton = json.dumps(self._body(mark), separators=(",", ":"))
        marks = [f'"\\u0000base64 {index}\\u0000"' for index in range(len(pages))]
        if not all(skeleton.count(m) == 1 for m in marks):  # a text holding a mark itself
            return [json.dumps(self.body(), separators=(",", ":")).encode()]
        parts: list[bytes] = []
        rest = skeleton
        for m, data in zip(marks, pages, strict=True):
            before, rest = rest.split(m, 1)
            parts += [before.encode(), b'"', base64.b64encode(data), b'"']
        parts.append(rest.encode())
        return parts

    def model_input(self) -> dict[str, Any]:
        """The modelInput of a batch JSONL record (modelInvocationType InvokeModel): the same body."""
        return self.body()

    def estimated_input_tokens(self) -> int:
        """An upper estimate of the input tokens, for booking a call whose usage never came back."""
        return ESTIMATED_INPUT_TOKENS_PER_PAGE * len(self.documents) + (len(self.system) + len(self.text)) // 4


# The former name, kept so code written against it keeps working; the request is no longer Converse.
ConverseRequest = PageRequest


def build_page_request(*, chunk_index: int, page_number: int, pdf_bytes: bytes, config: ConverterConfig) -> PageRequest:
    return PageRequest(
        record_id=record_id(chunk_index, page_number),
        model_id=config.model_id,
        system=config.system,
        text=config.instruction,
        max_tokens=config.max_tokens,
        temperature=config.temperature,
        documents=((f"page-{page_number}", pdf_bytes),),
        page_numbers=(page_number,),
        page_form=config.page_form,
    )
