"""A dry run's asynchronous estimate (db/estimates.py; decision 0035): the API records it, the worker answers it."""

from __future__ import annotations

from typing import Any, Protocol

from batchlane.domain.status import Transition
from batchlane.rows.estimates import Estimate


class EstimateRepository(Protocol):
    """estimates (db/estimates.py): the API inserts a running row, the worker reports progress and answers it once."""

    def add(self, *, estimate_id: str, owner_id: str, kind: str, request: dict[str, Any]) -> Estimate: ...
    def get(self, estimate_id: str) -> Estimate | None: ...
    def running(self, owner_id: str, *, younger_than_s: float) -> int:
        """The owner's running estimates created within the last ``younger_than_s`` seconds (older ones are lost)."""
        ...

    def report(self, estimate_id: str, progress: dict[str, Any]) -> bool:
        """The worker's progress on a running estimate; False once it is answered."""
        ...

    def finish(
        self, estimate_id: str, move: Transition, *, result: dict[str, Any] | None = None, error_id: str | None = None, error_message: str | None = None
    ) -> bool:
        """running → completed or failed (``move``, an ESTIMATE transition: another entity's raises ValueError), stamped
        finished; False when it was already answered."""
        ...

    def purge(self, owner_id: str, *, older_than_s: float) -> int:
        """Delete the owner's estimates created more than ``older_than_s`` seconds ago; how many."""
        ...
