"""Use cases that bring results back to the owner: download, failed pages, retry (a dry run: api/estimates.py).

Owner checks as everywhere in the API: another user's job or file answers 404 like a
missing one. Single files only; a folder job (issue 12) writes its outputs to the
user's own bucket, so its download is that bucket's, and its failed pages are listed
per file of the job: :func:`owned_job` is where a folder job's id will resolve.
"""

from __future__ import annotations

import posixpath
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from batchlane.api.usecases import owned_job
from batchlane.domain.errors import BatchlaneError, Conflict, NotFound
from batchlane.domain.file_types import by_extension
from batchlane.filejob import retry as retries
from batchlane.filejob.budget import worst_case_pages_hold
from batchlane.filejob.figures import figure_folder
from batchlane.keys import OBJECT_EXPIRY_DAYS, images_prefix, outputs_key, pages_key
from batchlane.ports import DOWNLOAD_URL_TTL_S, Downloads, Services


class ObjectExpired(BatchlaneError):
    """The object existed and the bucket's lifecycle deleted it (HTTP 410)."""

    error_id = "MARKDOWN_EXPIRED"


def _markdown_name(pdf_name: str) -> str:
    stem = posixpath.splitext(pdf_name)[0] if by_extension(pdf_name) is not None else pdf_name  # book.pdf, book.docx → book.md
    safe = "".join(ch if ch.isalnum() or ch in "-_. " else "_" for ch in stem).strip() or "document"
    return f"{safe}.md"


def markdown_download(svc: Services, downloads: Downloads, owner_id: str, job_id: str) -> dict[str, Any]:
    """A presigned GET for the job's Markdown, with when the URL and the object expire."""
    job, file = owned_job(svc, owner_id, job_id)
    row = svc.uow().jobs.get_job(job.job_id)
    key = row.markdown_key if row is not None else None
    if not key:
        raise Conflict(f"The job is {job.status}; its Markdown exists once it has completed.", error_id="MARKDOWN_NOT_READY")
    try:
        stored = downloads.head(key)
    except NotFound:
        raise ObjectExpired(
            f"The Markdown of job {job_id} is no longer stored: the working bucket keeps results {OBJECT_EXPIRY_DAYS} days. Convert the file again."
        ) from None
    name = _markdown_name(file.name)
    now = datetime.now(UTC)
    return {
        "jobId": job.job_id,
        "status": job.status,
        "fileName": name,
        "url": downloads.presigned_get(key, filename=name),
        "method": "GET",
        "expiresInSeconds": DOWNLOAD_URL_TTL_S,
        "urlExpiresAt": (now + timedelta(seconds=DOWNLOAD_URL_TTL_S)).isoformat(),
        "objectExpiresAt": stored.expires_at.isoformat(),
        "retentionDays": OBJECT_EXPIRY_DAYS,
        "sizeBytes": stored.size_bytes,
        "pagesFailed": job.pages_failed,
        "pages": _pages_download(downloads, job.job_id, name),
        "images": _image_downloads(svc, downloads, job.job_id, file.name),
        "renderings": _rendering_downloads(svc, downloads, job.job_id, name),
    }


def rendering_name(markdown_name: str, fmt: str) -> str:
    """``book.md`` → ``book.converted.docx`` / ``.converted.html`` / ``.blocks.jsonl``: never the name of a source
    (a ``book.docx`` converted keeps its own name), and what a folder job never takes as an input (folders/layout.py)."""
    stem = markdown_name[:-3] if markdown_name.endswith(".md") else markdown_name
    return f"{stem}.blocks.jsonl" if fmt == "json" else f"{stem}.converted.{fmt}"


def _rendering_downloads(svc: Services, downloads: Downloads, job_id: str, markdown_name: str) -> list[dict[str, Any]]:
    """Each rendering the job asked for (conversionFormats): its URL, or the error id that kept it from being written."""
    try:
        record = svc.store.get_json(outputs_key(job_id))
    except NotFound:
        return []
    out: list[dict[str, Any]] = []
    for fmt, state in sorted(record.items()):
        if state.get("status") == "written":
            name = rendering_name(markdown_name, fmt)
            out.append(
                {
                    "format": fmt,
                    "status": "written",
                    "fileName": name,
                    "url": downloads.presigned_get(state["key"], filename=name),
                    "sizeBytes": state.get("sizeBytes"),
                }
            )
        else:
            out.append({"format": fmt, "status": "failed", "error": state.get("error") or {"code": "RENDER_FAILED", "message": "not produced"}})
    return out


def _image_downloads(svc: Services, downloads: Downloads, job_id: str, file_name: str) -> list[dict[str, Any]]:
    """Each figure file the Markdown links, named as the link says (``book.images/p12-1.png``), with its URL."""
    folder = figure_folder(file_name)
    prefix = images_prefix(job_id)
    out = []
    for key in svc.store.list_keys(prefix):
        name = f"{folder}/{key[len(prefix) :]}"
        out.append({"fileName": name, "url": downloads.presigned_get(key, filename=name.rsplit("/", 1)[-1])})
    return out


def _pages_download(downloads: Downloads, job_id: str, markdown_name: str) -> dict[str, Any] | None:
    """The per-page record beside the Markdown (a line per page); None for a job assembled before it existed."""
    try:
        stored = downloads.head(pages_key(job_id))
    except NotFound:
        return None
    name = f"{markdown_name[:-3]}.pages.jsonl"
    return {"fileName": name, "url": downloads.presigned_get(pages_key(job_id), filename=name), "sizeBytes": stored.size_bytes}


def job_pages(svc: Services, owner_id: str, job_id: str, *, status: str) -> dict[str, Any]:
    job, _ = owned_job(svc, owner_id, job_id)
    failed = retries.failed_pages(svc, job.job_id) if status == "failed" else []
    pages = [p.to_json() for p in failed]
    answer = {"jobId": job.job_id, "status": job.status, "filter": {"status": status}, "pages": pages, "count": len(pages)}
    if failed:  # what `batchlane retry` tells before it charges anything
        at_most = worst_case_pages_hold(svc, model_id=job.model_id, pages=len(failed))  # the retry runs on the job's model
        answer["retryEstimate"] = {
            "pages": len(failed),
            "atMostUsd": str(at_most.quantize(Decimal("0.0001"))),
            "unlikelyToChange": [p.page for p in failed if not retries.retry_cures(p.reason)],
        }
    return answer


def retry_job(svc: Services, owner_id: str, job_id: str, *, error_ids: list[str] | None, pages: list[int] | None) -> dict[str, Any]:
    job, _ = owned_job(svc, owner_id, job_id)
    return retries.start_retry(svc, job.job_id, error_ids=error_ids, pages=pages).to_json()


def job_retries(svc: Services, owner_id: str, job_id: str) -> dict[str, Any]:
    job, _ = owned_job(svc, owner_id, job_id)
    return {"jobId": job.job_id, "retries": retries.retry_history(svc, job.job_id)}
