"""Building the hi-fi single-pass Converse request for one page.

The same builder serves the on-demand call, the batch record (capture) and the primed
lookup, so a batch answer can only be reused when the request it answered is the one
the chunk processor would send now (same model + prompt hash).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from batchlane.domain.prompt import prompt_hash
from batchlane.domain.records import record_id

SYSTEM_PROMPT = (
    "You convert pages of PDF documents into clean GitHub-flavoured Markdown. "
    "Reproduce every piece of text on the page in reading order. Use #-headings for headings, "
    "Markdown lists for lists and Markdown tables for tables; write formulas in LaTeX between $ signs. "
    "Describe figures in one short italic sentence. Output only the Markdown of the page, without commentary."
)
PAGE_INSTRUCTION = "Convert this PDF page to Markdown."


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
class ConverseRequest:
    record_id: str
    model_id: str
    system: str
    text: str
    max_tokens: int
    temperature: float
    documents: tuple[tuple[str, bytes], ...]  # (document name, PDF bytes)
    page_numbers: tuple[int, ...]

    @cached_property
    def prompt_hash(self) -> str:
        return prompt_hash(model_id=self.model_id, system=self.system, text=self.text, max_tokens=self.max_tokens, temperature=self.temperature)

    def _content(self, *, encode: bool) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = [
            {"document": {"format": "pdf", "name": name, "source": {"bytes": base64.b64encode(data).decode() if encode else data}}}
            for name, data in self.documents
        ]
        blocks.append({"text": self.text})
        return blocks

    def converse_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``bedrock-runtime`` ``converse`` (bytes stay bytes)."""
        return {
            "modelId": self.model_id,
            "system": [{"text": self.system}],
            "messages": [{"role": "user", "content": self._content(encode=False)}],
            "inferenceConfig": {"maxTokens": self.max_tokens, "temperature": self.temperature},
        }

    def model_input(self) -> dict[str, Any]:
        """The Converse body for a batch JSONL record (modelInvocationType Converse): bytes as base64."""
        return {
            "system": [{"text": self.system}],
            "messages": [{"role": "user", "content": self._content(encode=True)}],
            "inferenceConfig": {"maxTokens": self.max_tokens, "temperature": self.temperature},
        }


def build_page_request(*, chunk_index: int, page_number: int, pdf_bytes: bytes, config: ConverterConfig) -> ConverseRequest:
    return ConverseRequest(
        record_id=record_id(chunk_index, page_number),
        model_id=config.model_id,
        system=config.system,
        text=config.instruction,
        max_tokens=config.max_tokens,
        temperature=config.temperature,
        documents=((f"page-{page_number}", pdf_bytes),),
        page_numbers=(page_number,),
    )
