"""Record ids pin a page: ``c<chunk>-p<page>`` (chunk index from 0, page number from 1)."""

from __future__ import annotations

import re

_RECORD_ID = re.compile(r"^c(\d+)-p(\d+)$")


def record_id(chunk_index: int, page_number: int) -> str:
    return f"c{chunk_index}-p{page_number}"


def parse_record_id(value: str) -> tuple[int, int]:
    """Return (chunk_index, page_number); ValueError for anything else."""
    match = _RECORD_ID.match(value)
    if not match:
        raise ValueError(f"not a batchlane record id: {value!r}")
    return int(match.group(1)), int(match.group(2))
