"""Every CLI command's ``--json``, success and error, is the one JSON shape docs/api/openapi.yaml describes (issue 41.3),
and bad input exits 2 with the API's error id wherever it is found (issue 41.4).

The CLI calls an in-process offline stack by URL (as tests/e2e/test_cli_results.py); the stack checks every API answer
against the same document (tests/conftest.start_stack). The emulator refuses page 2 of every document, so each
conversion completes with one failed page to list and retry. Commands this module does not run are run, and their
--json checked, where they already are (``ELSEWHERE``); `test_every_command_with_json_is_covered` keeps the list whole.
"""

from __future__ import annotations

import json
import re
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import click
import pytest
from click.testing import CliRunner, Result

from batchlane.db import budgets, ledger
from batchlane.runtime import services
from batchlane_dev.cli.main import main
from batchlane_dev.contract import component_errors
from batchlane_dev.local.jobs import wait_until
from batchlane_dev.local.pdfgen import encrypted_pdf, make_pdf
from batchlane_dev.local.stack import FOLDER_BUCKET, owner_home
from tests.webhook_receiver import Receiver

FAULTS = "time_scale=36000,refuse_pages=2"
ADMIN = "admin-json;groups=batchlane-admins,batchlane-priority"
# Commands whose --json is checked against the document in another test module (they start stacks of their own).
ELSEWHERE = {
    ("demo",): "tests/e2e/test_demo.py (DemoReport), tests/e2e/test_folder_cli.py (FolderDemoReport)",
    ("doctor",): "tests/integration/test_doctor.py (DoctorReport)",
    ("local", "up"): "tests/unit/test_cli_local.py (LocalStack)",
    ("local", "down"): "tests/unit/test_cli_local.py (LocalStopped)",
}


@pytest.fixture(scope="module")
def stack(migrated_url, stack_starter):  # type: ignore[no-untyped-def]
    started = stack_starter(migrated_url, faults=FAULTS, extra_env={"BATCHLANE_PAGES_PER_CHUNK": "3"})
    yield started
    started.stop()  # fails if any API answer the commands got was off the document


@pytest.fixture
def user() -> str:
    return f"json-{uuid.uuid4().hex[:8]}"


COVERED: set[tuple[str, ...]] = set()


def command_path(args: tuple[str, ...]) -> tuple[str, ...]:
    return (args[0], args[1]) if isinstance(main.commands[args[0]], click.Group) else (args[0],)


def cli(stack: Any, user: str, *args: str) -> Result:
    COVERED.add(command_path(args))
    return CliRunner().invoke(main, [*args, "--api-url", stack.env["BATCHLANE_API_URL"], "--user", user], catch_exceptions=False)


def shaped(result: Result, schema: str, *, code: int | None = 0) -> dict[str, Any]:
    """The last stdout line, one object that is ``schema`` exactly, and the exit code (None: any)."""
    assert code is None or result.exit_code == code, (result.exit_code, result.output)
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert component_errors(answer, schema) == [], (schema, answer)
    return answer  # type: ignore[no-any-return]


def refused(result: Result, error_id: str, code: int) -> dict[str, Any]:
    answer = shaped(result, "CliError", code=code)
    assert answer["error"]["code"] == error_id and answer["exitCode"] == code, answer
    return answer


def pdf(tmp_path: Path, pages: int = 3, name: str = "paper.pdf") -> str:
    path = tmp_path / name
    path.write_bytes(make_pdf(pages))
    return str(path)


def test_a_file_converted_listed_downloaded_and_retried(stack, user, tmp_path):
    done = shaped(cli(stack, user, "convert", pdf(tmp_path), "--interval", "0.1", "--json"), "ConvertedJob", code=3)  # page 2 refused
    job_id = done["jobId"]
    assert Path(done["markdownPath"]).is_file() and done["pages"]["failed"] == 1
    shaped(cli(stack, user, "jobs", "status", job_id, "--json"), "Conversion")
    shaped(cli(stack, user, "jobs", "status", job_id, "--watch", "--json"), "Conversion", code=3)
    listed = shaped(cli(stack, user, "jobs", "list", "--json"), "JobsList")
    assert [f["conversion"]["jobId"] for f in listed["jobs"]] == [job_id]
    pages = shaped(cli(stack, user, "jobs", "pages", job_id, "--json"), "FailedPages")
    assert [(p["page"], p["retryLikelyToHelp"]) for p in pages["pages"]] == [(2, False)] and Decimal(pages["retryEstimate"]["atMostUsd"]) > 0
    shaped(cli(stack, user, "jobs", "download", job_id, "-o", str(tmp_path / "copy.md"), "--json"), "CliDownload")
    shaped(cli(stack, user, "retry", job_id, "--detach", "--json"), "RetryStarted")
    wait_until(lambda: shaped(cli(stack, user, "jobs", "status", job_id, "--json"), "Conversion")["retry"] is None, what="the retry", timeout_s=180)
    shaped(cli(stack, user, "retry", job_id, "--interval", "0.1", "--json"), "ConvertedJob", code=3)  # refused again, as it said
    shaped(cli(stack, user, "cancel", job_id, "--json"), "CliError", code=6)  # completed: NOT_CANCELLABLE
    refused(cli(stack, user, "retry", job_id, "--page", "1", "--json"), "NOTHING_TO_RETRY", 6)
    refused(cli(stack, user, "jobs", "status", str(uuid.uuid4()), "--json"), "JOB_NOT_FOUND", 5)
    refused(cli(stack, user, "jobs", "pages", str(uuid.uuid4()), "--json"), "JOB_NOT_FOUND", 5)
    refused(cli(stack, user, "jobs", "list", "--status", "bogus", "--json"), "USAGE", 2)  # click's own usage error, as JSON too


def test_a_detached_job_is_sent_on_demand_and_another_cancelled(stack, user, tmp_path):
    user = f"{user};groups=batchlane-priority"  # process now skips the half-price lane: the priority group's
    detached = shaped(cli(stack, user, "convert", pdf(tmp_path, 3), "--bulk", "--detach", "--json"), "Conversion")
    moved = cli(stack, user, "process-now", detached["jobId"], "--json")
    if moved.exit_code == 0:  # splitting (flagged), or waiting for its batch (left it)
        shaped(moved, "ProcessNowOutcome")
    else:  # it had already left the lane
        refused(moved, "NOT_BATCH_WAITING", 6)
    other = shaped(cli(stack, user, "convert", pdf(tmp_path, 3, "second.pdf"), "--bulk", "--detach", "--json"), "Conversion")
    cancelled = cli(stack, user, "cancel", other["jobId"], "--json")
    shaped(cancelled, "CancelOutcome" if cancelled.exit_code == 0 else "CliError", code=cancelled.exit_code)
    refused(cli(stack, user, "process-now", str(uuid.uuid4()), "--json"), "JOB_NOT_FOUND", 5)
    for started in (detached, other):  # ended before the stack stops
        shaped(cli(stack, user, "jobs", "status", started["jobId"], "--watch", "--interval", "0.2", "--json"), "Conversion", code=None)


def test_a_dry_run_creates_nothing_and_a_bad_file_exits_2_with_its_error_id_before_or_after_upload(stack, user, tmp_path):
    estimate = shaped(cli(stack, user, "convert", pdf(tmp_path, 4), "--dry-run", "--json"), "DryRun")
    assert estimate["pages"]["total"] == 4
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    refused(cli(stack, user, "convert", str(empty), "--json"), "PDF_EMPTY", 2)  # refused before upload
    whole = make_pdf(3)
    locked, cut = tmp_path / "locked.pdf", tmp_path / "cut.pdf"
    locked.write_bytes(encrypted_pdf(whole, "secret"))
    cut.write_bytes(whole[: len(whole) // 2])
    for path, error_id in ((locked, "PDF_ENCRYPTED"), (cut, "PDF_CORRUPT")):  # found by the split, after upload: exit 2 all the same
        job = shaped(cli(stack, user, "convert", str(path), "--interval", "0.1", "--json"), "ConvertedJob", code=2)
        assert (job["status"], job["error"]["code"]) == ("failed", error_id) and job["error"]["nextStep"], job


def test_a_folder_job_its_files_report_and_retry(stack, user):
    s3 = boto3.client("s3", endpoint_url=stack.env["AWS_ENDPOINT_URL"], region_name="us-east-1")
    folder = f"{owner_home(user)}json/"
    s3.put_object(Bucket=FOLDER_BUCKET, Key=folder + "good.pdf", Body=make_pdf(2))
    s3.put_object(Bucket=FOLDER_BUCKET, Key=folder + "broken.pdf", Body=b"%PDF-1.7\n" + b"x" * 200)
    uri = f"s3://{FOLDER_BUCKET}/{folder}"
    shaped(cli(stack, user, "convert", uri, "--dry-run", "--json"), "FolderDryRun")
    job = shaped(cli(stack, user, "convert", uri, "--interval", "0.2", "--json"), "FolderJob", code=3)
    shaped(cli(stack, user, "jobs", "status", job["id"], "--json"), "FolderJob")
    files = shaped(cli(stack, user, "jobs", "files", job["id"], "--json"), "FolderFileList")
    assert {f["key"].removeprefix(folder): (f["error"] or {}).get("code") for f in files["files"]} == {"good.pdf": None, "broken.pdf": "PDF_CORRUPT"}
    report = cli(stack, user, "jobs", "report", job["id"])
    assert report.exit_code == 0 and [component_errors(json.loads(line), "FolderReportLine") for line in report.stdout.splitlines()] == [[], []]
    shaped(cli(stack, user, "retry", job["id"], "--detach", "--json"), "FolderJobRetried")
    ended = shaped(cli(stack, user, "jobs", "status", job["id"], "--watch", "--interval", "0.2", "--json"), "FolderJob", code=3)  # broken again
    assert ended["files"]["failed"] == 1
    refused(cli(stack, user, "convert", f"s3://{FOLDER_BUCKET}/users/someone-else/", "--json"), "FOLDER_NOT_ALLOWED", 2)
    refused(cli(stack, user, "jobs", "files", "fj-" + "0" * 24, "--json"), "NOT_FOUND", 5)


def test_budget_webhooks_and_a_resume(stack, user, tmp_path):
    from tests.integration.test_api import job, make_job

    shaped(cli(stack, user, "budget", "--json"), "Budget")
    refused(cli(stack, user, "budget", "--set-for", user, "--usd-per-month", "5", "--json"), "FORBIDDEN", 7)
    shaped(cli(stack, ADMIN, "budget", "--set-for", user, "--usd-per-month", "50", "--json"), "Budget")
    first = shaped(cli(stack, user, "webhooks", "config", "--json"), "WebhookConfig")  # the user's own secret, shown once
    assert first["secret"] and first["shownOnce"] and first["version"] == 1
    assert "secret" not in shaped(cli(stack, user, "webhooks", "config", "--json"), "WebhookConfig")
    rotated = shaped(cli(stack, user, "webhooks", "rotate", "--json"), "WebhookConfig")  # any user rotates their own (issue 40.4)
    assert rotated["version"] == 2 and rotated["secret"] != first["secret"] and rotated["previousValidUntil"]
    receiver = Receiver()
    try:
        shaped(cli(stack, user, "webhooks", "test", receiver.url, "--json"), "Delivery")
        receiver.wait_for(1)
    finally:
        receiver.stop()
    refused(cli(stack, user, "webhooks", "test", "ftp://example.com/hook", "--json"), "CALLBACK_INVALID", 2)
    shaped(cli(stack, user, "webhooks", "deliveries", "--json"), "DeliveryList")
    refused(cli(stack, user, "webhooks", "deliveries", "--job", str(uuid.uuid4()), "--json"), "JOB_NOT_FOUND", 5)
    # a job paused because its next request no longer fits its owner's month (decision 0039: the $2 it booked from
    # its hold is the whole month), resumed once an admin raises the budget
    _, job_id = make_job(user, "pending")
    with services().db.transaction() as tx:
        assert budgets.PgBudgets(tx).reserve(job_id, Decimal("2"))
        ledger.PgLedger(tx).add_chunk_cost(
            job_id=job_id, chunk_index=0, model_id=job(job_id).model_id, input_tokens=1, output_tokens=1, cost_usd=Decimal("2"), metadata={}
        )
    shaped(cli(stack, ADMIN, "budget", "--set-for", user, "--usd-per-month", "2", "--json"), "Budget")
    services().workflows.start_conversion(job_id)
    wait_until(lambda: job(job_id).status == "paused_budget" and job(job_id).pause_settled, what="the pause", timeout_s=180)
    shaped(cli(stack, ADMIN, "budget", "--set-for", user, "--usd-per-month", "50", "--json"), "Budget")
    shaped(cli(stack, user, "resume", job_id, "--json"), "Resumed")
    refused(cli(stack, user, "resume", job_id, "--json"), "NOT_PAUSED", 6)
    wait_until(lambda: job(job_id).status in ("completed", "failed"), what="the resumed job", timeout_s=180)


def test_the_local_stack_simulate_and_migrate(stack, user, tmp_path, migrated_url):
    not_running = CliRunner().invoke(main, ["local", "status", "--workdir", str(tmp_path / "nowhere"), "--json"])
    assert shaped(not_running, "LocalStack", code=1)["running"] is False
    COVERED.update(command_path(c) for c in (("local", "status"), ("simulate",), ("db", "migrate")))
    simulated = shaped(CliRunner().invoke(main, ["simulate", "--documents", "200", "--step-s", "900", "--json"]), "Simulation")
    assert simulated["drained"] is True
    refused(CliRunner().invoke(main, ["simulate", "--aws", "bogus=1", "--json"]), "USAGE", 2)
    migrated = CliRunner().invoke(main, ["db", "migrate", "--json"], env={"DATABASE_ADMIN_URL": migrated_url})
    assert shaped(migrated, "Migrations")["applied"] == []
    nowhere = {"DATABASE_URL": "", "DATABASE_ADMIN_URL": "", "DATABASE_SECRET_ARN": "", "BATCHLANE_STATE_HOME": str(tmp_path)}
    refused(CliRunner().invoke(main, ["db", "migrate", "--workdir", str(tmp_path / "nowhere"), "--json"], env=nowhere), "UNREACHABLE", 4)


# -- no trap (issue 41.5) ----------------------------------------------------------------------------------------
def test_jobs_status_watch_prints_a_line_per_change_when_not_on_a_terminal(stack, user, tmp_path):
    """A log or a pipe got nothing until the job ended (up to 24 h for a batch job): a line per change instead."""
    job_id = cli(stack, user, "convert", pdf(tmp_path, 9), "--detach").stdout.strip()
    watched = cli(stack, user, "jobs", "status", job_id, "--watch", "--interval", "0.1")
    assert watched.exit_code == 3, watched.output
    lines = watched.stderr.strip().splitlines()
    assert len(lines) >= 2 and len(set(lines)) == len(lines), lines  # more than the end, and each a change
    assert all(re.match(r"^\d\d:\d\d:\d\d \w+.*: \d+/\d+ pages", line) for line in lines), lines
    assert lines[-1].endswith("9/9 pages, 1 failed") and " completed" in lines[-1], lines


def test_jobs_list_has_a_header_dates_and_lists_files_and_folder_jobs_newest_first(stack, user, tmp_path):
    first = cli(stack, user, "convert", pdf(tmp_path, 1, "first.pdf"), "--detach").stdout.strip()
    s3 = boto3.client("s3", endpoint_url=stack.env["AWS_ENDPOINT_URL"], region_name="us-east-1")
    s3.put_object(Bucket=FOLDER_BUCKET, Key=f"{owner_home(user)}listed/a.pdf", Body=make_pdf(1))
    folder = cli(stack, user, "convert", f"s3://{FOLDER_BUCKET}/{owner_home(user)}listed/", "--detach").stdout.strip()
    last = cli(stack, user, "convert", pdf(tmp_path, 1, "last.pdf"), "--detach").stdout.strip()
    listed = cli(stack, user, "jobs", "list")
    assert listed.exit_code == 0, listed.output
    header, *rows = listed.stdout.splitlines()
    assert header.split() == ["CREATED", "JOB", "STATUS", "PHASE", "PROGRESS", "BATCH", "NAME"]
    ids = [row.split()[2] for row in rows]
    assert [job for job in ids if job in {last, folder, first}] == [last, folder, first]  # newest first, folder jobs among the files
    others = [row for row in rows if row.split()[2] not in {last, folder, first}]
    assert all(row.split()[-1].endswith("a.pdf") for row in others), rows  # only the folder's own file, once its conversion started
    assert all(re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d ", row) for row in rows), rows


def test_an_empty_folder_is_converted_by_the_same_command_once_it_holds_a_pdf(stack, user):
    """It failed FOLDER_EMPTY; the same command answered that failed job again; `retry` said "The folder job is error"."""
    uri = f"s3://{FOLDER_BUCKET}/{owner_home(user)}later/"
    empty = refused_folder = cli(stack, user, "convert", uri, "--interval", "0.2", "--json")
    job = shaped(empty, "FolderJob", code=2)  # the folder is the user's input: exit 2 with its id
    assert (job["status"], job["error"]["code"]) == ("error", "FOLDER_EMPTY") and "start the same folder job again" in job["error"]["nextStep"]
    assert "error: FOLDER_EMPTY:" in refused_folder.stderr
    retried = shaped(cli(stack, user, "retry", job["id"], "--detach", "--json"), "FolderJobRetried")  # it lists the folder again
    assert retried["status"] == "enumerating" and retried["error"] is None
    shaped(cli(stack, user, "jobs", "status", job["id"], "--watch", "--interval", "0.2", "--json"), "FolderJob", code=2)  # still empty
    s3 = boto3.client("s3", endpoint_url=stack.env["AWS_ENDPOINT_URL"], region_name="us-east-1")
    s3.put_object(Bucket=FOLDER_BUCKET, Key=f"{owner_home(user)}later/paper.pdf", Body=make_pdf(1))
    again = shaped(cli(stack, user, "convert", uri, "--interval", "0.2", "--json"), "FolderJob")
    assert (again["id"], again["status"], again["files"]["completed"]) == (job["id"], "completed", 1)


def _json_commands(group: click.Group, prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    found: set[tuple[str, ...]] = set()
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found |= _json_commands(command, (*prefix, name))
        elif any("--json" in getattr(p, "opts", ()) for p in command.params):
            found.add((*prefix, name))
    return found


def test_every_command_with_json_is_covered():
    """Runs last in this module: every command that takes --json ran above, or is named in ELSEWHERE with where."""
    assert _json_commands(main) - COVERED - set(ELSEWHERE) == set()
