"""Chunk admission slots in PostgreSQL (filejob/admission.py says why): one row per running chunk
invocation, one per owner refused lately. Counted and taken under one advisory lock."""

from __future__ import annotations

from batchlane.db.connection import Database
from batchlane.ports import Admission

# A refused owner counts toward the share this long (longer than the state machine's retry ceiling).
WAITER_TTL_S = 300


def fair_share(capacity: int, owners: int) -> int:
    """Each owner's cap: an equal part of ``capacity``, at least one chunk."""
    return max(1, capacity // max(1, owners))


class PgChunkAdmissions:
    """batchlane.ports.ChunkAdmissions on PostgreSQL: each call its own transaction on ``db``."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def admit(self, *, job_id: str, chunk_index: int, owner_id: str, capacity: int, ttl_s: float) -> Admission:
        """Take a slot for the chunk (or refresh the one it holds: a continuation) within the owner's share.
        One transaction under one advisory lock: slots are counted and taken atomically."""
        with self.db.transaction() as tx:
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
                return Admission(True, share, held - 1, total - 1)
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
                return Admission(True, share, held, total)
            tx.run(
                "INSERT INTO chunk_admission_waiters (owner_id, expires_at) VALUES (:owner, now() + make_interval(secs => :ttl))"
                " ON CONFLICT (owner_id) DO UPDATE SET expires_at = EXCLUDED.expires_at",
                owner=owner_id,
                ttl=WAITER_TTL_S,
            )
            return Admission(False, share, held, total)

    def release(self, *, job_id: str, chunk_index: int) -> None:
        self.db.run("DELETE FROM chunk_admissions WHERE job_id = CAST(:job AS uuid) AND chunk_index = :chunk", job=job_id, chunk=chunk_index)
