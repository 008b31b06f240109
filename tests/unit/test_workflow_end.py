"""The recovery sweep's selection (domain/workflow_end.py): which execution is a job's current one, and what a
live job whose run ended without its last step gets (issue 21, point 4). Pure; the effects are tested on the
offline stack (tests/e2e/test_lambda_throttle.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from batchlane.domain import workflow_end as we

T0 = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def run(status: str, *, minutes: float = 0, **kw: object) -> we.JobRun:
    return we.JobRun(job_id="j1", status=status, updated_at=T0 + timedelta(minutes=minutes), **kw)  # type: ignore[arg-type]


def ex(status: str, *, name: str = "conversion-j1", started: float = -30, stopped: float | None = 5) -> we.Execution:
    return we.Execution("conversion", name, status, T0 + timedelta(minutes=started), None if stopped is None else T0 + timedelta(minutes=stopped))


def test_the_candidate_executions_follow_the_names_workflows_starts():
    assert we.job_executions(run("splitting")) == [("intake", "intake-j1")]
    assert we.job_executions(run("processing")) == [("intake", "intake-j1"), ("conversion", "conversion-j1")]
    assert we.job_executions(run("processing", budget_resumes=2, retry_attempt=1)) == [
        ("intake", "intake-j1"),
        ("conversion", "conversion-j1"),
        ("conversion", "resume-j1-2"),
        ("conversion", "retry-j1-1"),
    ]
    assert we.folder_execution("f1", 3, datetime.fromtimestamp(1_700_000_000, UTC)) == ("folder_job", "folder-f1-3-1700000000")


def test_the_current_execution_is_the_latest_started_that_exists():
    first, resumed = ex("FAILED", started=-60, stopped=-50), ex("RUNNING", name="resume-j1-1", started=-10, stopped=None)
    assert we.current([first, None, resumed]) is resumed
    assert we.current([None, None]) is None
    intake, conversion = ex("SUCCEEDED", name="intake-j1", started=-90, stopped=-80), ex("FAILED", started=-70)
    assert we.current([intake, conversion]) is conversion  # the conversion starts after the split that queued it
    assert we.job_end(run("pending"), we.current([ex("FAILED", name="intake-j1"), None])) is we.JobEnd.FAIL  # queued, never started


@pytest.mark.parametrize(
    ("job", "execution", "expected"),
    [
        (run("assembling", markdown_key="jobs/j1/output.md"), ex("FAILED"), we.JobEnd.SETTLE),  # only Settle was missed
        (run("assembling"), ex("FAILED"), we.JobEnd.FAIL),  # assembly never finished: no Markdown to settle on
        (run("assembling", markdown_key="jobs/j1/output.md", retry_attempt=1), ex("FAILED"), we.JobEnd.FAIL),  # a retry: put back as it was
        (run("processing"), ex("TIMED_OUT"), we.JobEnd.FAIL),
        (run("pending"), ex("ABORTED"), we.JobEnd.FAIL),
        (run("splitting"), ex("FAILED", name="intake-j1"), we.JobEnd.FAIL),
        (run("paused_budget"), ex("FAILED"), we.JobEnd.SETTLE),  # the pause is settled and announced, as Settle does
        (run("paused_budget", pause_settled=True), ex("FAILED"), None),  # already settled: nothing to do
        (run("processing"), ex("RUNNING", stopped=None), None),  # still running (the throttle ladder waits)
        (run("processing"), ex("SUCCEEDED"), None),
        (run("processing"), None, None),  # no execution (a start still to come)
        (run("processing", minutes=6), ex("FAILED", stopped=5), None),  # the row moved after the run ended: a newer run owns it
        (run("waiting_batch"), ex("FAILED"), None),  # a lane's: the stranded-job recovery resumes it
        (run("completed"), ex("FAILED"), None),
        (run("failed"), ex("FAILED"), None),
    ],
)
def test_what_a_live_job_whose_run_ended_gets(job: we.JobRun, execution: we.Execution | None, expected: we.JobEnd | None):
    assert we.job_end(job, execution) is expected


@pytest.mark.parametrize(
    ("status", "done", "unfinished", "execution", "expected"),
    [
        ("processing", True, 0, ex("FAILED"), we.FolderEnd.FINISH),  # Finish (and its FailJob) were missed
        ("processing", True, 2, ex("FAILED"), we.FolderEnd.FAIL),
        ("enumerating", False, 0, ex("TIMED_OUT"), we.FolderEnd.FAIL),
        ("processing", True, 0, ex("RUNNING", stopped=None), None),
        ("processing", True, 0, ex("SUCCEEDED"), None),  # handed over: the next run carries on
        ("completed", True, 0, ex("FAILED"), None),
        ("error", True, 0, ex("FAILED"), None),
    ],
)
def test_what_a_live_folder_job_whose_run_ended_gets(status: str, done: bool, unfinished: int, execution: we.Execution, expected: we.FolderEnd | None):
    assert we.folder_end(status=status, updated_at=T0, enumeration_done=done, unfinished_files=unfinished, execution=execution) is expected


def test_the_messages_name_the_status_never_a_cause():
    assert we.WORKFLOW_FAILED in {"WORKFLOW_FAILED"}
    assert "TIMED_OUT" in we.failure_message(ex("TIMED_OUT"))
    assert we.folder_failure(ex("TIMED_OUT"))[0] == "FOLDER_JOB_TIMED_OUT"
    assert we.folder_failure(ex("ABORTED")) == (
        "FOLDER_JOB_FAILED",
        "The folder job's loop ended (ABORTED) before it could record the job's end; retry the job to go on where it stopped.",
    )
