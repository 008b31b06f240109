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
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from batchlane.domain.prompt import prompt_hash
from batchlane.domain.records import record_id

SYSTEM_PROMPT = (
    "You convert pages of PDF documents into clean GitHub-flavoured Markdown. "
    "Reproduce every piece of text on the page in reading order, leaving out running headers, running footers "
    "and page numbers. Use #-headings for headings, "
    "Markdown lists for lists and Markdown tables for tables; write formulas in LaTeX between $ signs. "
    "Describe figures in one short italic sentence. Output only the Markdown of the page, without commentary."
)
PAGE_INSTRUCTION = "Convert this PDF page to Markdown."
ANTHROPIC_VERSION = "bedrock-2023-05-31"  # the value Bedrock requires in an Anthropic Messages body
# Part of the prompt hash: a batch answer to a request of another shape (e.g. the former
# Converse text-extraction form) is never reused for this one.
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

    @classmethod
    def from_settings(cls, settings: Any, options: Mapping[str, Any] | None = None) -> ConverterConfig:
        options = options or {}
        return cls(
            model_id=str(options.get("modelId") or settings.batchlane_model_id),
            max_tokens=int(settings.batchlane_max_tokens),
            temperature=float(settings.batchlane_temperature),
        )


@dataclass(frozen=True)
class PageRequest:
    """One model request for one or more pages; ``body()`` is the Anthropic Messages body."""

    record_id: str
    model_id: str
    system: str
    text: str
    max_tokens: int
    temperature: float
    documents: tuple[tuple[str, bytes], ...]  # (document title "page-N", one-page PDF bytes)
    page_numbers: tuple[int, ...]

    @cached_property
    def prompt_hash(self) -> str:
        return prompt_hash(
            model_id=self.model_id,
            system=self.system,
            text=self.text,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            request_format=REQUEST_FORMAT,
        )

    def body(self) -> dict[str, Any]:
        """The Anthropic Messages body: documents (base64 PDF) first, then the instruction."""
        content: list[dict[str, Any]] = [
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": base64.b64encode(data).decode()}, "title": name}
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
        return {
            "modelId": self.model_id,
            "body": json.dumps(self.body(), separators=(",", ":")).encode(),
            "contentType": "application/json",
            "accept": "application/json",
        }

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
    )
