"""A job whose workflow ended without recording the job's end: which execution to ask about, and what to do.

The workflow's last step records a job's end (Settle or FailJob; a folder job's Finish or FailJob). When
that step itself cannot run (a Lambda throttle past ``topology.THROTTLE_MAX_ATTEMPTS``, an execution
timed out or stopped by hand) the execution ends FAILED, TIMED_OUT or ABORTED and the row stays live:
its owner's live-job slot stays taken and the job never ends. The recovery schedule asks Step Functions
(DescribeExecution) about each such job's current execution and ends the job the way the missed step
would have (issue 21, point 4). Pure: the names and the decision; the effects are in
``operations/recovery.py`` and ``folders/recovery.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from batchlane.domain.status import LIVE_FOLDER_JOB_STATUSES

# Step Functions' execution statuses (DescribeExecution): the three that end a run without its last step.
ENDED_WITHOUT_ITS_END = frozenset({"FAILED", "TIMED_OUT", "ABORTED"})

WORKFLOW_FAILED = "WORKFLOW_FAILED"  # the job's error id when the sweep fails it

# The job statuses a conversion or intake execution carries (waiting_batch is a lane's; recovery resumes it).
SWEPT_JOB_STATUSES: tuple[str, ...] = ("splitting", "pending", "processing", "assembling", "paused_budget")


@dataclass(frozen=True)
class Execution:
    """What DescribeExecution says of one execution: the machine (topology name), its name, status, dates."""

    machine: str  # "conversion", "intake", "folder_job"
    name: str
    status: str  # RUNNING | SUCCEEDED | FAILED | TIMED_OUT | ABORTED | PENDING_REDRIVE
    started_at: datetime
    stopped_at: datetime | None


@dataclass(frozen=True)
class JobRun:
    """The job row's fields the decision reads."""

    job_id: str
    status: str
    updated_at: datetime
    markdown_key: str | None = None
    pause_settled: bool = False
    budget_resumes: int = 0
    retry_attempt: int | None = None


class JobEnd(StrEnum):
    SETTLE = "settle"  # assembled (or paused at its hold): what Settle would have done
    FAIL = "fail"  # anything else: failed WORKFLOW_FAILED, the hold released (a retry: back to completed)


class FolderEnd(StrEnum):
    FINISH = "finish"  # every file ended and the listing is done: what Finish would have done
    FAIL = "fail"  # error FOLDER_JOB_FAILED / FOLDER_JOB_TIMED_OUT, as FailJob


def job_executions(job: JobRun) -> list[tuple[str, str]]:
    """(machine, execution name) of every execution that may be the job's current one (workflows.py names them).

    The intake counts past ``splitting`` too: a split that queued the job and whose conversion never started
    (the Split step and its FailJob both ran out of tries) leaves the intake as the latest run."""
    names = [("intake", f"intake-{job.job_id}")]
    if job.status == "splitting":
        return names
    names.append(("conversion", f"conversion-{job.job_id}"))
    if job.budget_resumes:
        names.append(("conversion", f"resume-{job.job_id}-{job.budget_resumes}"))
    if job.retry_attempt is not None:
        names.append(("conversion", f"retry-{job.job_id}-{job.retry_attempt}"))
    return names


def folder_execution(job_id: str, run: int, created_at: datetime) -> tuple[str, str]:
    """The folder job's current run (folders/usecases._run_name, folders/advance.hand_over_if_due)."""
    return ("folder_job", f"folder-{job_id}-{run}-{int(created_at.timestamp())}")


def current(executions: Sequence[Execution | None]) -> Execution | None:
    """The latest started of the executions that exist (a resume or retry starts after the run before it)."""
    existing = [e for e in executions if e is not None]
    return max(existing, key=lambda e: e.started_at) if existing else None


def ended_unrecorded(execution: Execution | None, updated_at: datetime) -> bool:
    """The run ended without its last step, and nothing moved the row since (so no newer run owns it)."""
    if execution is None or execution.status not in ENDED_WITHOUT_ITS_END or execution.stopped_at is None:
        return False
    return updated_at <= execution.stopped_at


def job_end(job: JobRun, execution: Execution | None) -> JobEnd | None:
    """What the sweep does to a live job whose current execution is ``execution`` (None: leave it)."""
    if job.status not in SWEPT_JOB_STATUSES or not ended_unrecorded(execution, job.updated_at):
        return None
    if job.status == "paused_budget":
        return None if job.pause_settled else JobEnd.SETTLE
    if job.status == "assembling" and job.markdown_key and job.retry_attempt is None:
        return JobEnd.SETTLE  # the Markdown is whole (assemble sets markdown_key last); only Settle was missed
    return JobEnd.FAIL


def folder_end(*, status: str, updated_at: datetime, enumeration_done: bool, unfinished_files: int, execution: Execution | None) -> FolderEnd | None:
    """What the sweep does to a live folder job whose current run is ``execution`` (None: leave it)."""
    if status not in LIVE_FOLDER_JOB_STATUSES or not ended_unrecorded(execution, updated_at):
        return None
    return FolderEnd.FINISH if enumeration_done and unfinished_files == 0 else FolderEnd.FAIL


def failure_message(execution: Execution) -> str:
    """The job's error message: the execution's status, never its cause (a Lambda's exception text)."""
    return f"The job's workflow ended ({execution.status}) before it could record the job's end; convert the file again."


def folder_failure(execution: Execution) -> tuple[str, str]:
    """The folder job's error id and message, as FailJob's (folders/finish.loop_failure): no cause text."""
    if execution.status == "TIMED_OUT":
        return "FOLDER_JOB_TIMED_OUT", "The folder job's loop timed out; retry the job to go on where it stopped."
    return (
        "FOLDER_JOB_FAILED",
        f"The folder job's loop ended ({execution.status}) before it could record the job's end; retry the job to go on where it stopped.",
    )
