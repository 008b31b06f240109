"""A folder file whose document completed with a failed page says so and lists the page."""

from __future__ import annotations

import os
from typing import Any

import boto3

from batchlane.db import folder_jobs as repo
from batchlane.folders import usecases
from batchlane.runtime import services
from batchlane_dev.local.jobs import wait_until
from batchlane_dev.local.pdfgen import make_pdf
from batchlane_dev.local.stack import FOLDER_BUCKET, owner_home

HOME = owner_home("tester")


def test_a_document_with_a_refused_page_is_completed_and_lists_it(stack_factory: Any) -> None:
    stack_factory("time_scale=36000,refuse_pages=2")  # the emulated model declines every page 2
    s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    s3.put_object(Bucket=FOLDER_BUCKET, Key=HOME + "pages/a.pdf", Body=make_pdf(3))
    job, _ = usecases.submit(services(), "tester", {"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}pages/"}})
    wait_until(lambda: (row := repo.PgFolderJobs(services().db).get(job["id"])) and row.finished_at is not None, timeout_s=180, what="the folder job")

    status = usecases.status(services(), "tester", job["id"])
    (file,) = usecases.files(services(), "tester", job["id"])["files"]
    assert (file["status"], file["pages"], file["pagesFailed"], file["failedPages"]) == ("completed", 3, 1, [2])
    assert status["status"] == "completed_with_failures" and status["pages"] == {"completed": 2, "failed": 1}


def test_cancel_stops_a_file_parked_for_the_batch_lane(stack_factory: Any) -> None:
    lane = {"BATCH_CONVERSION_MIN_PAGES": "40", "BATCH_CONVERSION_MIN_RECORDS": "10", "BATCHLANE_PAGES_PER_CHUNK": "20", "BATCH_CONVERSION_GRACE_HOURS": "24"}
    stack_factory("time_scale=3600,job_hours=20", extra_env=lane)  # a Bedrock job takes ~20 s: still running when we cancel
    s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    s3.put_object(Bucket=FOLDER_BUCKET, Key=HOME + "parked/big.pdf", Body=make_pdf(60))
    job, _ = usecases.submit(services(), "tester", {"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}parked/"}})
    db = services().db
    conversion = wait_until(
        lambda: db.one(
            """SELECT j.id FROM folder_job_files f JOIN large_conversion_jobs j ON j.id = f.conversion_job_id
               WHERE f.folder_job_id = :id AND j.status = 'waiting_batch'""",
            id=job["id"],
        ),
        timeout_s=120,
        what="the file parked for the batch lane",
    )
    usecases.cancel(services(), "tester", job["id"])
    wait_until(lambda: (row := repo.PgFolderJobs(db).get(job["id"])) and row.finished_at is not None, timeout_s=180, what="the folder job to end")

    (file,) = usecases.files(services(), "tester", job["id"])["files"]
    assert (file["status"], (file["error"] or {}).get("code")) == ("skipped", "CANCELLED")
    assert db.one("SELECT status FROM large_conversion_jobs WHERE id = :id", id=conversion["id"])["status"] == "cancelled"
    assert usecases.status(services(), "tester", job["id"])["status"] == "cancelled"
