"""batchlane.ports.ChunkAdmissions in memory: the contract of db/admission.py's Pg adapter (tests/contract)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from batchlane.db.admission import WAITER_TTL_S, fair_share
from batchlane.ports import Admission


class FakeChunkAdmissions:
    """The slots (job, chunk) → (owner, expires at) and the owners refused lately, under one lock as the SQL's advisory lock."""

    def __init__(self, now: Callable[[], datetime] | None = None) -> None:
        self._now = now or (lambda: datetime(2026, 1, 5, 12, 0, tzinfo=UTC))
        self._lock = threading.Lock()
        self.slots: dict[tuple[str, int], tuple[str, datetime]] = {}
        self.waiters: dict[str, datetime] = {}

    def admit(self, *, job_id: str, chunk_index: int, owner_id: str, capacity: int, ttl_s: float) -> Admission:
        with self._lock:
            now = self._now()
            self.slots = {key: slot for key, slot in self.slots.items() if not slot[1] < now}
            self.waiters = {owner: until for owner, until in self.waiters.items() if not until < now}
            expires = now + timedelta(seconds=ttl_s)
            key = (job_id, chunk_index)
            mine = self.slots.get(key)
            if mine is not None:
                self.slots[key] = (mine[0], expires)
            held = sum(1 for owner, _ in self.slots.values() if owner == owner_id)
            total = len(self.slots)
            share = fair_share(capacity, len({owner for owner, _ in self.slots.values()} | set(self.waiters) | {owner_id}))
            if mine is not None:
                return Admission(True, share, held - 1, total - 1)
            if held < share and total < capacity:
                self.slots[key] = (owner_id, expires)
                self.waiters.pop(owner_id, None)
                return Admission(True, share, held, total)
            self.waiters[owner_id] = now + timedelta(seconds=WAITER_TTL_S)
            return Admission(False, share, held, total)

    def release(self, *, job_id: str, chunk_index: int) -> None:
        with self._lock:
            self.slots.pop((job_id, chunk_index), None)
