"""cost_ledger and funds holds: the money side."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from batchlane.db.jobs import Runner
from batchlane.domain.status import JobStatus
from batchlane.rows import Hold, LedgerRow

# The one row per Bedrock job, and the share per member job: same columns, each unique in its own way.
_BATCH_SOURCES = {"batch": "(lane_row_id) WHERE source = 'batch'", "batch_share": "(lane_row_id, job_id) WHERE source = 'batch_share'"}


def _insert_batch_cost(
    db: Runner, source: str, *, job_id: str | None, lane_row_id: int, model_id: str, usage: tuple[int, int], cost_usd: Decimal, metadata: dict[str, Any]
) -> bool:
    row = db.one(
        f"""INSERT INTO cost_ledger (job_id, lane_row_id, source, backend, model_id, input_tokens, output_tokens, cost_usd, metadata)
           VALUES (CAST(:job AS uuid), :row, :source, 'batch', :model, :inp, :out, :cost, CAST(:meta AS jsonb))
           ON CONFLICT {_BATCH_SOURCES[source]} DO NOTHING RETURNING id""",
        job=job_id,
        row=lane_row_id,
        source=source,
        model=model_id,
        inp=usage[0],
        out=usage[1],
        cost=cost_usd,
        meta=metadata,
    )
    return row is not None


class PgLedger:
    """batchlane.ports.LedgerRepository on PostgreSQL, bound to one Database or Transaction."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner

    def add_chunk_cost(
        self, *, job_id: str, chunk_index: int, model_id: str, input_tokens: int, output_tokens: int, cost_usd: Decimal, metadata: dict[str, Any]
    ) -> None:
        self.runner.run(
            """INSERT INTO cost_ledger (job_id, chunk_index, source, backend, model_id, input_tokens, output_tokens, cost_usd, metadata)
               VALUES (CAST(:job AS uuid), :chunk, 'chunk', 'on_demand', :model, :inp, :out, :cost, CAST(:meta AS jsonb))""",
            job=job_id,
            chunk=chunk_index,
            model=model_id,
            inp=input_tokens,
            out=output_tokens,
            cost=cost_usd,
            meta=metadata,
        )

    def add_batch_cost(
        self, *, job_id: str | None, lane_row_id: int, model_id: str, input_tokens: int, output_tokens: int, cost_usd: Decimal, metadata: dict[str, Any]
    ) -> bool:
        """The one lane per Bedrock job (``job_id`` None: it belongs to the lane, its members carry shares);
        False when it already exists (unique index)."""
        usage = (input_tokens, output_tokens)
        return _insert_batch_cost(
            self.runner, "batch", job_id=job_id, lane_row_id=lane_row_id, model_id=model_id, usage=usage, cost_usd=cost_usd, metadata=metadata
        )

    def add_batch_share(
        self, *, job_id: str, lane_row_id: int, model_id: str, input_tokens: int, output_tokens: int, cost_usd: Decimal, metadata: dict[str, Any]
    ) -> None:
        """A member's share of its lane's lane (by its records): what the job's total counts."""
        usage = (input_tokens, output_tokens)
        if _insert_batch_cost(
            self.runner, "batch_share", job_id=job_id, lane_row_id=lane_row_id, model_id=model_id, usage=usage, cost_usd=cost_usd, metadata=metadata
        ):
            # Spent from the job's hold like an on-demand request (its counter: db/budgets.reserve).
            self.runner.run("UPDATE funds_holds SET committed_usd = committed_usd + :cost WHERE job_id = CAST(:job AS uuid)", job=job_id, cost=cost_usd)

    def batch_cost_of_job(self, job_id: str) -> Decimal:
        """The job's batch money: its shares (and a lane row of its own, from before the pool)."""
        row = self.runner.one(
            "SELECT COALESCE(SUM(cost_usd), 0) AS total FROM cost_ledger WHERE job_id = CAST(:id AS uuid) AND backend = 'batch'",
            id=job_id,
        )
        return Decimal(row["total"]) if row else Decimal(0)

    def job_total(self, job_id: str) -> Decimal:
        row = self.runner.one("SELECT COALESCE(SUM(cost_usd), 0) AS total FROM cost_ledger WHERE job_id = CAST(:id AS uuid)", id=job_id)
        return Decimal(row["total"]) if row else Decimal(0)

    def ledger_rows(self, job_id: str) -> list[LedgerRow]:
        return [LedgerRow.of(r) for r in self.runner.run("SELECT * FROM cost_ledger WHERE job_id = CAST(:id AS uuid) ORDER BY id", id=job_id)]

    def carry_late_batch_cost(self, job_id: str) -> None:
        """A batch bill written after its job left the lane (process now, cancel, stopping), or a cancelled job's
        last chunk booking, still counts: a finished (or cancelled) job's total and its closed hold follow the
        ledger, and the job carries its batch cost (its own lanes: its shares, not the whole lane's bill).
        The job row is locked first: two bookings committing at once each sum after the other's commit (the last
        sees all); NO KEY UPDATE, since a booking holds KEY SHARE on it (its ledger row's foreign key)."""
        self.runner.run("SELECT id FROM large_conversion_jobs WHERE id = CAST(:id AS uuid) FOR NO KEY UPDATE", id=job_id)
        self.runner.run(
            """UPDATE large_conversion_jobs SET total_cost_usd = (SELECT COALESCE(SUM(cost_usd), 0) FROM cost_ledger WHERE job_id = CAST(:id AS uuid)),
                   updated_at = now()
               WHERE id = CAST(:id AS uuid) AND status = ANY(CAST(:settled AS text[]))""",
            id=job_id,
            settled=[JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED],
        )
        self.runner.run(
            """UPDATE funds_holds SET settled_usd = (SELECT COALESCE(SUM(cost_usd), 0) FROM cost_ledger WHERE job_id = CAST(:id AS uuid)),
                   updated_at = now()
               WHERE job_id = CAST(:id AS uuid) AND outcome IN ('settled', 'cancelled')""",
            id=job_id,
        )
        self.runner.run(
            """UPDATE large_conversion_jobs SET batch_cost_usd = (
                       SELECT COALESCE(SUM(cost_usd), 0) FROM cost_ledger WHERE job_id = CAST(:id AS uuid) AND backend = 'batch')
               WHERE id = CAST(:id AS uuid) AND status <> :parked""",
            id=job_id,
            parked=JobStatus.WAITING_BATCH,
        )

    # funds holds
    def place_hold(self, *, job_id: str, owner_id: str, amount_usd: Decimal, hours: float) -> None:
        self.runner.run(
            """INSERT INTO funds_holds (job_id, owner_id, amount_usd, expires_at)
               VALUES (CAST(:job AS uuid), :owner, :amount, now() + make_interval(secs => :secs))
               ON CONFLICT (job_id) DO NOTHING""",
            job=job_id,
            owner=owner_id,
            amount=amount_usd,
            secs=hours * 3600,
        )

    def extend_hold(self, job_id: str, *, hours: float) -> None:
        """Set the open hold to expire ``hours`` from now (stretched for the batch wait, back for on-demand)."""
        self.runner.run(
            """UPDATE funds_holds SET expires_at = now() + make_interval(secs => :secs), updated_at = now()
               WHERE job_id = CAST(:job AS uuid) AND outcome IS NULL""",
            job=job_id,
            secs=hours * 3600,
        )

    def reopen_hold(self, job_id: str, *, extra_usd: Decimal, hours: float) -> None:
        """A retry of failed pages: the settled hold opens again for ``extra_usd`` more; settle closes it at the new total."""
        self.runner.run(
            """UPDATE funds_holds SET outcome = NULL, amount_usd = COALESCE(settled_usd, 0) + :extra, committed_usd = COALESCE(settled_usd, 0), settled_usd = NULL,
                   expires_at = now() + make_interval(secs => :secs), updated_at = now()
               WHERE job_id = CAST(:job AS uuid)""",
            job=job_id,
            extra=extra_usd,
            secs=hours * 3600,
        )

    def close_hold(self, job_id: str, *, outcome: str, settled_usd: Decimal | None = None) -> bool:
        row = self.runner.one(
            """UPDATE funds_holds SET outcome = :outcome, settled_usd = :settled, updated_at = now()
               WHERE job_id = CAST(:job AS uuid) AND outcome IS NULL RETURNING id""",
            job=job_id,
            outcome=outcome,
            settled=settled_usd,
        )
        return row is not None

    def get_hold(self, job_id: str) -> Hold | None:
        row = self.runner.one("SELECT * FROM funds_holds WHERE job_id = CAST(:job AS uuid)", job=job_id)
        return Hold.of(row) if row is not None else None
