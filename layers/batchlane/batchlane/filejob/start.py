"""conversion_start: pending → processing, and the chunk indexes the Map iterates."""

from __future__ import annotations

from typing import Any

from batchlane.domain import status as st
from batchlane.domain.errors import NotFound
from batchlane.domain.status import ChunkStatus, Entity
from batchlane.observability import logger
from batchlane.ports import UnitOfWork


def start_conversion(uow: UnitOfWork, job_id: str) -> dict[str, Any]:
    """pending → processing with its chunks, in one transaction; returns the chunk indexes the Map
    iterates (pointers, not payloads). A job in no source of ``start`` (completed, cancelled) stays as it is."""
    with uow:
        job = uow.jobs.move_job(job_id, st.start())
        if job is None:
            current = uow.jobs.get_job(job_id)
            if current is None:
                raise NotFound(f"no job {job_id}")
            logger.info("conversion not started", job_id=job_id, status=current.status)
            return {"jobId": job_id, "chunks": [], "proceed": False, "status": current.status}
        uow.jobs.move_chunks(job_id, st.start(Entity.CHUNK))
        chunks = [row.chunk_index for row in uow.jobs.get_chunks(job_id) if row.status != ChunkStatus.COMPLETED]
    return {"jobId": job_id, "chunks": chunks, "proceed": True, "status": "processing"}
