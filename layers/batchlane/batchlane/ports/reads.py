"""The API's read model (db/read_model.py): what the API shows of files, jobs, lanes and holds."""

from __future__ import annotations

from typing import Protocol

from batchlane.domain.savings import LedgerMoney
from batchlane.rows.reads import FileJob, JobProgress, ModelSpend, OwnerFile


class ReadModel(Protocol):
    """The API's read model (db/read_model.py): read-only joins of jobs, chunks, lanes, holds and the ledger, one
    query per answer (a file listing is one query, not one per file)."""

    def job(self, job_id: str) -> JobProgress | None: ...
    def current_job(self, file_id: str) -> JobProgress | None:
        """The file's live job if it has one, else its newest."""
        ...

    def owner_files(self, owner_id: str, *, job_status: str | None, limit: int) -> list[OwnerFile]:
        """The owner's files not deleted, newest first (only those whose current job is in ``job_status`` when given)."""
        ...

    def jobs_of_file(self, file_id: str) -> list[FileJob]: ...
    def spend_by_model(self, job_id: str) -> list[ModelSpend]: ...
    def ledger_money(self, job_id: str) -> LedgerMoney:
        """The job's ledger summed: total, on-demand, batch, and its batch-served pages at the on-demand price (domain/savings.py)."""
        ...
