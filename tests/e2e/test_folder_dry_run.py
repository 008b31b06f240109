"""A folder job's dry run on the offline stack (issue 21.2): an honest page estimate within bounded work.

Today's dry run sampled 5 files of a 32-file folder and scaled by size; with pages that differ in
density it was off several times over (168 pages estimated at 1,416). Every file's page count is
now read when the folder is small, so the estimate is exact; an explicit file list is HEADed in
parallel and capped.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any

import boto3
import pytest

from batchlane.folders import dryrun
from batchlane_dev.local.pdfgen import make_pdf
from batchlane_dev.local.stack import FOLDER_BUCKET, owner_home
from tests.integration.test_api import estimate

OWNER = "dry-run-owner"


def s3() -> Any:
    return boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")


def api(stack: Any, path: str, body: Any) -> tuple[int, Any]:
    """The dry run as a client makes it: its estimate started (202), then polled until answered."""
    return estimate(stack, path, body, user=OWNER)


@pytest.fixture(scope="module")
def stack(migrated_url: str, stack_starter: Any) -> Any:  # type: ignore[no-untyped-def]
    started = stack_starter(migrated_url, faults="time_scale=36000", batch_lane=False, schedules=False)
    yield started
    started.stop()
    assert not (started.grants and started.grants.denials), started.grants.denials


def test_a_32_file_folder_of_168_pages_is_estimated_at_168(stack: Any) -> None:
    # 32 files whose bytes say little about their pages: dense one-page-per-kilobyte files beside
    # two-page files of long text (what a sample scaled by size gets wrong)
    prefix = f"{owner_home(OWNER)}dry-honest/"
    pages_of = [2 if i % 6 == 0 else 6 for i in range(32)]
    pages_of[-1] += 168 - sum(pages_of)
    assert sum(pages_of) == 168
    for i, pages in enumerate(pages_of):
        data = make_pdf(pages, lines_per_page=60) if pages == 2 else make_pdf(pages, lines_per_page=1)
        s3().put_object(Bucket=FOLDER_BUCKET, Key=f"{prefix}{i:02d}.pdf", Body=data)
    spec = {"input": {"folder": f"s3://{FOLDER_BUCKET}/{prefix}"}, "output": {"layout": "mirror", "folder": f"s3://{FOLDER_BUCKET}/{owner_home(OWNER)}dry-honest-out/"}}

    code, dry = api(stack, "/api/v1/folder-jobs?dry_run=true", spec)

    assert code == 200, dry
    assert dry["files"]["toConvert"] == 32
    assert dry["pages"]["total"] == 168 and dry["records"] == 168
    assert (dry["pages"]["low"], dry["pages"]["high"], dry["pages"]["method"]) == (168, 168, "exact")
    assert dry["pages"]["filesInspected"] == 32


def test_an_explicit_file_list_past_the_head_cap_is_looked_at_in_part_and_says_so(stack: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = f"{owner_home(OWNER)}dry-list/"
    for i in range(6):
        s3().put_object(Bucket=FOLDER_BUCKET, Key=f"{prefix}{i}.pdf", Body=make_pdf(3))
    monkeypatch.setattr(dryrun, "MAX_FILE_HEADS", 4)  # the API's HEADs stop at the cap (1,000 in production)
    files = [f"s3://{FOLDER_BUCKET}/{prefix}{i}.pdf" for i in range(6)]
    spec = {"input": {"files": files}, "output": {"layout": "mirror", "folder": f"s3://{FOLDER_BUCKET}/{owner_home(OWNER)}dry-list-out/"}}

    code, dry = api(stack, "/api/v1/folder-jobs?dry_run=true", spec)

    assert code == 200, dry
    assert dry["listing"]["complete"] is False and "first 4" in dry["listing"]["note"]
    assert dry["files"]["toConvert"] == 4 and dry["pages"]["total"] == 12


def test_the_report_is_answered_a_page_at_a_time(stack: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """GET /folder-jobs/{id}/report once built the whole report in memory: now pages, in key order, that
    join up to the whole report (the CLI follows X-Next-After)."""
    from click.testing import CliRunner

    from batchlane.db import folder_jobs as repo
    from batchlane.folders import usecases
    from batchlane.runtime import services
    from batchlane_dev.cli.main import main

    job_id = "fj-" + "ab" * 12
    db = services().db
    repo.PgFolderJobs(db).add(job_id=job_id, owner_id=OWNER, name=None, spec={}, source=(FOLDER_BUCKET, "r/"), target=(FOLDER_BUCKET, "r/"))
    for i in range(5):
        db.run(
            "INSERT INTO folder_job_files (folder_job_id, source_key, status, output_key) VALUES (:job, :key, 'completed', :out)",
            job=job_id,
            key=f"r/{i}.pdf",
            out=f"r/{i}.md",
        )
    whole = "".join(usecases.report(services(), OWNER, job_id))

    request = urllib.request.Request(
        stack.env["BATCHLANE_API_URL"] + f"/api/v1/folder-jobs/{job_id}/report?limit=2", headers={"Authorization": f"Bearer local:{OWNER}"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        first, after = response.read().decode(), response.headers["X-Next-After"]
    assert [json.loads(line)["key"] for line in first.splitlines()] == ["r/0.pdf", "r/1.pdf"] and after == "r/1.pdf"

    from batchlane.api import folder_routes

    monkeypatch.setattr(folder_routes, "REPORT_PAGE_LINES", 2)  # the CLI reads three pages of at most 2 lines
    printed = CliRunner().invoke(main, ["jobs", "report", job_id, "--api-url", stack.env["BATCHLANE_API_URL"], "--user", OWNER])
    assert printed.exit_code == 0 and printed.output == whole and len(whole.splitlines()) == 5
