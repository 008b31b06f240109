"""Chunk work admitted per owner: an owner's running chunks are capped at a fair share of the chunk
processor's concurrency, as the on-demand limiter shares Bedrock's quota (issue 21).

Every chunk invocation takes a slot before any work and frees it after; refused, it raises
:class:`ChunkNotAdmitted` at once (a waiting Lambda would hold the very concurrency being shared) and
the state machine retries it later with jitter (conversion.asl.json). The share is
``capacity // owners``, owners being those holding slots or refused lately (db/admission.py's ``WAITER_TTL_S``), so
one owner's 20 jobs x 8 chunks cannot keep a second owner's chunk out. A lane's Resume starts its
members' conversions, whose chunks all pass here: they are released at the owners' pace, not at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from batchlane.domain.errors import NotFound
from batchlane.observability import logger
from batchlane.ports import Admission, ChunkAdmissions, Services


class ChunkNotAdmitted(Exception):
    """The chunk's owner is at its fair share of the chunk processor's concurrency (or all of it is taken)."""


@contextmanager
def chunk_slot(slots: ChunkAdmissions, *, job_id: str, chunk_index: int, owner_id: str, capacity: int, ttl_s: float) -> Iterator[Admission]:
    """The chunk's slot for the ``with`` body, freed after it whatever happens; ChunkNotAdmitted if refused."""
    decision = slots.admit(job_id=job_id, chunk_index=chunk_index, owner_id=owner_id, capacity=capacity, ttl_s=ttl_s)
    if not decision.admitted:
        logger.info("chunk not admitted", job_id=job_id, chunk=chunk_index, share=decision.share, held=decision.held, running=decision.total)
        raise ChunkNotAdmitted(f"the owner runs {decision.held} chunk(s), its share of {capacity} is {decision.share}: waiting for a slot")
    try:
        yield decision
    finally:
        slots.release(job_id=job_id, chunk_index=chunk_index)


@contextmanager
def admitted_chunk(svc: Services, job_id: str, chunk_index: int, *, ttl_s: float) -> Iterator[None]:
    """The chunk processor's gate: its owner's slot for the ``with`` body (no gate with capacity 0)."""
    capacity = int(svc.settings.batchlane_chunk_slots)
    if capacity <= 0:
        yield
        return
    job = svc.uow().jobs.get_job(job_id)
    if job is None:
        raise NotFound(f"no job {job_id}")
    with chunk_slot(svc.chunk_admissions(), job_id=job_id, chunk_index=chunk_index, owner_id=job.owner_id, capacity=capacity, ttl_s=ttl_s):
        yield
