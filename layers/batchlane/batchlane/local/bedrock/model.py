"""The emulated page "model": NOT a model, it reads the page's own PDF text layer.

Offline there is no Claude, yet the pipeline needs answers that depend on the page,
are deterministic (reruns match, tests can assert on them) and can be told apart from
a real model's wherever they show. So the answer is the Markdown of the text layer of
each PDF document in the request: extracted with pypdf, lines grouped into
paragraphs. A page without a text layer (a scan) answers "", which callers must treat
as unusable, exactly as they would an empty answer from the real model.

With several documents in one request, each document's text is preceded by
``<!-- Page N -->``, N taken from the document name (``page-12`` gives 12) or, failing
that, its 1-based position.

Token accounting (documented so cost tests can predict it):
  * inputTokens = 1500 per document + (characters of system and text blocks) // 4
  * outputTokens = ceil(characters of the answer / 4)
  * when outputTokens would exceed ``inferenceConfig.maxTokens`` (default 4096) the
    answer is cut to maxTokens * 4 characters and stopReason is ``max_tokens``.

The same :func:`answer` serves batch records and Converse calls, so a batch-served page
and an on-demand-served page of the same request are byte-identical.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import re
from collections.abc import Mapping
from typing import Any

from pypdf import PdfReader
from pypdf.errors import PdfReadError

EMULATED_MODEL_LABEL = "batchlane offline emulator (text layer, not a model)"

TOKENS_PER_DOCUMENT = 1500
CHARS_PER_TOKEN = 4
DEFAULT_MAX_TOKENS = 4096
GUARDRAIL_TEXT = "Sorry, the model cannot answer this request."

_PAGE_NUMBER = re.compile(r"(\d+)\s*$")


class ModelInputError(ValueError):
    """The request is well formed but the model cannot read it (e.g. a broken PDF)."""


def answer(request: Mapping[str, Any], *, fault: str | None = None) -> dict[str, Any]:
    """A Converse response body for ``request`` (a Converse request body).

    ``fault`` is one of None, "truncate", "content_filter", "guardrail", "omit" (only the
    first third of the text, as a model that skipped most of the page), or
    "markers_skip" / "markers_repeat" / "markers_reorder" (multi-document answers only:
    the second document's marker is dropped, repeats the first's, or the first two
    documents come back swapped); the caller draws it (see faults.answer_fault) so this
    function stays pure.
    """
    documents, prompt_chars = _read_request(request)
    text = _compose(documents, fault if fault and fault.startswith("markers_") else None)
    input_tokens = TOKENS_PER_DOCUMENT * len(documents) + prompt_chars // CHARS_PER_TOKEN
    max_tokens = int((request.get("inferenceConfig") or {}).get("maxTokens") or DEFAULT_MAX_TOKENS)

    stop_reason = "end_turn"
    if fault == "content_filter":
        text, stop_reason = "", "content_filtered"
    elif fault == "guardrail":
        text, stop_reason = GUARDRAIL_TEXT, "guardrail_intervened"
    elif fault == "truncate":
        text, stop_reason = text[: len(text) // 2], "max_tokens"
    elif fault == "omit":
        text = text[: len(text) // 3]
    if _tokens(text) > max_tokens:
        text, stop_reason = text[: max_tokens * CHARS_PER_TOKEN], "max_tokens"

    output_tokens = _tokens(text)
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": stop_reason,
        "usage": {
            "inputTokens": input_tokens,
            "outputTokens": output_tokens,
            "totalTokens": input_tokens + output_tokens,
        },
        "metrics": {"latencyMs": 0},
    }


def _tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _read_request(request: Mapping[str, Any]) -> tuple[list[tuple[str | None, bytes]], int]:
    """The (name, pdf bytes) of every document, and the count of prompt characters."""
    prompt_chars = sum(len(block.get("text") or "") for block in request.get("system") or [])
    documents: list[tuple[str | None, bytes]] = []
    for message in request.get("messages") or []:
        for block in message.get("content") or []:
            if "text" in block:
                prompt_chars += len(block["text"] or "")
            elif "document" in block:
                document = block["document"]
                documents.append((document.get("name"), _document_bytes(document)))
    return documents, prompt_chars


def _document_bytes(document: Mapping[str, Any]) -> bytes:
    """Batch JSONL and botocore both send base64 text; in-process callers may pass bytes."""
    raw = (document.get("source") or {}).get("bytes")
    if isinstance(raw, (bytes, bytearray)):
        return bytes(raw)
    try:
        return base64.b64decode(raw or "", validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ModelInputError("document source bytes are not valid base64") from exc


def _compose(documents: list[tuple[str | None, bytes]], marker_fault: str | None = None) -> str:
    if len(documents) == 1:
        return page_markdown(documents[0][1])
    numbered = []
    for position, (name, data) in enumerate(documents, start=1):
        match = _PAGE_NUMBER.search(name or "")
        numbered.append((int(match.group(1)) if match else position, page_markdown(data)))
    if marker_fault == "markers_reorder":
        numbered[0], numbered[1] = numbered[1], numbered[0]
    parts = []
    for index, (number, body) in enumerate(numbered):
        if index == 1 and marker_fault == "markers_skip":
            parts.append(body)
            continue
        shown = numbered[0][0] if index == 1 and marker_fault == "markers_repeat" else number
        parts.append(f"<!-- Page {shown} -->\n\n{body}" if body else f"<!-- Page {shown} -->")
    return "\n\n".join(p for p in parts if p)


def page_markdown(pdf: bytes) -> str:
    """Markdown from the text layer of every page of ``pdf``; "" when it has none."""
    try:
        reader = PdfReader(io.BytesIO(pdf))
        texts = [page.extract_text() or "" for page in reader.pages]
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise ModelInputError(f"the document could not be read as a PDF: {exc}") from exc
    return "\n\n".join(p for p in (_paragraphs(text) for text in texts) if p)


def _paragraphs(text: str) -> str:
    """Join wrapped lines into paragraphs, and mark short title lines as headings.

    A paragraph ends at a blank line, or at a line that ends a sentence and is clearly
    shorter than the page's longest line (the ragged last line of a block). A short
    line with letters and no closing punctuation that opens a block and is followed by
    more text reads as a title: it becomes a ``##`` heading.
    """
    lines = [line.strip() for line in text.splitlines()]
    width = max((len(line) for line in lines), default=0)
    blocks: list[str] = []
    current: list[str] = []
    for index, line in enumerate(lines):
        followed = any(lines[index + 1 :])
        if line and not current and followed and _is_title(line, width):
            blocks.append(f"## {line}")
            continue
        if line:
            current.append(line)
        if current and (not line or (line[-1] in ".!?:" and len(line) < 0.8 * width)):
            blocks.append(" ".join(current))
            current = []
    if current:
        blocks.append(" ".join(current))
    return "\n\n".join(blocks)


def _is_title(line: str, width: int) -> bool:
    return len(line) < 0.5 * width and line[-1] not in ".!?:,;" and any(c.isalpha() for c in line)
