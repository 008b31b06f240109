"""conversion_start: pending → processing, and the chunk indexes the Map iterates."""

from __future__ import annotations

from typing import Any

from batchlane.db import jobs as job_repo
from batchlane.domain.errors import NotFound
from batchlane.observability import logger
from batchlane.runtime import Services


def start_conversion(svc: Services, job_id: str) -> dict[str, Any]:
    """pending → processing; returns the chunk indexes the Map iterates (pointers, not payloads)."""
    job = job_repo.transition_job(svc.db, job_id, from_statuses=("pending", "processing"), to_status="processing")
    if job is None:
        current = job_repo.get_job(svc.db, job_id)
        if current is None:
            raise NotFound(f"no job {job_id}")
        logger.info("conversion not started", job_id=job_id, status=current["status"])
        return {"jobId": job_id, "chunks": [], "proceed": False, "status": current["status"]}
    job_repo.set_chunks_status(svc.db, job_id, from_statuses=("pending", "waiting_batch"), to_status="pending")
    chunks = [row["chunk_index"] for row in job_repo.get_chunks(svc.db, job_id) if row["status"] != "completed"]
    return {"jobId": job_id, "chunks": chunks, "proceed": True, "status": "processing"}
