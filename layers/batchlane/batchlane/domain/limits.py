"""Size limits a page request must respect, defined once (sources in docs/architecture.md, "Pages too large for one request").

* ``MAX_PAGE_BYTES``: one page's PDF, RAW bytes (before base64). Amazon Bedrock, "API restrictions":
  up to 5 documents a request, each no more than 4.5 MB. AWS lifts that cap for PDFs sent to Claude 4
  and later, but it still holds for older models and in Converse, and a page never needs more: Claude
  sees each PDF page as an image of about 1,568 px on its long edge (Anthropic, "PDF support" / "Vision").
* ``MAX_REQUEST_BYTES``: the whole request as sent, ENCODED: the InvokeModel body is JSON with each
  PDF base64-encoded inside (4/3 of its raw size), and the limits are on that payload. Amazon Bedrock,
  "Anthropic Claude Messages API: Request and Response": at most 20 MB a request (Anthropic's own API:
  32 MB, "PDF support"); the smaller one is used. A batch record's modelInput is the same body.
"""

from __future__ import annotations

MAX_PAGE_BYTES = 4_500_000
MAX_REQUEST_BYTES = 20_000_000
# What a request carries besides its documents (system prompt, instruction, JSON keys), rounded up.
REQUEST_OVERHEAD_BYTES = 64_000


# Bedrock's batch quotas ("Batch inference input file size (in GB)", "... job size (in GB)": 1 GB and 5 GB for
# most models) are decimal, like every AWS size quota: a GB is 10**9 bytes, so the lane's *_MB settings count
# 10**6 bytes. Read as GiB, the 5 GB cap let a lane of up to 5.37 GB through, which Bedrock's validation fails.
MB = 1_000_000


def quota_bytes(mb: int) -> int:
    """A lane size setting in MB (BATCH_CONVERSION_MAX_FILE_MB, _MAX_JOB_MB) in bytes, as Bedrock's quotas count them."""
    return mb * MB


def encoded_size(raw_bytes: int) -> int:
    """Bytes that ``raw_bytes`` take once base64-encoded (with padding), as they travel in the JSON body."""
    return 4 * ((raw_bytes + 2) // 3)


PAGE_TOO_LARGE = "PAGE_TOO_LARGE"  # the failed-page reason when a page cannot be brought under MAX_PAGE_BYTES

# A page whose content streams inflate past this is never sent nor parsed further (blank check, text layer,
# render): it fails PAGE_TOO_COMPLEX, the other pages convert. The densest real pages (vector maps, CAD
# plates) are a few MB; 30 MB of drawing operators in a 59 KB file made pdfium hold ~540 MB (issue 21).
MAX_PAGE_CONTENT_BYTES = 16 * 1024 * 1024
PAGE_TOO_COMPLEX = "PAGE_TOO_COMPLEX"

# --- collect's spool (/tmp) ---------------------------------------------------------------------
# collect spools every accepted answer of a lane to /tmp before writing results/chunk-N.json
# (batch/collect.py). An answer is at most max_tokens output tokens (an answer cut at max_tokens is
# rejected, never spooled). Its JSON line escapes every non-ASCII character to 6 bytes (\uXXXX) and
# a token of non-Latin text is about one character, English about 4 (Anthropic, "Token counting"):
# 6 bytes a token bounds both. The record's other fields (ids, hash, counts) stay under 1 KB.
SPOOL_BYTES_PER_ANSWER_TOKEN = 6
SPOOL_RECORD_OVERHEAD_BYTES = 1024
SPOOL_HEADROOM_MB = 512  # the runtime's own /tmp use, and the result file being assembled
LAMBDA_EPHEMERAL_MB = (512, 10_240)  # Lambda's /tmp: 512 MB by default, up to 10,240 MB (Lambda "Quotas")


def collect_spool_bytes(max_records: int, max_tokens: int) -> int:
    """The most /tmp collect's spool can take: every record of the largest lane accepted at the answer cap."""
    return max_records * (max_tokens * SPOOL_BYTES_PER_ANSWER_TOKEN + SPOOL_RECORD_OVERHEAD_BYTES)


def collect_ephemeral_mb(max_records: int, max_tokens: int) -> int:
    """batch_collect's ephemeral storage in MB: the largest spool plus headroom, at least Lambda's default.
    Raises ValueError past Lambda's 10,240 MB: a lane that large could not be collected (lower maxRecords)."""
    spool_mb = -(-collect_spool_bytes(max_records, max_tokens) // (1024 * 1024))
    low, high = LAMBDA_EPHEMERAL_MB
    needed = max(low, spool_mb + SPOOL_HEADROOM_MB)
    if needed > high:
        raise ValueError(f"collect would spool up to {spool_mb} MB for {max_records} records of {max_tokens} tokens; Lambda allows {high} MB of /tmp")
    return needed


# --- a lane's input bytes, estimated at packing --------------------------------------------------
# Bedrock's "Batch inference job size" quota is the sum of a job's input files (5 GB for most
# models), with each page base64-encoded (4/3). The packer knows each chunk's source PDF size; a page
# split out of it repeats what the chunk shares (fonts: ~22 KiB a page with an embedded font,
# FACTS/benchmarks), and each record adds the request around the document (~0.7 KB measured).
SPLIT_PAGE_OVERHEAD_BYTES = 32 * 1024  # raw, per page: resources a single-page PDF repeats
RECORD_JSON_OVERHEAD_BYTES = 4 * 1024  # per record: recordId, system prompt, instruction, JSON keys


def estimated_record_bytes(chunk_source_bytes: int | None, pages: int) -> int:
    """What a chunk's records will weigh in the lane's input files (0 when the chunk's size is unknown)."""
    if chunk_source_bytes is None:
        return 0
    return encoded_size(chunk_source_bytes + pages * SPLIT_PAGE_OVERHEAD_BYTES) + pages * RECORD_JSON_OVERHEAD_BYTES
