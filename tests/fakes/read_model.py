"""batchlane.ports.ReadModel in memory: the contract of db/read_model.py's Pg adapter (tests/contract).

What the SQL joins, this reads from the other fakes' rows: the jobs and chunks (FakeJobs), the lanes and their
members (FakeLanes), the holds and the ledger (FakeLedger), the folder files (FakeFolderJobs).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from batchlane.domain import status as st
from batchlane.domain.savings import LedgerMoney, ledger_money
from batchlane.domain.status import ChunkStatus, LaneState
from batchlane.rows import FileJob, FileRow, HoldView, JobLanes, JobProgress, JobRow, ModelSpend, OwnerFile
from fakes.jobs import FakeJobs, _JobRows
from fakes.ledger import money
from fakes.pool import lane_rows

_BUSIEST_FIRST = (LaneState.PREPARING, LaneState.SUBMITTED, LaneState.STOPPING)


class FakeReads:
    def __init__(self, state: Any) -> None:  # a fakes.FakeState
        self.state = state

    @property
    def _jobs(self) -> FakeJobs:
        return FakeJobs(self.state)

    def _rows(self) -> _JobRows:
        rows: _JobRows = self.state.part("jobs", _JobRows)
        return rows

    def job(self, job_id: str) -> JobProgress | None:
        job = self._jobs.get_job(job_id)
        return self._progress(job) if job is not None else None

    def current_job(self, file_id: str) -> JobProgress | None:
        current = self._current(file_id)
        return self._progress(current) if current is not None else None

    def _current(self, file_id: str) -> JobRow | None:
        """Live jobs first, then the newest (ties on the fixed clock: the last inserted first)."""
        jobs = [j for j in reversed(list(self._rows().jobs.values())) if j.file_id == file_id]
        jobs.sort(key=lambda j: j.created_at, reverse=True)
        jobs.sort(key=lambda j: j.status in st.FINISHED_JOB_STATUSES)
        return jobs[0] if jobs else None

    def owner_files(self, owner_id: str, *, job_status: str | None, limit: int) -> list[OwnerFile]:
        files = [f for f in reversed(list(self._rows().files.values())) if f.owner_id == owner_id and f.deleted_at is None]
        files.sort(key=lambda f: f.created_at, reverse=True)
        out = []
        for f in files:
            job = self._current(f.id)
            if job_status is not None and (job is None or job.status != job_status):
                continue
            out.append(self._owner_file(f, job))
        return out[: max(limit, 0)]

    def _owner_file(self, f: FileRow, job: JobRow | None) -> OwnerFile:
        folders = self.state.parts.get("folder_jobs")
        folder_job_id = next((ff.folder_job_id for ff in (folders.files.values() if folders else ()) if ff.file_id == f.id), None)
        return OwnerFile(
            file_id=f.id, name=f.name, size_bytes=f.size_bytes, status=f.status, created_at=f.created_at, updated_at=f.updated_at,
            folder_job_id=folder_job_id, job=self._progress(job) if job is not None else None,
        )  # fmt: skip

    def jobs_of_file(self, file_id: str) -> list[FileJob]:
        lanes = lane_rows(self.state)
        out = []
        for job in (j for j in self._rows().jobs.values() if j.file_id == file_id):
            states = (lanes.rows[m.lane_row_id].state for m in lanes.members if m.job_id == job.id and m.lane_row_id in lanes.rows)
            out.append(FileJob(job.id, next((s for s in states if s != LaneState.CLOSED), None)))
        return out

    def spend_by_model(self, job_id: str) -> list[ModelSpend]:
        by_model: dict[str, ModelSpend] = {}
        for row in money(self.state).ledger:
            if row.job_id == job_id:
                was = by_model.get(row.model_id, ModelSpend(row.model_id, Decimal(0), 0, 0))
                by_model[row.model_id] = ModelSpend(
                    row.model_id, was.cost_usd + row.cost_usd, was.input_tokens + row.input_tokens, was.output_tokens + row.output_tokens
                )
        return [by_model[m] for m in sorted(by_model)]

    def ledger_money(self, job_id: str) -> LedgerMoney:
        return ledger_money((row.backend, row.cost_usd, row.metadata) for row in money(self.state).ledger if row.job_id == job_id)

    # -- one job's row -------------------------------------------------------------------
    def _progress(self, job: JobRow) -> JobProgress:
        chunks = self._jobs.get_chunks(job.id)
        completed = [c for c in chunks if c.status == ChunkStatus.COMPLETED]
        hold = money(self.state).holds.get(job.id)
        return JobProgress(
            job_id=job.id, file_id=job.file_id, owner_id=job.owner_id, status=job.status, model_id=job.model_id, total_pages=job.total_pages,
            chunk_count=job.chunk_count, pages_failed=job.pages_failed, pages_batch=job.pages_batch, total_cost_usd=job.total_cost_usd,
            error_id=job.error_id, error_message=job.error_message, created_at=job.created_at, started_at=job.started_at,
            finished_at=job.finished_at, retry_attempt=job.retry_attempt, retry_pages=job.retry_pages, chunks_done=len(completed),
            chunks_cancelled=sum(1 for c in chunks if c.status == ChunkStatus.CANCELLED),
            pages_done=sum(c.last_page - c.first_page + 1 if c.status == ChunkStatus.COMPLETED else c.pages_done for c in chunks),
            lanes=self._lanes(job.id),
            hold=HoldView(hold.amount_usd, hold.outcome, hold.settled_usd, hold.expires_at) if hold is not None else None,
        )  # fmt: skip

    def _lanes(self, job_id: str) -> JobLanes | None:
        rows = lane_rows(self.state)
        members = [m for m in rows.members if m.job_id == job_id and m.lane_row_id in rows.rows]  # the JOIN on the lane
        lanes = [rows.rows[i] for i in sorted({m.lane_row_id for m in members})]
        left_pool = rows.lane_reason.get(job_id)
        batch_costs = [r.cost_usd for r in money(self.state).ledger if r.job_id == job_id and r.backend == "batch"]
        cost = sum(batch_costs, Decimal(0)) if batch_costs else None
        if not lanes:
            if left_pool is None:
                return None
            return JobLanes("closed", "skipped", None, left_pool, None, None, None, cost, None, None, 0)
        states = {lane.state for lane in lanes}
        newest = lanes[-1]
        records = [m.records for m in members if m.records is not None]
        accepted = [m.accepted for m in members if m.accepted is not None]
        record_count = sum(records) if records else None
        submitted = [lane.submitted_at for lane in lanes if lane.submitted_at is not None]
        closed = [lane.closed_at for lane in lanes if lane.closed_at is not None]
        return JobLanes(
            state=next((s.value for s in _BUSIEST_FIRST if s in states), LaneState.CLOSED.value),
            end_state=newest.end_state,
            bedrock_status=newest.bedrock_status,
            reason=newest.reason if newest.reason is not None else left_pool,
            record_count=record_count,
            accepted_count=sum(accepted) if accepted else None,
            fallback_count=record_count - sum(accepted) if record_count is not None else None,
            cost_usd=cost,
            submitted_at=min(submitted) if submitted else None,
            closed_at=max(closed) if closed else None,
            lanes=len(lanes),
        )
