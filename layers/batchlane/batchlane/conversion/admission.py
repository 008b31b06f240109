"""Chunk work admitted per owner: an owner's running chunks are capped at a fair share of the chunk
processor's concurrency, as the on-demand limiter shares Bedrock's quota (issue 21).

Every chunk invocation takes a slot before any work and frees it after; refused, it raises
:class:`ChunkNotAdmitted` at once (a waiting Lambda would hold the very concurrency being shared) and
the state machine retries it later with jitter (conversion.asl.json). The share is
``capacity // owners``, owners being those holding slots or refused within ``batchlane.db.admission.WAITER_TTL_S``, so
one owner's 20 jobs x 8 chunks cannot keep a second owner's chunk out. A lane's Resume starts its
members' conversions, whose chunks all pass here: they are released at the owners' pace, not at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from batchlane.db import jobs as job_repo
from batchlane.db.admission import Decision, admit, release
from batchlane.db.connection import Database
from batchlane.domain.errors import NotFound
from batchlane.observability import logger
from batchlane.runtime import Services


class ChunkNotAdmitted(Exception):
    """The chunk's owner is at its fair share of the chunk processor's concurrency (or all of it is taken)."""


@contextmanager
def chunk_slot(db: Database, *, job_id: str, chunk_index: int, owner_id: str, capacity: int, ttl_s: float) -> Iterator[Decision]:
    """The chunk's slot for the ``with`` body, freed after it whatever happens; ChunkNotAdmitted if refused."""
    decision = admit(db, job_id=job_id, chunk_index=chunk_index, owner_id=owner_id, capacity=capacity, ttl_s=ttl_s)
    if not decision.admitted:
        logger.info("chunk not admitted", job_id=job_id, chunk=chunk_index, share=decision.share, held=decision.held, running=decision.total)
        raise ChunkNotAdmitted(f"the owner runs {decision.held} chunk(s), its share of {capacity} is {decision.share}: waiting for a slot")
    try:
        yield decision
    finally:
        release(db, job_id=job_id, chunk_index=chunk_index)


@contextmanager
def admitted_chunk(svc: Services, job_id: str, chunk_index: int, *, ttl_s: float) -> Iterator[None]:
    """The chunk processor's gate: its owner's slot for the ``with`` body (no gate with capacity 0)."""
    capacity = int(svc.settings.batchlane_chunk_slots)
    if capacity <= 0:
        yield
        return
    job = job_repo.get_job(svc.db, job_id)
    if job is None:
        raise NotFound(f"no job {job_id}")
    with chunk_slot(svc.db, job_id=job_id, chunk_index=chunk_index, owner_id=job.owner_id, capacity=capacity, ttl_s=ttl_s):
        yield
