"""batchlane.ports.BudgetRepository in memory: the contract of db/budgets.py's Pg adapter (tests/contract)."""

from __future__ import annotations

from datetime import UTC
from decimal import Decimal
from typing import Any

from batchlane.domain import status as st
from batchlane.domain.budget import Standing
from batchlane.ports import JobRow
from batchlane_dev.fakes.jobs import FakeJobs
from batchlane_dev.fakes.ledger import money


class FakeBudgets:
    def __init__(self, state: Any) -> None:  # a batchlane_dev.fakes.FakeState
        self.state = state

    def _jobs_of(self, owner_id: str) -> list[JobRow]:
        return FakeJobs(self.state).jobs_of_owner(owner_id)

    def standing(self, owner_id: str, *, exclude_job: str | None = None) -> Standing:
        mine = self._jobs_of(owner_id)
        ids = {job.id for job in mine}
        month_start = self.state.clock.now().astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        # Every ledger row of the owner's jobs counts (chunk, batch and batch_share): a lane's own row has no job.
        month_usd = sum((r.cost_usd for r in money(self.state).ledger if r.job_id in ids and r.created_at >= month_start), Decimal(0))
        live = [job for job in mine if job.status in st.CAPPED_JOB_STATUSES and job.id != exclude_job]
        return Standing(month_usd, len(live), sum(job.total_pages for job in live))
