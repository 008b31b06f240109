"""What a new user meets past the demo (issue 24): failed pages in plain sight, bad input refused before
upload, one error shape under --json, and help that says what the options and exit codes mean.

The CLI calls an in-process offline stack by URL, as in tests/e2e/test_cli_results.py; the emulator
refuses page 2 of every document, so each conversion completes with one failed page.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import pytest
from click.testing import CliRunner

from batchlane.db import jobs as job_repo
from batchlane.runtime import services
from batchlane_dev.cli.main import main
from batchlane_dev.local.pdfgen import make_pdf

FAULTS = "time_scale=36000,refuse_pages=2"


@pytest.fixture(scope="module")
def stack(migrated_url, stack_starter):  # type: ignore[no-untyped-def]
    started = stack_starter(migrated_url, faults=FAULTS, batch_lane=False, schedules=False, extra_env={"BATCHLANE_PAGES_PER_CHUNK": "3"})
    yield started
    started.stop()


@pytest.fixture
def user() -> str:
    return f"new-{uuid.uuid4().hex[:8]}"


def run(stack: Any, user: str, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, [*args, "--api-url", stack.env["BATCHLANE_API_URL"], "--user", user], catch_exceptions=False)


def test_a_failed_page_is_visible_in_the_status_the_rendered_markdown_and_before_a_retry(stack, user, tmp_path):  # type: ignore[no-untyped-def]
    pdf = tmp_path / "paper.pdf"
    pdf.write_bytes(make_pdf(5))
    converted = run(stack, user, "convert", str(pdf), "--interval", "0.1")
    assert converted.exit_code == 3, converted.output
    assert "status  completed with 1 failed page" in converted.stdout and "completed (completed)" not in converted.stdout
    assert re.search(r"hold    \$[\d.]+ was reserved for the worst case; settled at the job's cost \(\$[\d.]+\), the rest released", converted.stdout)
    rendered = re.sub(r"<!--.*?-->", "", (tmp_path / "paper.md").read_text(), flags=re.S)  # what a Markdown viewer shows
    assert "> **Page 2 was not converted** (`stop_reason=refusal`)" in rendered

    job_id = re.search(r"^job (\S+) ", converted.stdout, flags=re.M).group(1)  # type: ignore[union-attr]
    retried = run(stack, user, "retry", job_id, "--interval", "0.1")
    assert retried.exit_code == 3, retried.output  # refused again, as it said
    said = retried.stderr
    assert re.search(r"retry: 1 failed page\(s\) converted on-demand again, at most \$\d+\.\d{4}", said)
    assert "pages 2 (stop_reason=refusal) were refused for what they contain: a retry most likely fails the same way" in said
    assert said.index("at most $") < said.index(f"retry 1 of job {job_id}"), "the cost is said before the retry starts"


@pytest.mark.parametrize(("content", "error_id"), [(b"", "PDF_EMPTY"), (b"just text, saved as .pdf\n", "PDF_NOT_PDF")])
def test_a_file_that_is_not_a_pdf_is_refused_before_anything_is_uploaded(stack, user, tmp_path, content, error_id):  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(content)
    refused = run(stack, user, "convert", str(bad))
    assert refused.exit_code == 2 and f"error: {error_id}:" in refused.stderr
    as_json = run(stack, user, "convert", str(bad), "--json")
    assert as_json.exit_code == 2
    assert json.loads(as_json.stdout) == {"error": {"code": error_id, "message": json.loads(as_json.stdout)["error"]["message"]}, "exitCode": 2}
    assert services().db.run("SELECT id FROM files WHERE owner_id = :owner", owner=user) == [], "nothing was registered or uploaded"
    assert job_repo.PgJobs(services().db).list_jobs(owner_id=user) == []


def test_with_json_every_error_is_one_json_object_on_stdout(stack, user):  # type: ignore[no-untyped-def]
    missing = run(stack, user, "jobs", "status", str(uuid.uuid4()), "--json")
    assert missing.exit_code == 5
    assert json.loads(missing.stdout)["error"]["code"] == "JOB_NOT_FOUND" and json.loads(missing.stdout)["exitCode"] == 5


def test_help_says_what_the_options_and_the_exit_codes_mean(stack, user):  # type: ignore[no-untyped-def]
    top = CliRunner().invoke(main, ["--help"]).output
    assert "Exit codes:" in top and "7  not authorised" in top
    for command in (["jobs", "status"], ["retry"], ["convert"], ["process-now"], ["cancel"], ["resume"], ["jobs", "pages"], ["webhooks", "config"]):
        shown = " ".join(CliRunner().invoke(main, [*command, "--help"], terminal_width=200).output.split())
        assert re.search(r"--json Print ", shown), (command, "--json has no help text")
        if "--interval" in shown:
            assert "--interval FLOAT RANGE Seconds between progress polls" in shown, command
    config = run(stack, user, "webhooks", "config")
    assert config.exit_code == 0, config.output
    assert "None" not in config.stdout


def test_the_default_offline_user_may_process_now_as_the_docs_show(stack, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    """Issue 24.1: `batchlane process-now JOB` as written (no --user) is not refused FORBIDDEN; a plain --user still is."""
    monkeypatch.delenv("BATCHLANE_LOCAL_USER", raising=False)
    url = stack.env["BATCHLANE_API_URL"]
    pdf = tmp_path / "small.pdf"
    pdf.write_bytes(make_pdf(3))
    job_id = CliRunner().invoke(main, ["convert", str(pdf), "--detach", "--api-url", url], catch_exceptions=False).stdout.strip()
    moved = CliRunner().invoke(main, ["process-now", job_id, "--api-url", url], catch_exceptions=False)
    assert "FORBIDDEN" not in moved.stderr and moved.exit_code in (0, 6), moved.output  # 6: it had already left the lane
    plain = f"plain-{uuid.uuid4().hex[:6]}"
    other = run(stack, plain, "convert", str(pdf), "--detach").stdout.strip()
    refused = run(stack, plain, "process-now", other)
    assert refused.exit_code == 7 and "error: FORBIDDEN:" in refused.stderr
