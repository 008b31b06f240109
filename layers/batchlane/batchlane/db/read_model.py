"""The API's read model: a job with its progress, its lanes (summed) and funds hold in one row (read-only SQL);
rows come back as batchlane.ports' JobProgress, OwnerFile, FileJob and ModelSpend."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from batchlane.db.jobs import Runner
from batchlane.domain import status as st
from batchlane.domain.savings import BATCH_SERVED_KEY, LedgerMoney
from batchlane.rows import FileJob, HoldView, JobLanes, JobProgress, ModelSpend, OwnerFile

_JOB_COLUMNS = """j.id AS job_id, j.file_id, j.owner_id, j.status, j.retry_attempt, j.retry_pages, j.model_id, j.total_pages, j.chunk_count, j.pages_failed,
       j.pages_batch, j.total_cost_usd, j.error_id, j.error_message, j.created_at AS job_created_at, j.started_at, j.finished_at,
       c.chunks_done, c.chunks_cancelled, c.pages_done,
       b.state AS batch_state, b.end_state AS batch_end_state, b.bedrock_status, b.reason AS batch_reason, b.record_count,
       b.accepted_count, b.fallback_count, b.cost_usd AS batch_cost_usd, b.submitted_at, b.closed_at, b.lanes AS batch_lanes,
       h.amount_usd AS hold_amount_usd, h.outcome AS hold_outcome, h.settled_usd AS hold_settled_usd, h.expires_at AS hold_expires_at"""

_JOB_JOINS = """LEFT JOIN LATERAL (
           SELECT count(*) FILTER (WHERE ch.status = 'completed') AS chunks_done,
                  count(*) FILTER (WHERE ch.status = 'cancelled') AS chunks_cancelled,
                  COALESCE(sum(CASE WHEN ch.status = 'completed' THEN ch.last_page - ch.first_page + 1 ELSE ch.pages_done END), 0) AS pages_done
           FROM chunk_jobs ch WHERE ch.job_id = j.id) c ON true
       LEFT JOIN LATERAL (
           SELECT CASE WHEN count(l.id) = 0 THEN (CASE WHEN j.lane_reason IS NOT NULL THEN 'closed' END)
                       WHEN bool_or(l.state = 'preparing') THEN 'preparing' WHEN bool_or(l.state = 'submitted') THEN 'submitted'
                       WHEN bool_or(l.state = 'stopping') THEN 'stopping' ELSE 'closed' END AS state,
                  CASE WHEN count(l.id) = 0 THEN (CASE WHEN j.lane_reason IS NOT NULL THEN 'skipped' END)
                       ELSE (array_agg(l.end_state ORDER BY l.id DESC))[1] END AS end_state,
                  (array_agg(l.bedrock_status ORDER BY l.id DESC))[1] AS bedrock_status,
                  COALESCE((array_agg(l.reason ORDER BY l.id DESC))[1], j.lane_reason) AS reason,
                  CAST(sum(m.records) AS integer) AS record_count, CAST(sum(m.accepted) AS integer) AS accepted_count,
                  CAST(sum(m.records) - COALESCE(sum(m.accepted), 0) AS integer) AS fallback_count,
                  min(l.submitted_at) AS submitted_at, max(l.closed_at) AS closed_at, count(l.id) AS lanes,
                  (SELECT sum(x.cost_usd) FROM cost_ledger x WHERE x.job_id = j.id AND x.backend = 'batch') AS cost_usd
           FROM (SELECT lane_row_id, sum(records) AS records, sum(accepted) AS accepted FROM batch_members
                 WHERE job_id = j.id GROUP BY lane_row_id) m
           JOIN lanes l ON l.id = m.lane_row_id) b ON true
       LEFT JOIN funds_holds h ON h.job_id = j.id"""


def _int(value: Any) -> int:
    return int(value or 0)


def job_progress(row: dict[str, Any]) -> JobProgress:
    """A row of _JOB_COLUMNS as the typed read-model row."""
    lanes = None
    if row["batch_state"] is not None:
        lanes = JobLanes(
            state=row["batch_state"],
            end_state=row["batch_end_state"],
            bedrock_status=row["bedrock_status"],
            reason=row["batch_reason"],
            record_count=row["record_count"],
            accepted_count=row["accepted_count"],
            fallback_count=row["fallback_count"],
            cost_usd=Decimal(row["batch_cost_usd"]) if row["batch_cost_usd"] is not None else None,
            submitted_at=row["submitted_at"],
            closed_at=row["closed_at"],
            lanes=_int(row["batch_lanes"]),
        )
    hold = None
    if row["hold_amount_usd"] is not None:
        settled = row["hold_settled_usd"]
        hold = HoldView(Decimal(row["hold_amount_usd"]), row["hold_outcome"], Decimal(settled) if settled is not None else None, row["hold_expires_at"])
    pages = row["retry_pages"]
    return JobProgress(
        job_id=str(row["job_id"]),
        file_id=str(row["file_id"]),
        owner_id=row["owner_id"],
        status=row["status"],
        model_id=row["model_id"],
        total_pages=_int(row["total_pages"]),
        chunk_count=_int(row["chunk_count"]),
        pages_failed=_int(row["pages_failed"]),
        pages_batch=_int(row["pages_batch"]),
        total_cost_usd=Decimal(row["total_cost_usd"] or 0),
        error_id=row["error_id"],
        error_message=row["error_message"],
        created_at=row["job_created_at"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        retry_attempt=row["retry_attempt"],
        retry_pages=tuple(pages) if pages is not None else None,
        chunks_done=_int(row["chunks_done"]),
        chunks_cancelled=_int(row["chunks_cancelled"]),
        pages_done=_int(row["pages_done"]),
        lanes=lanes,
        hold=hold,
    )


def _progress(row: dict[str, Any] | None) -> JobProgress | None:
    return job_progress(row) if row is not None else None


class PgReads:
    """batchlane.ports.ReadModel on PostgreSQL, bound to one Database or Transaction."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner

    def job(self, job_id: str) -> JobProgress | None:
        return _progress(self.runner.one(f"SELECT {_JOB_COLUMNS} FROM large_conversion_jobs j {_JOB_JOINS} WHERE j.id = CAST(:id AS uuid)", id=job_id))

    def current_job(self, file_id: str) -> JobProgress | None:
        """The file's live job if it has one, else its newest."""
        row = self.runner.one(
            f"""SELECT {_JOB_COLUMNS} FROM large_conversion_jobs j {_JOB_JOINS}
                WHERE j.file_id = CAST(:id AS uuid)
                ORDER BY (j.status = ANY(CAST(:finished AS text[]))), j.created_at DESC LIMIT 1""",
            id=file_id,
            finished=list(st.FINISHED_JOB_STATUSES),
        )
        return _progress(row)

    def owner_files(self, owner_id: str, *, job_status: str | None, limit: int) -> list[OwnerFile]:
        """The owner's files, newest first, each joined with its live (else newest) job."""
        rows = self.runner.run(
            f"""SELECT jv.*, f.id, f.name, f.size_bytes, f.status AS file_status, f.created_at, f.updated_at,
                       (SELECT ff.folder_job_id FROM folder_job_files ff WHERE ff.file_id = f.id LIMIT 1) AS folder_job_id FROM files f
                LEFT JOIN LATERAL (
                    SELECT {_JOB_COLUMNS} FROM large_conversion_jobs j {_JOB_JOINS}
                    WHERE j.file_id = f.id
                    ORDER BY (j.status = ANY(CAST(:finished AS text[]))), j.created_at DESC LIMIT 1) jv ON true
                WHERE f.owner_id = :owner AND f.deleted_at IS NULL
                  AND (CAST(:status AS text) IS NULL OR jv.status = :status)
                ORDER BY f.created_at DESC LIMIT :limit""",
            owner=owner_id,
            status=job_status,
            limit=limit,
            finished=list(st.FINISHED_JOB_STATUSES),
        )
        return [
            OwnerFile(
                file_id=str(r["id"]),
                name=r["name"],
                size_bytes=int(r["size_bytes"]),
                status=r["file_status"],
                created_at=r["created_at"],
                updated_at=r["updated_at"],
                folder_job_id=r["folder_job_id"],
                job=job_progress(r) if r["job_id"] is not None else None,
            )
            for r in rows
        ]

    def jobs_of_file(self, file_id: str) -> list[FileJob]:
        """Every job of the file with the state of a lane still open that carries it (None without one)."""
        rows = self.runner.run(
            """SELECT j.id, (SELECT l.state FROM batch_members m JOIN lanes l ON l.id = m.lane_row_id
                             WHERE m.job_id = j.id AND l.state <> 'closed' LIMIT 1) AS batch_state
               FROM large_conversion_jobs j WHERE j.file_id = CAST(:id AS uuid)""",
            id=file_id,
        )
        return [FileJob(str(r["id"]), r["batch_state"]) for r in rows]

    def spend_by_model(self, job_id: str) -> list[ModelSpend]:
        """A job's booked cost and tokens per model (the console's live cost so far)."""
        rows = self.runner.run(
            """SELECT model_id, COALESCE(SUM(cost_usd), 0) AS cost, COALESCE(SUM(input_tokens), 0) AS inp, COALESCE(SUM(output_tokens), 0) AS out
               FROM cost_ledger WHERE job_id = CAST(:id AS uuid) GROUP BY model_id ORDER BY model_id""",
            id=job_id,
        )
        return [ModelSpend(r["model_id"], Decimal(r["cost"]), int(r["inp"]), int(r["out"])) for r in rows]

    def ledger_money(self, job_id: str) -> LedgerMoney:
        """domain/savings.ledger_money over the job's ledger rows, summed here."""
        row = self.runner.one(
            """SELECT COALESCE(SUM(cost_usd), 0) AS total,
                      COALESCE(SUM(cost_usd) FILTER (WHERE backend = 'batch'), 0) AS batch,
                      COALESCE(SUM(cost_usd) FILTER (WHERE backend <> 'batch'), 0) AS on_demand,
                      COALESCE(SUM(CAST(metadata ->> :key AS numeric)), 0) AS served
               FROM cost_ledger WHERE job_id = CAST(:id AS uuid)""",
            id=job_id,
            key=BATCH_SERVED_KEY,
        )
        assert row is not None
        return LedgerMoney(Decimal(row["total"]), Decimal(row["on_demand"]), Decimal(row["batch"]), Decimal(row["served"]))
