"""conversion_start: pending → processing, and the chunk indexes the Map iterates."""

from __future__ import annotations

from typing import Any

from batchlane.db import jobs as job_repo
from batchlane.domain import status as st
from batchlane.domain.errors import NotFound
from batchlane.domain.status import ChunkStatus, Entity
from batchlane.observability import logger
from batchlane.runtime import Services


def start_conversion(svc: Services, job_id: str) -> dict[str, Any]:
    """pending → processing; returns the chunk indexes the Map iterates (pointers, not payloads)."""
    job = job_repo.move_job(svc.db, job_id, st.start())
    if job is None:
        current = job_repo.get_job(svc.db, job_id)
        if current is None:
            raise NotFound(f"no job {job_id}")
        logger.info("conversion not started", job_id=job_id, status=current.status)
        return {"jobId": job_id, "chunks": [], "proceed": False, "status": current.status}
    job_repo.move_chunks(svc.db, job_id, st.start(Entity.CHUNK))
    chunks = [row.chunk_index for row in job_repo.get_chunks(svc.db, job_id) if row.status != ChunkStatus.COMPLETED]
    return {"jobId": job_id, "chunks": chunks, "proceed": True, "status": "processing"}
