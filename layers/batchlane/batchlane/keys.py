"""The bucket's prefix layout, in one place (docs/architecture.md repeats it).

uploads/<fileId>/<name>.pdf            source PDFs
jobs/<jobId>/source/chunk-<N>.pdf       the chunk's pages, split once at job creation
jobs/<jobId>/source/chunk-<N>.json      a born-digital document's chunk: its pages' Markdown, converted at the split
jobs/<jobId>/source/figures/p<N>-<k>.png  a born-digital picture as it is sent to be described (describeFigures)
jobs/<jobId>/chunks/chunk-<N>.json      chunk results (page outcomes)
jobs/<jobId>/chunks/chunk-<N>.partial.json  pages kept from an attempt that must be retried
jobs/<jobId>/output.md                  the assembled Markdown
jobs/<jobId>/pages.jsonl                a line per page: status, lane, tokens, the page's own Markdown
jobs/<jobId>/images/p<N>-<k>.png        the figures of page N, linked from the Markdown as <name>.images/p<N>-<k>.png
jobs/<jobId>/output.docx, output.html, blocks.jsonl, outputs.json   renderings asked for (conversionFormats) and their fate
jobs/<jobId>/chunks/chunk-<N>.retry-<n>.json  chunk results written by retry n (the earlier file is kept)
jobs/<jobId>/history/output-before-retry-<n>.md  the Markdown as it was before retry n
batch/<laneId>/input/<tag>-chunk-<NNNNN>-<n>.jsonl  a lane's records (shard n of member <tag>'s chunk)
batch/<laneId>/prepare/<tag>-chunk-<N>.json  what prepare wrote for one member chunk
batch/<laneId>/manifest.json            the lane's members, shards, counts, record ids, hashes
batch/<laneId>/output/<bedrockJobId>/... what Bedrock wrote (.jsonl.out, manifest.json.out)
batch/<jobId>/results/chunk-<N>.json    accepted batch answers for a job's chunk, read by primed chunks

A lane is one Bedrock job of the pool (docs/architecture.md "The batch pool"); a lane from
before the pool has its job's id as lane id, so both layouts are one.

The Bedrock service role may touch ``batch/`` only.
"""

from __future__ import annotations

BATCH_PREFIX = "batch/"
# The bucket's lifecycle deletes every object this many days after it was written (infra/storage.py).
OBJECT_EXPIRY_DAYS = 14


def upload_key(file_id: str, name: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:120] or "document.pdf"
    return f"uploads/{file_id}/{safe}"


def chunk_source_key(job_id: str, chunk_index: int) -> str:
    return f"jobs/{job_id}/source/chunk-{chunk_index}.pdf"


def document_chunk_key(job_id: str, chunk_index: int) -> str:
    """A born-digital document's chunk: its pages' Markdown as converted at the split (docs/formats.md)."""
    return f"jobs/{job_id}/source/chunk-{chunk_index}.json"


def figure_source_key(job_id: str, sent_name: str) -> str:
    """A born-digital document's picture as Claude is sent it to describe (``describeFigures``; docs/formats.md)."""
    return f"jobs/{job_id}/source/figures/{sent_name}"


def pages_source_key(job_id: str) -> str:
    """A picture's pages as the split made them (a PDF of a page per frame): what the console's page view shows."""
    return f"jobs/{job_id}/source/pages.pdf"


def chunk_result_key(job_id: str, chunk_index: int, *, retry: int | None = None) -> str:
    """A retry writes its own file, so the previous result survives a cancelled or failed retry."""
    suffix = f".retry-{retry}" if retry else ""
    return f"jobs/{job_id}/chunks/chunk-{chunk_index}{suffix}.json"


def chunk_partial_key(job_id: str, chunk_index: int) -> str:
    return f"jobs/{job_id}/chunks/chunk-{chunk_index}.partial.json"


def markdown_key(job_id: str) -> str:
    return f"jobs/{job_id}/output.md"


def pages_key(job_id: str) -> str:
    """The per-page record beside the Markdown (docs/architecture.md "Assembly")."""
    return f"jobs/{job_id}/pages.jsonl"


RENDERING_NAMES = {"docx": "output.docx", "html": "output.html", "json": "blocks.jsonl"}


def rendering_key(job_id: str, fmt: str) -> str:
    """A rendering of the assembled document (``conversionFormats``: docx, html, json; docs/formats.md)."""
    return f"jobs/{job_id}/{RENDERING_NAMES[fmt]}"


def outputs_key(job_id: str) -> str:
    """What became of each rendering asked for: written, or failed with an error id."""
    return f"jobs/{job_id}/outputs.json"


def images_prefix(job_id: str) -> str:
    return f"jobs/{job_id}/images/"


def markdown_before_retry_key(job_id: str, retry: int) -> str:
    return f"jobs/{job_id}/history/output-before-retry-{retry}.md"


def batch_input_prefix(lane_id: str) -> str:
    return f"{BATCH_PREFIX}{lane_id}/input/"


def batch_manifest_key(lane_id: str) -> str:
    return f"{BATCH_PREFIX}{lane_id}/manifest.json"


def batch_output_prefix(lane_id: str) -> str:
    return f"{BATCH_PREFIX}{lane_id}/output/"


def batch_results_key(job_id: str, chunk_index: int) -> str:
    return f"{BATCH_PREFIX}{job_id}/results/chunk-{chunk_index}.json"
