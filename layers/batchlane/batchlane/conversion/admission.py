"""Chunk work admitted per owner: an owner's running chunks are capped at a fair share of the chunk
processor's concurrency, as the on-demand limiter shares Bedrock's quota (issue 21).

Every chunk invocation takes a slot before any work and frees it after; refused, it raises
:class:`ChunkNotAdmitted` at once (a waiting Lambda would hold the very concurrency being shared) and
the state machine retries it later with jitter (conversion.asl.json). The share is
``capacity // owners``, owners being those holding slots or refused within :data:`WAITER_TTL_S`, so
one owner's 20 jobs x 8 chunks cannot keep a second owner's chunk out. A lane's Resume starts its
members' conversions, whose chunks all pass here: they are released at the owners' pace, not at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from batchlane.db import jobs as job_repo
from batchlane.db.connection import Database
from batchlane.domain.errors import NotFound
from batchlane.observability import logger
from batchlane.runtime import Services

# A refused owner counts toward the share this long (longer than the state machine's retry ceiling).
WAITER_TTL_S = 300


class ChunkNotAdmitted(Exception):
    """The chunk's owner is at its fair share of the chunk processor's concurrency (or all of it is taken)."""


@dataclass(frozen=True)
class Decision:
    admitted: bool
    share: int  # this owner's share of ``capacity`` now
    held: int  # the owner's running chunks before this one
    total: int  # all running chunks before this one


def fair_share(capacity: int, owners: int) -> int:
    """Each owner's cap: an equal part of ``capacity``, at least one chunk."""
    return max(1, capacity // max(1, owners))


def admit(db: Database, *, job_id: str, chunk_index: int, owner_id: str, capacity: int, ttl_s: float) -> Decision:
    """Take a slot for the chunk (or refresh the one it holds: a continuation) within the owner's share.
    One transaction under one advisory lock: slots are counted and taken atomically."""
    with db.transaction() as tx:
        tx.run("SELECT pg_advisory_xact_lock(hashtext('batchlane.chunk_admission'))")
        tx.run("DELETE FROM chunk_admissions WHERE expires_at < now()")
        tx.run("DELETE FROM chunk_admission_waiters WHERE expires_at < now()")
        mine = tx.one(
            "UPDATE chunk_admissions SET expires_at = now() + make_interval(secs => :ttl)"
            " WHERE job_id = CAST(:job AS uuid) AND chunk_index = :chunk RETURNING owner_id",
            ttl=ttl_s,
            job=job_id,
            chunk=chunk_index,
        )
        counts = tx.one(
            "SELECT count(*) AS total, count(*) FILTER (WHERE owner_id = :owner) AS held,"
            " (SELECT count(*) FROM (SELECT owner_id FROM chunk_admissions UNION SELECT owner_id FROM chunk_admission_waiters"
            "  UNION SELECT CAST(:owner AS text)) AS o) AS owners FROM chunk_admissions",
            owner=owner_id,
        )
        assert counts is not None
        share = fair_share(capacity, int(counts["owners"]))
        held, total = int(counts["held"]), int(counts["total"])
        if mine is not None:
            return Decision(True, share, held - 1, total - 1)
        if held < share and total < capacity:
            tx.run(
                "INSERT INTO chunk_admissions (job_id, chunk_index, owner_id, expires_at)"
                " VALUES (CAST(:job AS uuid), :chunk, :owner, now() + make_interval(secs => :ttl))",
                job=job_id,
                chunk=chunk_index,
                owner=owner_id,
                ttl=ttl_s,
            )
            tx.run("DELETE FROM chunk_admission_waiters WHERE owner_id = :owner", owner=owner_id)
            return Decision(True, share, held, total)
        tx.run(
            "INSERT INTO chunk_admission_waiters (owner_id, expires_at) VALUES (:owner, now() + make_interval(secs => :ttl))"
            " ON CONFLICT (owner_id) DO UPDATE SET expires_at = EXCLUDED.expires_at",
            owner=owner_id,
            ttl=WAITER_TTL_S,
        )
        return Decision(False, share, held, total)


def release(db: Database, *, job_id: str, chunk_index: int) -> None:
    db.run("DELETE FROM chunk_admissions WHERE job_id = CAST(:job AS uuid) AND chunk_index = :chunk", job=job_id, chunk=chunk_index)


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
