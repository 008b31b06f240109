"""Per-user budgets: overrides, what an owner has committed, and the pause of a job at its hold.

Every check runs in the caller's transaction after ``PgBudgets.lock_owner``, so two conversions of
one owner are checked one after the other, never both against the same remaining budget.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from batchlane.db.jobs import JobRow, PgJobs, Runner
from batchlane.domain import status as st
from batchlane.domain.budget import Holder, Limits, Standing
from batchlane.domain.status import Entity
from batchlane.rows import BudgetOverride, Hold, JobMoney


def override_or_defaults(override: BudgetOverride | None, settings: Any) -> Limits:
    """The limits an override sets, the deployment's defaults for the rest (the fake budgets share this rule)."""
    usd = override.usd_per_month if override else None
    jobs = override.max_live_jobs if override else None
    pages = override.max_live_pages if override else None
    return Limits(
        usd_per_month=Decimal(str(settings.batchlane_budget_usd_per_month)) if usd is None else Decimal(usd),
        max_live_jobs=settings.batchlane_max_live_jobs if jobs is None else int(jobs),
        max_live_pages=settings.batchlane_max_live_pages if pages is None else int(pages),
    )


HOLD_REACHED_ERROR = "BUDGET_HOLD_REACHED"
HOLD_REACHED_MESSAGE = "The conversion reached its funds hold and is paused; resume it when your budget allows."


class PgBudgets:
    """batchlane.ports.BudgetRepository on PostgreSQL, bound to one Database or Transaction."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner

    def standing(self, owner_id: str, *, exclude_job: str | None = None) -> Standing:
        """This month's (UTC) spend on the owner's jobs, plus what their open holds may still spend
        (hold less the job's spend so far), plus the live jobs and their pages (``exclude_job`` left out;
        jobs parked for the batch pool are not counted: domain/status.CAPPED_JOB_STATUSES)."""
        row = self.runner.one(
            """WITH mine AS (SELECT id, status, total_pages FROM large_conversion_jobs WHERE owner_id = :owner),
                    spend AS (SELECT l.job_id, SUM(l.cost_usd) AS usd FROM cost_ledger l JOIN mine ON mine.id = l.job_id GROUP BY l.job_id)
               SELECT
                 (SELECT COALESCE(SUM(l.cost_usd), 0) FROM cost_ledger l JOIN mine ON mine.id = l.job_id
                   WHERE l.created_at >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') AS month_usd,
                 (SELECT COALESCE(SUM(GREATEST(h.amount_usd - COALESCE(s.usd, 0), 0)), 0) FROM funds_holds h LEFT JOIN spend s ON s.job_id = h.job_id
                   WHERE h.owner_id = :owner AND h.outcome IS NULL AND h.job_id IS DISTINCT FROM CAST(:exclude AS uuid)) AS held_usd,
                 (SELECT count(*) FROM mine WHERE status = ANY(CAST(:live AS text[])) AND id IS DISTINCT FROM CAST(:exclude AS uuid)) AS live_jobs,
                 (SELECT COALESCE(SUM(total_pages), 0) FROM mine WHERE status = ANY(CAST(:live AS text[]))
                   AND id IS DISTINCT FROM CAST(:exclude AS uuid)) AS live_pages""",
            owner=owner_id,
            exclude=exclude_job,
            live=list(st.CAPPED_JOB_STATUSES),
        )
        assert row is not None
        spent = Decimal(row["month_usd"])
        return Standing(spent + Decimal(row["held_usd"]), int(row["live_jobs"]), int(row["live_pages"]), spent_usd=spent)

    def lock_owner(self, owner_id: str) -> None:
        """Serialise the budget checks of one owner until the transaction ends."""
        self.runner.run("SELECT pg_advisory_xact_lock(hashtextextended('budget:' || :owner, 0))", owner=owner_id)

    def get_override(self, owner_id: str) -> BudgetOverride | None:
        row = self.runner.one("SELECT * FROM user_budgets WHERE owner_id = :owner", owner=owner_id)
        return BudgetOverride.of(row) if row is not None else None

    def set_override(
        self, owner_id: str, *, usd_per_month: Decimal | None, max_live_jobs: int | None, max_live_pages: int | None, updated_by: str
    ) -> BudgetOverride:
        """Insert or replace an owner's overrides (None: the deployment's default)."""
        row = self.runner.one(
            """INSERT INTO user_budgets (owner_id, usd_per_month, max_live_jobs, max_live_pages, updated_by)
               VALUES (:owner, :usd, :jobs, :pages, :by)
               ON CONFLICT (owner_id) DO UPDATE SET usd_per_month = EXCLUDED.usd_per_month, max_live_jobs = EXCLUDED.max_live_jobs,
                   max_live_pages = EXCLUDED.max_live_pages, updated_by = EXCLUDED.updated_by, updated_at = now()
               RETURNING *""",
            owner=owner_id,
            usd=usd_per_month,
            jobs=max_live_jobs,
            pages=max_live_pages,
            by=updated_by,
        )
        assert row is not None
        return BudgetOverride.of(row)

    def limits_for(self, owner_id: str, settings: Any) -> Limits:
        """The owner's override where set, else the deployment's defaults."""
        return override_or_defaults(self.get_override(owner_id), settings)

    def job_money(self, job_id: str) -> JobMoney | None:
        """A job's spend so far, its open hold (None when closed or absent) and its pages done."""
        row = self.runner.one(
            """SELECT j.id AS job_id, (SELECT COALESCE(SUM(cost_usd), 0) FROM cost_ledger WHERE job_id = j.id) AS spent_usd,
                      (SELECT amount_usd FROM funds_holds WHERE job_id = j.id AND outcome IS NULL) AS hold_usd,
                      (SELECT COALESCE(SUM(pages_done + pages_failed), 0) FROM chunk_jobs WHERE job_id = j.id AND status = :completed) AS pages_done,
                      j.total_pages, j.owner_id, j.status
               FROM large_conversion_jobs j WHERE j.id = CAST(:job AS uuid)""",
            job=job_id,
            completed=str(st.ChunkStatus.COMPLETED),
        )
        return JobMoney.of(row) if row is not None else None

    def reserve(self, job_id: str, cost: Decimal) -> bool | None:
        """Take ``cost`` from the job's open hold if that much is left: True; False when it is not (nothing taken,
        the cost kept as ``wanted_usd`` for the pause, until a reservation leaves room to carry it again); None when the
        job has no open hold (no limit).
        One guarded UPDATE: concurrent requests take turns on the row, none can take what another took."""
        row = self.runner.one(
            """UPDATE funds_holds SET committed_usd = committed_usd + :cost, wanted_usd = CASE WHEN committed_usd + :cost + wanted_usd <= amount_usd THEN 0 ELSE wanted_usd END
               WHERE job_id = CAST(:job AS uuid) AND outcome IS NULL AND committed_usd + :cost <= amount_usd RETURNING id""",
            job=job_id,
            cost=cost,
        )
        if row is not None:
            return True
        refused = self.runner.one(
            "UPDATE funds_holds SET wanted_usd = :cost WHERE job_id = CAST(:job AS uuid) AND outcome IS NULL RETURNING id",
            job=job_id,
            cost=cost,
        )
        return False if refused is not None else None

    def settle_reservation(self, job_id: str, *, reserved: Decimal, actual: Decimal) -> None:
        """A reserved request ended: what it really cost replaces its reservation (it may exceed it: the counter is honest)."""
        self.runner.run(
            "UPDATE funds_holds SET committed_usd = committed_usd - :reserved + :actual WHERE job_id = CAST(:job AS uuid)",
            job=job_id,
            reserved=reserved,
            actual=actual,
        )

    def pause_at_hold(self, job_id: str, *, next_request_usd: Decimal = Decimal(0), spent_usd: Decimal = Decimal(0), message: str | None = None) -> bool:
        """processing → paused_budget (domain/status.py's ``pause_budget``) when the request the job is about to send
        cannot fit what its hold has left: the last request that did not fit (``wanted_usd``), or ``next_request_usd``
        when given; True if paused. What the hold has left is less what its requests took, or than ``spent_usd`` (the
        job's booked spend) if that is more. A job with nothing to send never pauses (a blank document, a hold of 0).
        One statement, guarded on the status: a concurrent cancel or a second chunk cannot interleave."""
        move = st.pause_budget()
        row = self.runner.one(
            """UPDATE large_conversion_jobs j SET status = :to, updated_at = now(), error_id = :error_id, error_message = :message
               FROM funds_holds h
               WHERE j.id = CAST(:job AS uuid) AND h.job_id = j.id AND h.outcome IS NULL AND j.status = ANY(CAST(:from_ AS text[]))
                 AND GREATEST(:next, h.wanted_usd) > 0 AND GREATEST(h.committed_usd, :spent) + GREATEST(:next, h.wanted_usd) > h.amount_usd
               RETURNING j.id""",
            job=job_id,
            next=next_request_usd,
            spent=spent_usd,
            to=move.target,
            from_=move.from_states,
            error_id=HOLD_REACHED_ERROR,
            message=message or HOLD_REACHED_MESSAGE,
        )
        return row is not None

    def grow_hold(self, job_id: str, *, by: Decimal) -> Hold | None:
        """The job's open hold grows by ``by`` (a chunk starts): the caller checked the owner's room under
        :meth:`lock_owner`. None when the job has no open hold."""
        row = self.runner.one(
            "UPDATE funds_holds SET amount_usd = amount_usd + :by, updated_at = now() WHERE job_id = CAST(:job AS uuid) AND outcome IS NULL RETURNING *",
            job=job_id,
            by=by,
        )
        return Hold.of(row) if row is not None else None

    def release_hold(self, job_id: str, *, granted: Decimal, spent: Decimal) -> None:
        """A chunk's window closes: the hold gives back what it grew by less what the chunk spent, never below what it
        has given out. Shrinking never overruns anything, so no owner lock is needed."""
        self.runner.run(
            """UPDATE funds_holds SET amount_usd = GREATEST(amount_usd - :granted + :spent, committed_usd), updated_at = now()
               WHERE job_id = CAST(:job AS uuid) AND outcome IS NULL""",
            job=job_id,
            granted=granted,
            spent=spent,
        )

    def trim_hold(self, job_id: str) -> None:
        """The hold back to what it has given out (its batch records are collected and billed: nothing in flight)."""
        self.runner.run(
            "UPDATE funds_holds SET amount_usd = committed_usd, updated_at = now() WHERE job_id = CAST(:job AS uuid) AND outcome IS NULL",
            job=job_id,
        )

    def holders(self, owner_id: str, *, exclude_job: str | None = None) -> list[Holder]:
        """The owner's other jobs whose open hold keeps part of the budget beyond their spend, largest first."""
        rows = self.runner.run(
            """SELECT h.job_id, f.name, h.amount_usd - COALESCE((SELECT SUM(cost_usd) FROM cost_ledger l WHERE l.job_id = h.job_id), 0) AS held
               FROM funds_holds h JOIN large_conversion_jobs j ON j.id = h.job_id JOIN files f ON f.id = j.file_id
               WHERE h.owner_id = :owner AND h.outcome IS NULL AND h.job_id IS DISTINCT FROM CAST(:exclude AS uuid)
               ORDER BY held DESC, h.job_id""",
            owner=owner_id,
            exclude=exclude_job,
        )
        return [Holder(str(r["job_id"]), str(r["name"]), Decimal(r["held"])) for r in rows if Decimal(r["held"]) > 0]

    def mark_pause_settled(self, job_id: str) -> bool:
        """Set by the paused run's last step: nothing of that run touches the job any more (its owner may resume it)."""
        row = self.runner.one(
            """UPDATE large_conversion_jobs SET pause_settled = true, updated_at = now()
               WHERE id = CAST(:job AS uuid) AND status = ANY(CAST(:resumable AS text[])) RETURNING id""",
            job=job_id,
            resumable=st.resume().from_states,
        )
        return row is not None

    def resume_paused(self, job_id: str, *, hold_usd: Decimal) -> JobRow | None:
        """paused_budget → processing (domain/status.py's ``resume``) with the hold raised to ``hold_usd`` and the resume
        counted; the chunks the paused run left processing go back to pending (the chunks' ``resume``). None if not
        paused. The new run's start takes it from there."""
        move = st.resume()
        row = self.runner.one(
            """UPDATE large_conversion_jobs SET status = :to, error_id = NULL, error_message = NULL, updated_at = now(),
                   pause_settled = false, budget_resumes = budget_resumes + 1
               WHERE id = CAST(:job AS uuid) AND status = ANY(CAST(:from_ AS text[])) RETURNING *""",
            job=job_id,
            to=move.target,
            from_=move.from_states,
        )
        if row is None:
            return None
        self.runner.run(
            "UPDATE funds_holds SET amount_usd = GREATEST(amount_usd, :amount), updated_at = now() WHERE job_id = CAST(:job AS uuid) AND outcome IS NULL",
            job=job_id,
            amount=hold_usd,
        )
        PgJobs(self.runner).move_chunks(job_id, st.resume(Entity.CHUNK))
        return JobRow.of(row)
