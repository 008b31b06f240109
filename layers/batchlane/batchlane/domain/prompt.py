"""The prompt hash: what must match for a batch answer to stand in for an on-demand one.

It covers model, system prompt, instruction text, token limit, temperature and the
request format (API and body shape: an answer given to another shape, e.g. Converse's
text-extraction mode, saw another page) — not the page's PDF bytes: the record id already pins the page, and hashing megabytes per page
would cost more than it protects.
"""

from __future__ import annotations

import hashlib
import json


def prompt_hash(*, model_id: str, system: str, text: str, max_tokens: int, temperature: float, request_format: str) -> str:
    canonical = json.dumps(
        {"model": model_id, "system": system, "text": text, "maxTokens": max_tokens, "temperature": temperature, "format": request_format},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()
