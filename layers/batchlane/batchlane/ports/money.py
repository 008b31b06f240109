"""What was spent (the ledger), what is held (funds holds) and the owners' budgets (db/ledger.py, db/budgets.py)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Protocol

from batchlane.domain.budget import Holder, Limits, Standing
from batchlane.rows.jobs import JobRow
from batchlane.rows.money import BudgetOverride, Hold, JobMoney, LedgerRow


class LedgerRepository(Protocol):
    """What was spent (ledger rows) and what is held (funds holds) per job (db/ledger.py)."""

    # the ledger

    def add_chunk_cost(
        self, *, job_id: str, chunk_index: int, model_id: str, input_tokens: int, output_tokens: int, cost_usd: Decimal, metadata: dict[str, Any]
    ) -> None: ...
    def add_batch_cost(
        self, *, job_id: str | None, lane_row_id: int, model_id: str, input_tokens: int, output_tokens: int, cost_usd: Decimal, metadata: dict[str, Any]
    ) -> bool:
        """The one lane per Bedrock job (``job_id`` None: the lane's); False when it exists already."""
        ...

    def add_batch_share(
        self, *, job_id: str, lane_row_id: int, model_id: str, input_tokens: int, output_tokens: int, cost_usd: Decimal, metadata: dict[str, Any]
    ) -> None:
        """A member's share of its lane's row (once per lane and job), spent from the job's hold."""
        ...

    def batch_cost_of_job(self, job_id: str) -> Decimal: ...  # its batch-backend rows: its shares (and a pre-pool lane)
    def job_total(self, job_id: str) -> Decimal: ...  # every row of the job
    def ledger_rows(self, job_id: str) -> list[LedgerRow]: ...  # the job's rows, in the order they were booked
    def carry_late_batch_cost(self, job_id: str) -> None:
        """A batch bill booked after the job left the lane still counts: a finished job's total and its settled hold
        follow the ledger, and (unless parked) the job's batch cost is its lanes."""
        ...

    # funds holds
    def place_hold(self, *, job_id: str, owner_id: str, amount_usd: Decimal, hours: float) -> None: ...  # a job's one hold (a second is ignored)
    def extend_hold(self, job_id: str, *, hours: float) -> None: ...  # an open hold expires ``hours`` from now
    def reopen_hold(self, job_id: str, *, extra_usd: Decimal, hours: float) -> None:
        """A retry of failed pages: the hold opens again for ``extra_usd`` more than it settled at."""
        ...

    def close_hold(self, job_id: str, *, outcome: str, settled_usd: Decimal | None = None) -> bool: ...  # False: not open
    def get_hold(self, job_id: str) -> Hold | None: ...


class BudgetRepository(Protocol):
    """Owners' limits and standing: monthly spend, live jobs and pages, reservations (db/budgets.py; the per-user caps' counts: CapCounts)."""

    def standing(self, owner_id: str, *, exclude_job: str | None = None) -> Standing:
        """This month's (UTC) spend on the owner's jobs (every ledger row of them: chunk, batch and batch_share),
        plus what their open holds may still spend, plus the live jobs and their pages (``exclude_job`` left out)."""
        ...

    def lock_owner(self, owner_id: str) -> None: ...  # inside ``with uow:``, serialises the owner's budget checks
    def get_override(self, owner_id: str) -> BudgetOverride | None: ...
    def set_override(
        self, owner_id: str, *, usd_per_month: Decimal | None, max_live_jobs: int | None, max_live_pages: int | None, updated_by: str
    ) -> BudgetOverride: ...  # inserted or replaced (None: the deployment's default)
    def limits_for(self, owner_id: str, settings: Any) -> Limits: ...  # the override where set, else the settings' defaults
    def job_money(self, job_id: str) -> JobMoney | None: ...
    def reserve(self, job_id: str, cost: Decimal) -> bool | None:
        """Take ``cost`` from the job's open hold if that much is left: True; False when not (nothing taken, the cost
        kept as ``wanted_usd``); None when the job has no open hold."""
        ...

    def settle_reservation(self, job_id: str, *, reserved: Decimal, actual: Decimal) -> None: ...  # what it cost replaces the reservation
    def pause_at_hold(self, job_id: str, *, next_request_usd: Decimal = Decimal(0), spent_usd: Decimal = Decimal(0), message: str | None = None) -> bool:
        """processing → paused_budget (domain.status's ``pause_budget``) when what the hold has left cannot carry the last
        request that did not fit (or ``next_request_usd``), beside what its requests took or ``spent_usd`` if more; never for
        a job with nothing to send; True if paused."""
        ...

    def grow_hold(self, job_id: str, *, by: Decimal) -> Hold | None: ...  # the caller checked the owner's room under lock_owner
    def release_hold(self, job_id: str, *, granted: Decimal, spent: Decimal) -> None: ...  # a chunk's window closes
    def trim_hold(self, job_id: str) -> None: ...  # back to what it has given out (nothing in flight)
    def holders(self, owner_id: str, *, exclude_job: str | None = None) -> list[Holder]: ...  # who keeps the rest of the budget

    def mark_pause_settled(self, job_id: str) -> bool: ...  # the paused run's last step ran (only while paused_budget)
    def resume_paused(self, job_id: str, *, hold_usd: Decimal) -> JobRow | None:
        """paused_budget → processing (``resume``), the hold raised to ``hold_usd``, the resume counted, processing chunks
        back to pending; None if not paused."""
        ...
