"""What a chunk's page threads share: admission of running chunks (db/admission.py), the global on-demand limit
and the process's one serial connection (db/limiter.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from batchlane.ports.jobs import JobRepository
from batchlane.ports.money import BudgetRepository
from batchlane.ports.uow import UnitOfWork

T = TypeVar("T")


@dataclass(frozen=True)
class Admission:
    """A chunk's admission decision, and what it was made on."""

    admitted: bool
    share: int  # this owner's share of ``capacity`` now
    held: int  # the owner's running chunks before this one
    total: int  # all running chunks before this one


class ChunkAdmissions(Protocol):
    """Slots for running chunks, one per chunk invocation, shared fairly by owner (filejob/admission.py says why).
    Each call is its own transaction: slots are counted and taken atomically, across processes."""

    def admit(self, *, job_id: str, chunk_index: int, owner_id: str, capacity: int, ttl_s: float) -> Admission:
        """Take a slot for the chunk for ``ttl_s`` (or refresh the one it holds: a continuation, always admitted) if the
        owner holds fewer than its share (``capacity // owners``, at least 1; owners are those holding a slot or refused
        lately, and this one) and fewer than ``capacity`` run; refused, the owner counts as waiting for a while."""
        ...

    def release(self, *, job_id: str, chunk_index: int) -> None: ...  # the chunk's slot freed (none held: nothing)


class LeaseWaitTimeout(Exception):
    """No slot came free within ``lease_wait_s``: the caller retries the page later."""


class Aborted(Exception):
    """The chunk was cancelled or taken over while this request waited."""


class Lease(Protocol):
    def renew(self) -> None: ...


class Limiter(Protocol):
    """The global on-demand limit (db/limiter.py; none: domain/pace.NoLimit): leases on numbered slots, shared by owner, and request pacing."""

    def slot(self, pool: str, *, aborted: Callable[[], bool]) -> Any: ...  # a context manager yielding a Lease
    def pace(self, pool: str, *, aborted: Callable[[], bool] = ...) -> float: ...  # seconds to wait before starting the request (taken before the slot)
    def free_now(self, pool: str) -> int | None: ...  # requests that could start at once (None: unknown)


class PageThreadDatabase(Protocol):
    """The on-demand path's own connection, one per process on one thread, so page threads never open their own:
    the limiter's leases and the reads and writes a page thread makes between model calls. Each call is its own
    statement (no ``with``), from any thread; ``in_one_transaction`` runs several in one transaction there (the others
    wait for it)."""

    def limiter(self, *, owner: str | None) -> Limiter: ...  # slots and pace shared fairly by ``owner``
    @property
    def budgets(self) -> BudgetRepository: ...  # the job's hold: reserve and settle a request's worst case
    @property
    def jobs(self) -> JobRepository: ...  # whether the chunk is still the worker's
    def in_one_transaction(self, work: Callable[[UnitOfWork], T]) -> T: ...  # ``work`` in one transaction on that connection (a hold grown for a request)
