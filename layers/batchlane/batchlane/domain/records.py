"""Record ids pin a page: ``c<chunk>-p<page>`` (chunk index from 0, page number from 1); a picture of a
born-digital page described by Claude (docs/formats.md "Pictures described") is ``c<chunk>-p<page>-f<k>``,
its k-th figure (the figure file ``p<page>-<k>``)."""

from __future__ import annotations

import re

_RECORD_ID = re.compile(r"^c(\d+)-p(\d+)(?:-f(\d+))?$")


def record_id(chunk_index: int, page_number: int) -> str:
    return f"c{chunk_index}-p{page_number}"


def figure_record_id(chunk_index: int, page_number: int, figure: int) -> str:
    """The record of page ``page_number``'s ``figure``-th picture (from 1), described in a request of its own."""
    return f"c{chunk_index}-p{page_number}-f{figure}"


def parse_record_id(value: str) -> tuple[int, int]:
    """Return (chunk_index, page_number), of a page's or a figure's record; ValueError for anything else."""
    chunk_index, page_number, _ = parse_any_record_id(value)
    return chunk_index, page_number


def parse_any_record_id(value: str) -> tuple[int, int, int | None]:
    """Return (chunk_index, page_number, figure or None for a page's record); ValueError for anything else."""
    match = _RECORD_ID.match(value)
    if not match:
        raise ValueError(f"not a batchlane record id: {value!r}")
    return int(match.group(1)), int(match.group(2)), int(match.group(3)) if match.group(3) else None


# In the pool one Bedrock job carries pages of many jobs: each job has a tag inside the lane
# (``m<k>``) and its records go to Bedrock as ``m<k>c<chunk>p<page>``. Bedrock documents the
# recordId as an "alphanumeric string" (user guide, "Format and upload your batch inference data";
# its example: CALL0000001), so the id Bedrock sees has no separators: the letters m, c, p, r
# between the numbers keep it unambiguous. The tag is stripped on collect, so results keep the job's
# own ids (``c<chunk>-p<page>``, what a primed chunk looks up; never sent to Bedrock).
_POOLED = re.compile(r"^(m\d+)c(\d+)p(\d+)(?:f(\d+))?(?:r\d+)?$")
# What lanes prepared before the alphanumeric form sent (``m<k>-c<chunk>-p<page>[-r1]``): still read on collect.
_POOLED_HYPHENATED = re.compile(r"^(m\d+)-(c\d+-p\d+)(?:-r\d+)?$")
RETRY_SUFFIX = "r1"  # a record resent in a retry batch: a new id Bedrock has not seen, mapped back on collect
BEDROCK_RECORD_ID = re.compile(r"^[A-Za-z0-9]+$")  # the documented format


def member_tag(index: int) -> str:
    return f"m{index}"


def pooled_record_id(tag: str, job_record_id: str) -> str:
    """The id Bedrock sees for the job's record ``c<chunk>-p<page>[-f<k>]`` of member ``tag``: alphanumeric."""
    chunk_index, page_number, figure = parse_any_record_id(job_record_id)
    return f"{tag}c{chunk_index}p{page_number}" + (f"f{figure}" if figure is not None else "")


def split_pooled_record_id(value: str) -> tuple[str, str]:
    """Return (member tag, the job's own record id); a retry suffix (``r1``) is dropped, a hyphenated id
    of an older lane is read alike, and a record id without a tag (a lane from before the pool, one job
    per Bedrock job) belongs to ``m0``. ValueError for anything else."""
    match = _POOLED.match(value)
    if match:
        page = record_id(int(match.group(2)), int(match.group(3)))
        return match.group(1), page if match.group(4) is None else f"{page}-f{int(match.group(4))}"
    match = _POOLED_HYPHENATED.match(value)
    if match:
        return match.group(1), match.group(2)
    parse_record_id(value)
    return member_tag(0), value
