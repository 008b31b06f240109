"""A folder job in the console (issue 25), on a stack of its own: its files go through the batch pool,
whose schedules this stack runs (test_console.py's stack runs none, so a bulk job waits there to be cancelled)."""

from __future__ import annotations

import re
import uuid

import boto3
import pytest
from playwright.sync_api import expect

from batchlane_dev.local.pdfgen import make_pdf
from batchlane_dev.local.stack import FOLDER_BUCKET
from tests.browser.test_console import FAULTS, LONG, axe_clean, browser, page, sign_in  # the fixtures, with __all__ below
from tests.conftest import start_stack

__all__ = ["browser", "page"]


@pytest.fixture(scope="module")
def stack(migrated_url):  # type: ignore[no-untyped-def]
    stack = start_stack(migrated_url, faults=FAULTS)
    yield stack
    stack.stop()


def test_a_folder_job_with_one_failing_file_dry_run_start_files_by_status_retry_and_report(stack, page):
    user = f"ui-{uuid.uuid4().hex[:6]}"
    prefix = f"users/{user}/console/"  # the folders granted to a user offline: under their own home
    s3 = boto3.client("s3", endpoint_url=stack.env["AWS_ENDPOINT_URL"], region_name="us-east-1")
    s3.put_object(Bucket=FOLDER_BUCKET, Key=prefix + "good.pdf", Body=make_pdf(2, title="good"))
    s3.put_object(Bucket=FOLDER_BUCKET, Key=prefix + "broken.pdf", Body=b"%PDF-1.7\n" + b"x" * 200)
    sign_in(page, stack, user)
    page.get_by_role("link", name="Folder jobs").click()
    page.get_by_label("Folder (s3://bucket/prefix/)").fill(f"s3://{FOLDER_BUCKET}/{prefix}")
    start = page.get_by_role("button", name="Start")
    expect(start).to_be_disabled()  # a dry run first
    page.get_by_role("button", name="Dry run").click()
    expect(page.get_by_role("region", name="Dry run")).to_contain_text("toConvert")
    axe_clean(page, "folder jobs with a dry run")
    start.click()
    page.wait_for_url("**/#/folder/*")
    expect(page.get_by_test_id("folder-status")).to_contain_text(re.compile("completed|error|cancelled"), timeout=LONG)
    alerts = page.get_by_role("alert")
    assert alerts.count() == 0, alerts.all_inner_texts()  # the job did not stop with an error

    expect(page.get_by_test_id("folder-status")).to_contain_text("completed_with_failures")
    expect(page.get_by_role("row", name=f"{prefix}broken.pdf failed PDF_CORRUPT", exact=False)).to_be_visible()
    expect(page.get_by_role("row", name=f"{prefix}good.pdf completed", exact=False)).to_be_visible()
    axe_clean(page, "folder job")
    page.get_by_role("button", name="Report").click()
    expect(page.get_by_label("Report")).to_contain_text("broken.pdf")
    page.get_by_role("button", name="Retry PDF_CORRUPT").click()  # the file is still broken: it fails again, with the same id
    expect(page.get_by_test_id("folder-status")).to_contain_text("completed_with_failures", timeout=LONG)
