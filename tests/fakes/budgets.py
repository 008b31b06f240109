"""batchlane.ports.BudgetRepository in memory: the contract of db/budgets.py's Pg adapter (tests/contract).

The job moves (pause at the hold, resume) are domain.status's ``pause_budget`` and ``resume`` rows, as in the SQL."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC
from decimal import Decimal
from typing import Any

from batchlane.db.budgets import HOLD_REACHED_ERROR, HOLD_REACHED_MESSAGE, override_or_defaults
from batchlane.domain import status as st
from batchlane.domain.budget import Holder, Limits, Standing
from batchlane.domain.status import ChunkStatus, Entity
from batchlane.rows import BudgetOverride, Hold, JobMoney, JobRow
from fakes.jobs import FakeJobs
from fakes.ledger import MoneyRows, money


class FakeBudgets:
    def __init__(self, state: Any) -> None:  # a fakes.FakeState
        self.state = state

    @property
    def _money(self) -> MoneyRows:
        return money(self.state)

    @property
    def _overrides(self) -> dict[str, BudgetOverride]:
        rows: dict[str, BudgetOverride] = self.state.part("budget_overrides", dict)
        return rows

    def _jobs(self) -> FakeJobs:
        return FakeJobs(self.state)

    def standing(self, owner_id: str, *, exclude_job: str | None = None) -> Standing:
        mine = self._jobs().jobs_of_owner(owner_id)
        ids = {job.id for job in mine}
        month_start = self.state.clock.now().astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        # Every ledger row of the owner's jobs counts (chunk, batch and batch_share): a lane's own row has no job.
        month_usd = sum((r.cost_usd for r in self._money.ledger if r.job_id in ids and r.created_at >= month_start), Decimal(0))
        held_usd = sum(
            (
                max(h.amount_usd - (self._money.spent(h.job_id) if h.job_id in ids else Decimal(0)), Decimal(0))
                for h in self._money.holds.values()
                if h.owner_id == owner_id and h.outcome is None and h.job_id != exclude_job
            ),
            Decimal(0),
        )
        live = [job for job in mine if job.status in st.CAPPED_JOB_STATUSES and job.id != exclude_job]
        return Standing(month_usd + held_usd, len(live), sum(job.total_pages for job in live), spent_usd=month_usd)

    def lock_owner(self, owner_id: str) -> None:
        return None  # one thread: nothing to serialise against

    def get_override(self, owner_id: str) -> BudgetOverride | None:
        return self._overrides.get(owner_id)

    def set_override(
        self, owner_id: str, *, usd_per_month: Decimal | None, max_live_jobs: int | None, max_live_pages: int | None, updated_by: str
    ) -> BudgetOverride:
        if any(v is not None and v < 0 for v in (usd_per_month, max_live_jobs, max_live_pages)):
            raise ValueError("a limit is never negative")  # the CHECKs
        row = BudgetOverride(owner_id, usd_per_month, max_live_jobs, max_live_pages, updated_by, self.state.clock.now())
        self._overrides[owner_id] = row
        return row

    def limits_for(self, owner_id: str, settings: Any) -> Limits:
        return override_or_defaults(self.get_override(owner_id), settings)

    def job_money(self, job_id: str) -> JobMoney | None:
        jobs = self._jobs()
        job = jobs.get_job(job_id)
        if job is None:
            return None
        hold = self._money.holds.get(job_id)
        done = sum(c.pages_done + c.pages_failed for c in jobs.get_chunks(job_id) if c.status == ChunkStatus.COMPLETED)
        return JobMoney(
            job_id=job.id, owner_id=job.owner_id, status=job.status, total_pages=job.total_pages, spent_usd=self._money.spent(job_id),
            hold_usd=hold.amount_usd if hold is not None and hold.outcome is None else None, pages_done=done,
        )  # fmt: skip

    def reserve(self, job_id: str, cost: Decimal) -> bool | None:
        hold = self._money.holds.get(job_id)
        if hold is None or hold.outcome is not None:
            return None
        if hold.committed_usd + cost <= hold.amount_usd:
            wanted = Decimal(0) if hold.committed_usd + cost + hold.wanted_usd <= hold.amount_usd else hold.wanted_usd
            self._money.holds[job_id] = replace(hold, committed_usd=hold.committed_usd + cost, wanted_usd=wanted)
            return True
        self._money.holds[job_id] = replace(hold, wanted_usd=cost)
        return False

    def settle_reservation(self, job_id: str, *, reserved: Decimal, actual: Decimal) -> None:
        hold = self._money.holds.get(job_id)
        if hold is not None:
            self._money.holds[job_id] = replace(hold, committed_usd=hold.committed_usd - reserved + actual)

    def pause_at_hold(self, job_id: str, *, next_request_usd: Decimal = Decimal(0), spent_usd: Decimal = Decimal(0), message: str | None = None) -> bool:
        move, jobs = st.pause_budget(), self._jobs()
        job, hold = jobs.get_job(job_id), self._money.holds.get(job_id)
        if job is None or hold is None or hold.outcome is not None or not move.allows(job.status):
            return False
        needed = max(next_request_usd, hold.wanted_usd)
        if not (needed > 0 and max(hold.committed_usd, spent_usd) + needed > hold.amount_usd):
            return False
        jobs.put_job(
            replace(job, status=move.target, updated_at=self.state.clock.now(), error_id=HOLD_REACHED_ERROR, error_message=message or HOLD_REACHED_MESSAGE)
        )
        return True

    def grow_hold(self, job_id: str, *, by: Decimal) -> Hold | None:
        hold = self._money.holds.get(job_id)
        if hold is None or hold.outcome is not None:
            return None
        grown = replace(hold, amount_usd=hold.amount_usd + by, updated_at=self.state.clock.now())
        self._money.holds[job_id] = grown
        return grown

    def release_hold(self, job_id: str, *, granted: Decimal, spent: Decimal) -> None:
        hold = self._money.holds.get(job_id)
        if hold is not None and hold.outcome is None:
            amount = max(hold.amount_usd - granted + spent, hold.committed_usd)
            self._money.holds[job_id] = replace(hold, amount_usd=amount, updated_at=self.state.clock.now())

    def trim_hold(self, job_id: str) -> None:
        hold = self._money.holds.get(job_id)
        if hold is not None and hold.outcome is None:
            self._money.holds[job_id] = replace(hold, amount_usd=hold.committed_usd, updated_at=self.state.clock.now())

    def holders(self, owner_id: str, *, exclude_job: str | None = None) -> list[Holder]:
        jobs, out = self._jobs(), []
        for h in self._money.holds.values():
            if h.owner_id != owner_id or h.outcome is not None or h.job_id == exclude_job:
                continue
            held = h.amount_usd - self._money.spent(h.job_id)
            job = jobs.get_job(h.job_id)
            file = jobs.get_file(str(job.file_id)) if job is not None else None
            if held > 0:
                out.append(Holder(h.job_id, file.name if file is not None else "", held))
        return sorted(out, key=lambda h: (-h.held_usd, h.job_id))

    def mark_pause_settled(self, job_id: str) -> bool:
        jobs = self._jobs()
        job = jobs.get_job(job_id)
        if job is None or not st.resume().allows(job.status):
            return False
        jobs.put_job(replace(job, pause_settled=True, updated_at=self.state.clock.now()))
        return True

    def resume_paused(self, job_id: str, *, hold_usd: Decimal) -> JobRow | None:
        move, jobs = st.resume(), self._jobs()
        job = jobs.get_job(job_id)
        if job is None or not move.allows(job.status):
            return None
        resumed = jobs.put_job(
            replace(
                job, status=move.target, error_id=None, error_message=None, updated_at=self.state.clock.now(), pause_settled=False,
                budget_resumes=job.budget_resumes + 1,
            )
        )  # fmt: skip
        hold = self._money.holds.get(job_id)
        if hold is not None and hold.outcome is None:
            self._money.holds[job_id] = replace(hold, amount_usd=max(hold.amount_usd, hold_usd), updated_at=self.state.clock.now())
        jobs.move_chunks(job_id, st.resume(Entity.CHUNK))
        return resumed
