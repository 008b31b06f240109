"""Folder jobs in the console (issues 25, 41), on a stack of its own: its files go through the batch pool, whose
schedules this stack runs (test_console.py's stack runs none, so a bulk job waits there to be cancelled)."""

from __future__ import annotations

import re
import uuid

import boto3
import pytest
from playwright.sync_api import expect

from batchlane_dev.local.pdfgen import make_pdf
from batchlane_dev.local.stack import FOLDER_BUCKET
from tests.browser.consolelib import LONG, check_view, sign_in
from tests.browser.test_console import FAULTS, browser, page  # the fixtures, with __all__ below
from tests.conftest import start_stack

__all__ = ["browser", "page"]


@pytest.fixture(scope="module")
def stack(migrated_url):  # type: ignore[no-untyped-def]
    stack = start_stack(migrated_url, faults=FAULTS)
    yield stack
    stack.stop()


def test_a_folder_job_from_the_folders_you_may_use_dry_run_table_files_by_status_retry_and_report(stack, page):
    user = f"ui-{uuid.uuid4().hex[:6]}"
    home = f"users/{user}/"  # the folders granted to a user offline: their own home
    prefix = home + "console/"
    s3 = boto3.client("s3", endpoint_url=stack.env["AWS_ENDPOINT_URL"], region_name="us-east-1")
    s3.put_object(Bucket=FOLDER_BUCKET, Key=prefix + "good.pdf", Body=make_pdf(2, title="good"))
    s3.put_object(Bucket=FOLDER_BUCKET, Key=prefix + "broken.pdf", Body=b"%PDF-1.7\n" + b"x" * 200)
    sign_in(page, stack, user)
    page.get_by_role("link", name="Folder jobs").click()
    expect(page.get_by_text("No folder jobs yet: pick a folder above, dry run it, then start it.")).to_be_visible()
    grants = page.get_by_role("region", name="Folders you may use")
    expect(grants).to_contain_text(f"s3://{FOLDER_BUCKET}/{home}")
    check_view(page, "folder jobs, none yet", ready=grants.get_by_role("button", name="Use this folder").first)
    grants.get_by_role("button", name="Use this folder").first.click()
    folder = page.get_by_label("Folder (s3://bucket/prefix/)")
    expect(folder).to_have_value(f"s3://{FOLDER_BUCKET}/{home}")
    folder.fill(f"s3://{FOLDER_BUCKET}/{prefix}")
    start = page.get_by_role("button", name="Start")
    expect(start).to_be_disabled()  # a dry run first
    page.get_by_role("button", name="Dry run").click()
    dry = page.get_by_role("region", name="Dry run")
    expect(dry.get_by_test_id("dry-to-convert")).to_have_text("2")
    expect(dry.get_by_role("row", name=re.compile("Lane batch"))).to_be_visible()
    expect(dry).not_to_contain_text("toConvert")  # a table in words, not the answer's keys (each of them twice)
    expect(dry).not_to_contain_text("{")
    check_view(page, "folder dry run", ready=dry)
    start.click()
    page.wait_for_url("**/#/folder/*")
    expect(page.get_by_test_id("folder-status")).to_contain_text(re.compile("completed|could not run|cancelled"), timeout=LONG)
    expect(page.get_by_test_id("folder-status")).to_contain_text("completed with failures")
    expect(page.get_by_role("row", name=f"{prefix}broken.pdf failed PDF_CORRUPT", exact=False)).to_be_visible()
    expect(page.get_by_role("row", name=f"{prefix}good.pdf completed", exact=False)).to_be_visible()
    check_view(page, "folder job", ready=page.get_by_role("row", name=f"{prefix}good.pdf completed", exact=False))
    page.get_by_role("button", name="Report").click()
    expect(page.get_by_label("Report")).to_contain_text("broken.pdf")
    page.get_by_role("button", name="Retry PDF_CORRUPT").click()  # the file is still broken: it fails again, with the same id
    expect(page.get_by_test_id("folder-status")).to_contain_text("completed with failures", timeout=LONG)


def test_an_empty_folder_says_why_and_what_to_do(stack, page):
    user = f"ui-{uuid.uuid4().hex[:6]}"
    sign_in(page, stack, user)
    page.get_by_role("link", name="Folder jobs").click()
    page.get_by_label("Folder (s3://bucket/prefix/)").fill(f"s3://{FOLDER_BUCKET}/users/{user}/nothing-yet/")
    page.get_by_role("button", name="Dry run").click()
    expect(page.get_by_role("region", name="Dry run").get_by_test_id("dry-to-convert")).to_have_text("0")
    page.get_by_role("button", name="Start").click()
    problem = page.get_by_role("alert", name="Why it stopped")
    expect(problem).to_contain_text("FOLDER_EMPTY", timeout=LONG)
    expect(problem).to_contain_text("start the same folder job again")
    check_view(page, "folder job that could not run", ready=problem)
