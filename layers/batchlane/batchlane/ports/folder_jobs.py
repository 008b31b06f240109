"""Folder jobs and their files (db/folder_jobs.py)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from batchlane.domain.status import Transition
from batchlane.rows.folder_jobs import EndedConversion, FolderCounts, FolderFile, FolderJob, NewFolderFile
from batchlane.rows.jobs import FileRow


class FolderJobRepository(Protocol):
    """Folder jobs and their files (db/folder_jobs.py): every status move is one of domain.status's FOLDER_JOB /
    FOLDER_FILE moves, guarded on the current status. A turn's reads that join the conversion jobs (ended conversions,
    files in flight that hold capacity, parked ones) are here too: one query each, polled, never pushed."""

    def add(
        self,
        *,
        job_id: str,
        owner_id: str,
        name: str | None,
        spec: dict[str, Any],
        source: tuple[str, str],
        target: tuple[str, str],
        priority_allowed: bool = False,
    ) -> FolderJob | None:
        """The job, enumerating, with its lane rights; None when it exists already (the same spec posted again)."""
        ...

    def get(self, job_id: str) -> FolderJob | None: ...

    def move(
        self, job_id: str, move: Transition, *, ended: bool | None = None, error_id: str | None = None, error_message: str | None = None
    ) -> FolderJob | None:
        """The job by a named ``st.folder_job`` move, only from its sources; None when it was not in one. ``finished_at``
        is set for a terminal status unless ``ended`` is False (a cancelled job whose files in flight still finish)."""
        ...

    def reopen(self, job_id: str, *, priority_allowed: bool) -> FolderJob | None:
        """An ended job runs again (retry, resume): processing (or enumerating if listing was unfinished), next run,
        with the lane rights decided for this run (the owner's groups now)."""
        ...

    def relist(self, job_id: str, *, priority_allowed: bool) -> FolderJob | None:
        """A job that could not run (error) lists its folder again from the start, next run (None: not in error), with
        the lane rights decided for this run."""
        ...

    def save_checkpoint(self, job_id: str, *, token: str | None, listed: int, excluded: int, done: bool) -> None:
        """After a listed page: the next continuation token and the totals."""
        ...

    def count_turn(self, job_id: str) -> int:
        """One more loop turn in the current run; the count after it."""
        ...

    def next_run(self, job_id: str, *, run: int) -> FolderJob | None:
        """Run ``run`` → ``run + 1`` (turns back to 0); None if another turn already did."""
        ...

    def next_report_part(self, job_id: str) -> int: ...

    def owner_job_ids(self, owner_id: str, *, limit: int) -> list[str]:
        """The owner's folder job ids, newest first."""
        ...

    def add_files(self, job_id: str, files: Sequence[NewFolderFile]) -> int:
        """What a page found; a key already there is left as it is (a re-listed page). Returns the files added."""
        ...

    def taken_outputs(self, job_id: str, output_keys: Sequence[str]) -> dict[str, str]:
        """output key → the source that already claims it (flat-layout collisions; a collided file claims nothing)."""
        ...

    def claim_queued(self, job_id: str, limit: int, *, free_pages: int | None = None) -> list[FolderFile]:
        """Up to ``limit`` queued files (key order) → processing, one more attempt; a file waiting for live pages only
        once ``free_pages`` hold it (None: no page check)."""
        ...

    def release(self, job_id: str, source_key: str) -> None:
        """processing → queued for a file whose conversion was not opened (the next turn tries again)."""
        ...

    def requeue_stalled_starts(self, job_id: str, *, older_than_s: float) -> int:
        """Files claimed longer than ``older_than_s`` ago whose conversion never opened (the turn died): queued again."""
        ...

    def attach_conversion(self, job_id: str, source_key: str, *, file_id: str, conversion_job_id: str, lane_reason: str | None = None) -> None: ...

    def finish_file(
        self, job_id: str, source_key: str, *, status: str, error_id: str | None = None, error_message: str | None = None, **outcome: Any
    ) -> FolderFile | None:
        """queued/processing → completed, failed or skipped (``outcome``: pages, pages_failed, cost_usd, lane, lane_reason);
        None when it was already ended. Its report line is due again."""
        ...

    def retry_conversion(self, job_id: str, source_key: str, *, waits_for_pages: int | None = None) -> FolderFile | None:
        """processing → queued after a failed conversion the policy retries (or that waits for live pages)."""
        ...

    def skip_queued(self, job_id: str, *, error_id: str, message: str) -> int:
        """Every queued file → skipped (a cancel: what has not started); the count."""
        ...

    def requeue(self, job_id: str, *, statuses: Sequence[str], error_ids: Sequence[str] | None = None) -> int:
        """Ended files in ``statuses`` (optionally only these error ids) → queued again; never OUTPUT_COLLISION, NOT_PDF or FILE_TYPE_UNSUPPORTED."""
        ...

    def unreported(self, job_id: str) -> list[FolderFile]:
        """Ended files whose report line is not written yet, in key order."""
        ...

    def mark_reported(self, job_id: str, keys: Sequence[str]) -> None: ...

    def iter_ended_files(self, job_id: str, *, after: str | None = None, page: int = 1000) -> Iterator[FolderFile]:
        """Every ended file in key order (past ``after``), read a page at a time (the final report, never all at once)."""
        ...

    def counts(self, job_id: str) -> FolderCounts: ...

    def live_counts(self, job_id: str, *, cap: int) -> tuple[int, int]:
        """(queued, processing) files, each counted up to ``cap`` only: what a loop turn needs, at a cost that
        does not grow with the folder (issue 27, point 3)."""
        ...

    def list_files(self, job_id: str, *, status: str | None = None, limit: int = 1000, after: str | None = None) -> list[FolderFile]:
        """The job's files in key order, past ``after``."""
        ...

    # what joins the conversion jobs and the files
    def ended_conversions(self, job_id: str) -> list[EndedConversion]:
        """Processing files whose conversion job has ended (completed, failed, cancelled), in key order: what a turn settles."""
        ...

    def parked_conversions(self, job_id: str) -> list[str]:
        """The conversion jobs of the job's processing files that wait for the batch lane (waiting_batch)."""
        ...

    def count_processing(self, job_id: str) -> int:
        """Processing files that hold in-flight capacity: one whose conversion waits in the batch pool does not."""
        ...

    def insert_source_file(self, *, owner_id: str, name: str, bucket: str, key: str, size_bytes: int) -> FileRow:
        """A ``files`` row for a folder file, read where it lies (``source_bucket``), never copied."""
        ...

    def live_unchanged(self, *, unchanged_for_s: float, limit: int) -> list[FolderJob]:
        """Live folder jobs unchanged for ``unchanged_for_s`` s, ``limit`` of them in random order (the recovery sweep)."""
        ...
