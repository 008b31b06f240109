"""What the console shows beside a job: cost so far, saving against all on-demand, ETA, the source PDF.

Figures come from the ledger rows booked so far (never an estimate). What the job would have cost all on-demand
is domain/savings.py's one definition: its on-demand spend plus its batch-served pages as the on-demand engine
would bill them; the saving is that less the cost, negative (a loss) when the batch lane cost more than it served.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from batchlane import keys
from batchlane.api.usecases import owned_job
from batchlane.domain.file_types import DOCUMENTS
from batchlane.ports import DOWNLOAD_URL_TTL_S, Downloads, ReadModel, Services

_FINISHED = ("completed", "failed", "cancelled")


def money(reads: ReadModel, job_id: str) -> dict[str, Any]:
    """Cost booked so far, what the same pages cost all on-demand (domain/savings.py), and the difference (signed)."""
    figures = reads.ledger_money(job_id)
    return {
        "costSoFarUsd": str(figures.total_usd),
        "onDemandUsd": str(figures.all_on_demand_usd),
        "savingUsd": str(figures.saving_usd),
        "savingPercent": str(figures.saving_percent),
    }


def _when(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def eta(view: dict[str, Any], *, batch_timeout_hours: float, now: datetime | None = None) -> dict[str, Any]:
    """When the job (a conversion view) should end: the pace so far while converting; the Bedrock job's limit while it waits there."""
    now = now or datetime.now(UTC)
    if view["status"] in _FINISHED:
        return {"seconds": 0, "basis": "finished", "at": view["finishedAt"]}
    if view["status"] == "waiting_batch":
        submitted = _when((view.get("batch") or {}).get("submittedAt")) or now
        limit = submitted + timedelta(hours=batch_timeout_hours)
        return {"seconds": max(0, round((limit - now).total_seconds())), "basis": "batch_limit", "at": limit.isoformat()}
    total, done, started = view["pages"]["total"], view["pages"]["done"], _when(view["startedAt"])
    if not total or not done or started is None:
        return {"seconds": None, "basis": "unknown", "at": None}
    per_page = max((now - started).total_seconds(), 0.001) / done
    seconds = round(per_page * max(total - done, 0))
    return {"seconds": seconds, "basis": "pace", "at": (now + timedelta(seconds=seconds)).isoformat()}


def with_live(svc: Services, view: dict[str, Any]) -> dict[str, Any]:
    """A conversion view with its ``live`` block: cost so far, saving against all on-demand, ETA."""
    hours = svc.settings.batch_conversion_timeout_hours / svc.settings.batchlane_time_scale
    live = {
        **money(svc.uow().reads, view["jobId"]),
        "eta": eta(view, batch_timeout_hours=hours),
        "batchTimeoutHours": svc.settings.batch_conversion_timeout_hours,
    }
    return {**view, "live": live}


def files_with_live(svc: Services, listing: dict[str, Any]) -> dict[str, Any]:
    """GET /api/v1/files with each file's conversion carrying its live block."""
    files = [{**f, "conversion": with_live(svc, f["conversion"])} if f.get("conversion") else f for f in listing.get("files", [])]
    return {**listing, "files": files}


DOCUMENT_TYPE_NAMES = frozenset(t.name for t in DOCUMENTS)


def source_read(svc: Services, downloads: Downloads, owner_id: str, job_id: str) -> dict[str, Any]:
    """A presigned GET of the job's source PDF: the page view reads it with Range requests, a page at a time.
    ``kind`` (issue 43): ``pdf``; ``pages`` for a picture (the PDF of a page per frame the split made); ``document``
    for a born-digital file, which has no page image (``url`` None: the page view shows its Markdown alone). A folder
    file's own PDF lies in its own bucket (``source_bucket``): signed there, as its owner (the folder-access role), so
    the URL reads that one object within the owner's grants, never a key of the working bucket (issue 40.5)."""
    job, file_row = owned_job(svc, owner_id, job_id)
    row = svc.uow().jobs.get_job(job.job_id)
    source_type = row.source_type if row is not None else "pdf"
    kind = "document" if source_type in DOCUMENT_TYPE_NAMES else "pdf" if source_type == "pdf" else "pages"
    key = keys.pages_source_key(job.job_id) if kind == "pages" else file_row.s3_key
    if kind == "pdf" and file_row.source_bucket:
        downloads = svc.owner_downloads(file_row.source_bucket, owner_id)
    return {
        "jobId": job.job_id,
        "kind": kind,
        "fileType": source_type,
        "url": None if kind == "document" else downloads.presigned_get(key, filename="source.pdf"),
        "method": "GET",
        "ranged": kind != "document",
        "sizeBytes": file_row.size_bytes,
        "expiresInSeconds": DOWNLOAD_URL_TTL_S,
    }
