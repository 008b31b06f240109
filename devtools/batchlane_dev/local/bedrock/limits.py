"""Request size limits, enforced as Bedrock does (Converse and Anthropic Messages bodies alike).

AWS's numbers, written here on their own rather than imported from the runtime package, so
the emulator checks the code's choice instead of repeating it (docs/offline.md, "Request size limits"):

* Converse: each document at most 4.5 MB (Amazon Bedrock, "API restrictions"). AWS lifts this for
  PDFs sent to Claude 4 and later; the emulator keeps it for every model, the strict side.
* Every request, either API: at most 20 MB of body (Bedrock, "Anthropic Claude Messages API";
  Anthropic's own limit is 32 MB). Measured on the JSON body, where documents travel base64-encoded.

On-demand, a breach is a ValidationException; in a batch job, that record's error in the output.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .errors import validation

MAX_DOCUMENT_BYTES = 4_500_000  # 4.5 MB, read as 10^6 bytes: the smaller reading, so nothing AWS refuses passes here
MAX_BODY_BYTES = 20_000_000


def size_error(body: Any) -> str | None:
    """Why Bedrock would refuse ``body`` for its size, or None: a Converse ``document`` block over 4.5 MB,
    or any body (Converse, or Messages with its ``{"type": "document"}`` blocks) over 20 MB as JSON."""
    if not isinstance(body, Mapping):
        return None
    for m, message in enumerate(body.get("messages") or []):
        content = message.get("content") if isinstance(message, Mapping) else None
        for c, block in enumerate(content if isinstance(content, list) else []):
            document = block.get("document") if isinstance(block, Mapping) else None
            if isinstance(document, Mapping):
                size = _decoded_size((document.get("source") or {}).get("bytes"))
                if size > MAX_DOCUMENT_BYTES:
                    return f"messages.{m}.content.{c}.document: the document is {size} bytes; documents can be at most 4.5 MB ({MAX_DOCUMENT_BYTES} bytes)."
    body_bytes = len(json.dumps(body, separators=(",", ":"), default=_bytes_as_base64).encode())
    if body_bytes > MAX_BODY_BYTES:
        return f"The request is {body_bytes} bytes; the maximum request size is {MAX_BODY_BYTES} bytes."
    return None


def enforce(body: Any) -> None:
    """Raise ValidationException where :func:`size_error` finds a breach."""
    if problem := size_error(body):
        raise validation(problem)


def _decoded_size(data: Any) -> int:
    if isinstance(data, (bytes, bytearray)):
        return len(data)
    if isinstance(data, str):
        return len(data) * 3 // 4 - data[-2:].count("=")
    return 0


def _bytes_as_base64(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        return "x" * (4 * ((len(value) + 2) // 3))
    raise TypeError(type(value).__name__)
