"""The results commands from a terminal (issue 14): convert writes the Markdown next to the PDF,
jobs download / jobs pages / retry, convert --dry-run, and one naming convention for --json.

The CLI calls the offline stack's API by URL (``--api-url``), as it calls a deployed one; the
stack runs in this process so the test can lift the emulator's ``refuse_pages`` fault
between the conversion (pages 2 and 5 refused) and the retry.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from click.testing import CliRunner

from batchlane import keys
from batchlane.aws.clients import client
from batchlane.db import jobs as job_repo
from batchlane.runtime import services
from batchlane_dev.cli.main import main
from batchlane_dev.local.bedrock import parse_faults
from batchlane_dev.local.pdfgen import make_pdf, page_phrase

PAGES, REFUSED, BASE_FAULTS = 9, (2, 5), "time_scale=36000"


@pytest.fixture(scope="module")
def stack(migrated_url, stack_starter):  # type: ignore[no-untyped-def]
    started = stack_starter(
        migrated_url, faults=f"{BASE_FAULTS},refuse_pages=2+5", batch_lane=False, schedules=False, extra_env={"BATCHLANE_PAGES_PER_CHUNK": "3"}
    )
    yield started
    started.stop()


@pytest.fixture
def user(stack):  # type: ignore[no-untyped-def]
    name = f"cli-{uuid.uuid4().hex[:8]}"
    yield name
    stack.bedrock.set_runtime_faults(parse_faults(f"{BASE_FAULTS},refuse_pages=2+5"))


def run(stack: Any, user: str, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, [*args, "--api-url", stack.env["BATCHLANE_API_URL"], "--user", user], catch_exceptions=False)


def keys_of(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys_of(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys_of(v)}
    return set()


def assert_camel(output: str) -> dict[str, Any]:
    data = json.loads(output)
    snake = sorted(k for k in keys_of(data) if "_" in k.strip("_"))
    assert not snake, f"--json keys not camelCase: {snake}"
    return data


def test_convert_writes_the_markdown_next_to_the_pdf_and_never_overwrites_without_force(stack, user, tmp_path):
    pdf = tmp_path / "book.pdf"
    pdf.write_bytes(make_pdf(PAGES))
    result = run(stack, user, "convert", str(pdf), "--interval", "0.1", "--json")
    assert result.exit_code == 3, result.output  # completed, two pages failed (refused)
    job = assert_camel(result.stdout)
    written = tmp_path / "book.md"
    assert job["markdownPath"] == str(written) and job["pages"]["failed"] == len(REFUSED)
    assert written.read_text() == services().store.get_bytes(keys.markdown_key(job["jobId"])).decode()
    assert "<!-- Page 2: failed (stop_reason=refusal) -->" in written.read_text()

    jobs_before = len(job_repo.PgJobs(services().db).list_jobs(owner_id=user))
    again = run(stack, user, "convert", str(pdf))
    assert again.exit_code == 2 and "exists; pass --force" in again.stderr
    assert len(job_repo.PgJobs(services().db).list_jobs(owner_id=user)) == jobs_before, "refused before anything was uploaded"
    onto_input = run(stack, user, "convert", str(pdf), "-o", str(pdf), "--force")
    assert onto_input.exit_code == 2 and "is the input PDF" in onto_input.stderr
    assert pdf.read_bytes()[:5] == b"%PDF-"

    elsewhere = tmp_path / "copy.md"
    assert run(stack, user, "convert", str(pdf), "-o", str(elsewhere), "--interval", "0.1").exit_code == 3
    assert elsewhere.read_text().startswith("<!-- Page 1 -->")
    written.write_text("old")
    assert run(stack, user, "convert", str(pdf), "--force", "--interval", "0.1").exit_code == 3
    assert written.read_text().startswith("<!-- Page 1 -->")


def test_pages_download_and_retry_from_the_terminal(stack, user, tmp_path):
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(make_pdf(PAGES))
    job_id = run(stack, user, "convert", str(pdf), "--detach").stdout.strip()
    watched = run(stack, user, "jobs", "status", job_id, "--watch", "--interval", "0.1")
    assert watched.exit_code == 3, watched.output

    listed = run(stack, user, "jobs", "pages", job_id, "--status", "failed", "--json")
    assert listed.exit_code == 0, listed.output
    pages = assert_camel(listed.stdout)["pages"]
    assert [(p["page"], p["reason"], p["attempts"], p["lane"]) for p in pages] == [(n, "stop_reason=refusal", 1, "on_demand") for n in REFUSED]
    table = run(stack, user, "jobs", "pages", job_id).stdout
    assert "stop_reason=refusal" in table and "on_demand" in table

    target = tmp_path / "out.md"
    downloaded = run(stack, user, "jobs", "download", job_id, "-o", str(target), "--json")
    assert downloaded.exit_code == 0, downloaded.output
    answer = assert_camel(downloaded.stdout)
    assert answer["path"] == str(target) and answer["sizeBytes"] == len(target.read_bytes()) > 0 and answer["objectExpiresAt"]
    refused = run(stack, user, "jobs", "download", job_id, "-o", str(target))
    assert refused.exit_code == 2 and "--force" in refused.stderr
    foreign = run(stack, f"other-{user}", "jobs", "download", job_id, "-o", str(tmp_path / "x.md"))
    assert foreign.exit_code == 5 and "error: JOB_NOT_FOUND:" in foreign.stderr
    assert not (tmp_path / "x.md").exists()

    # the refusal passes: retry only the failed pages; the job ends with every page converted
    stack.bedrock.set_runtime_faults(parse_faults(BASE_FAULTS))
    retried = run(stack, user, "retry", job_id, "--error-id", "refusal", "--interval", "0.1", "--json", "-o", str(target), "--force")
    assert retried.exit_code == 0, retried.output
    done = assert_camel(retried.stdout)
    assert done["status"] == "completed" and done["pages"]["failed"] == 0 and done["markdownPath"] == str(target)
    text = target.read_text()
    assert "failed" not in text and all(page_phrase(n, PAGES) in text for n in range(1, PAGES + 1))
    assert run(stack, user, "jobs", "pages", job_id, "--json").stdout.count('"page"') == 0
    nothing = run(stack, user, "retry", job_id)
    assert nothing.exit_code == 6 and "error: NOTHING_TO_RETRY:" in nothing.stderr

    # the bucket's 14-day lifecycle took it: a clear message, not a broken link
    client("s3").delete_object(Bucket=services().store.bucket, Key=keys.markdown_key(job_id))
    gone = run(stack, user, "jobs", "download", job_id, "-o", str(tmp_path / "late.md"))
    assert gone.exit_code == 5 and "error: MARKDOWN_EXPIRED:" in gone.stderr and "14 days" in gone.stderr


def test_dry_run_from_the_terminal_creates_and_bills_nothing(stack, user, tmp_path):
    pdf = tmp_path / "plan.pdf"
    pdf.write_bytes(make_pdf(8, blank_every=4))
    result = run(stack, user, "convert", str(pdf), "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    answer = assert_camel(result.stdout)
    assert (answer["pages"]["total"], answer["pages"]["blank"], answer["records"]) == (8, 2, 6)
    assert answer["lane"]["name"] == "on_demand" and answer["created"] is False
    assert job_repo.PgJobs(services().db).list_jobs(owner_id=user) == []
    assert services().db.one("SELECT count(*) AS n FROM files WHERE owner_id = :o AND deleted_at IS NULL", o=user)["n"] == 0
    assert not (tmp_path / "plan.md").exists()
    human = run(stack, user, "convert", str(pdf), "--dry-run")
    assert human.exit_code == 0 and "nothing was created or billed" in human.stdout and "on_demand" in human.stdout
