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


# In the pool one Bedrock job carries pages of many jobs: each job has a tag inside the lane
# (``m<k>``) and its records go to Bedrock as ``m<k>-c<chunk>-p<page>``. The tag is stripped on
# collect, so results keep the job's own ids (what a primed chunk looks up).
_POOLED = re.compile(r"^(m\d+)-(c\d+-p\d+)(?:-r\d+)?$")
RETRY_SUFFIX = "-r1"  # a record resent in a retry batch: a new id Bedrock has not seen, mapped back on collect


def member_tag(index: int) -> str:
    return f"m{index}"


def pooled_record_id(tag: str, job_record_id: str) -> str:
    return f"{tag}-{job_record_id}"


def split_pooled_record_id(value: str) -> tuple[str, str]:
    """Return (member tag, the job's own record id); a retry suffix (``-r1``) is dropped, and a record id
    without a tag (a lane from before the pool, one job per Bedrock job) belongs to ``m0``. ValueError
    for anything else."""
    match = _POOLED.match(value)
    if match:
        return match.group(1), match.group(2)
    parse_record_id(value)
    return member_tag(0), value
