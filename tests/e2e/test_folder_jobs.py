"""Folder jobs end to end on the offline stack: the folder_job machine, each file the ordinary conversion.

Small folders (3–10 generated PDFs of a few pages); a test waits for the job's terminal
status by polling the database with a deadline, never by sleeping a fixed time.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from batchlane.db import folder_jobs as repo
from batchlane.folders import usecases
from batchlane.folders.spec import folder_job_id, parse_spec
from batchlane.runtime import services
from batchlane_dev.local.jobs import wait_until
from batchlane_dev.local.pdfgen import encrypted_pdf, make_pdf, page_phrase
from batchlane_dev.local.stack import FOLDER_BUCKET

OWNER = "tester"


def s3() -> Any:
    import os

    return boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")


def put_folder(prefix: str, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        s3().put_object(Bucket=FOLDER_BUCKET, Key=prefix + name, Body=data)


def keys(prefix: str) -> set[str]:
    pages = s3().get_paginator("list_objects_v2").paginate(Bucket=FOLDER_BUCKET, Prefix=prefix)
    return {item["Key"] for page in pages for item in page.get("Contents", [])}


def text(key: str) -> str:
    return s3().get_object(Bucket=FOLDER_BUCKET, Key=key)["Body"].read().decode()


def submit(spec: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    return usecases.submit(services(), OWNER, spec)


def wait_done(job_id: str, timeout_s: float = 180) -> dict[str, Any]:
    wait_until(lambda: (row := repo.get_job(services().db, job_id)) and row["finished_at"] is not None, timeout_s=timeout_s, what=f"folder job {job_id}")
    return usecases.status(services(), OWNER, job_id)


def by_key(job_id: str) -> dict[str, dict[str, Any]]:
    return {f["key"]: f for f in usecases.files(services(), OWNER, job_id)["files"]}


def report(job_id: str, prefix: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text(f"{prefix}_batchlane/{job_id}/report.jsonl").splitlines()]


@pytest.fixture(scope="module")
def stack(migrated_url: str, stack_starter: Any) -> Any:  # type: ignore[no-untyped-def]
    started = stack_starter(migrated_url, faults="time_scale=36000")
    yield started
    started.stop()
    assert not (started.grants and started.grants.denials), started.grants.denials


def test_a_folder_converts_alongside_bad_files_get_error_ids_and_the_record_lands(stack: Any) -> None:
    prefix = "alongside/"
    good = {"a.pdf": make_pdf(3, title="A"), "sub/b.pdf": make_pdf(2, title="B"), "sub/deeper/c.pdf": make_pdf(4, title="C")}
    bad = {"broken.pdf": b"%PDF-1.7\n" + b"x" * 200, "locked.pdf": encrypted_pdf(make_pdf(2), "pw"), "notes.txt": b"hello"}
    put_folder(prefix, {**good, **bad})

    status, created = submit({"input": {"folder": f"s3://{FOLDER_BUCKET}/{prefix}", "include": ["*.pdf", "*.txt"]}})
    assert created and status["id"].startswith("fj-")
    done = wait_done(status["id"])

    assert done["status"] == "completed_with_failures", done
    assert done["files"] == {"discovered": 6, "excluded": 0, "queued": 0, "processing": 0, "completed": 3, "failed": 3, "skipped": 0}
    assert done["pages"]["completed"] == 9
    files = by_key(status["id"])
    assert {k: f["error_id"] for k, f in files.items() if f["status"] == "failed"} == {
        prefix + "broken.pdf": "PDF_CORRUPT",
        prefix + "locked.pdf": "PDF_ENCRYPTED",
        prefix + "notes.txt": "NOT_PDF",
    }
    for name, pages in (("a", 3), ("sub/b", 2), ("sub/deeper/c", 4)):
        markdown = text(f"{prefix}{name}.md")
        assert page_phrase(pages, pages) in markdown, name  # the document's own last page, next to its source
    lines = report(status["id"], prefix)
    assert [line["key"] for line in lines] == sorted(files)
    assert "".join(usecases.report(services(), OWNER, status["id"])) == text(f"{prefix}_batchlane/{status['id']}/report.jsonl")
    manifest = json.loads(text(f"{prefix}_batchlane/{status['id']}/manifest.json"))
    assert manifest["spec"]["output"] == {"folder": f"s3://{FOLDER_BUCKET}/{prefix}", "layout": "alongside", "on_existing": "skip"}
    assert manifest["files"]["completed"] == 3 and manifest["batchlane_version"]

    # The same spec again: the same job, nothing converted twice.
    again, created_again = submit({"input": {"folder": f"s3://{FOLDER_BUCKET}/{prefix}", "include": ["*.txt", "*.pdf"]}})
    assert not created_again and again["id"] == status["id"] and again["status"] == "completed_with_failures"

    # A new job over the same folder (replace → a different spec) never takes our .md or _batchlane/ as inputs.
    other, _ = submit({"input": {"folder": f"s3://{FOLDER_BUCKET}/{prefix}"}, "output": {"on_existing": "skip"}, "policy": {"max_retries": 1}})
    rerun = wait_done(other["id"])
    assert rerun["files"]["discovered"] == 5  # 5 PDFs; the .md outputs, the report and the manifest were passed over
    assert rerun["files"]["skipped"] == 3 and rerun["files"]["completed"] == 0, (rerun, by_key(other["id"]))  # skip: their outputs exist


def api(stack: Any, method: str, path: str, body: Any = None, *, user: str = OWNER) -> tuple[int, Any]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        stack.env["BATCHLANE_API_URL"] + path,
        data=json.dumps(body if body is not None else {}).encode() if method == "POST" else None,
        method=method,
        headers={"Authorization": f"Bearer local:{user}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read().decode()
            return response.status, raw if path.endswith("/report") else json.loads(raw)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_api_submits_once_answers_only_the_owner_and_refuses_bad_folders(stack: Any) -> None:
    prefix = "api/"
    put_folder(prefix, {"one.pdf": make_pdf(2), "two.pdf": make_pdf(3)})
    spec = {"input": {"folder": f"s3://{FOLDER_BUCKET}/{prefix}"}, "output": {"layout": "mirror", "folder": f"s3://{FOLDER_BUCKET}/api-out/"}}

    code, dry = api(stack, "POST", "/api/v1/folder-jobs?dry_run=true", spec)
    assert code == 200 and dry["created"] is False and dry["files"]["to_convert"] == 2
    assert dry["pages"] == {"total": 5, "method": "exact", "files_inspected": 2}
    assert float(dry["estimate"]["batchUsd"]) < float(dry["estimate"]["onDemandUsd"])
    assert repo.get_job(services().db, folder_job_id(parse_spec(spec), OWNER)) is None  # nothing created

    code, first = api(stack, "POST", "/api/v1/folder-jobs", spec)
    assert code == 201
    code, second = api(stack, "POST", "/api/v1/folder-jobs", spec)
    assert code == 200 and second["id"] == first["id"]
    assert api(stack, "GET", f"/api/v1/folder-jobs/{first['id']}", user="mallory")[0] == 404
    assert api(stack, "GET", f"/api/v1/folder-jobs/{first['id']}/report", user="mallory")[0] == 404
    wait_done(first["id"])
    code, done = api(stack, "GET", f"/api/v1/folder-jobs/{first['id']}")
    assert code == 200 and done["status"] == "completed" and done["files"]["completed"] == 2 and done["eta_seconds"] == 0
    assert done["throughput_pages_per_minute"] > 0
    assert keys("api-out/") >= {"api-out/one.md", "api-out/two.md", f"api-out/_batchlane/{first['id']}/report.jsonl"}
    code, body = api(stack, "GET", f"/api/v1/folder-jobs/{first['id']}/report")
    assert code == 200 and [json.loads(line)["key"] for line in body.splitlines()] == ["api/one.pdf", "api/two.pdf"]
    code, listed = api(stack, "GET", f"/api/v1/folder-jobs/{first['id']}/files?status=completed")
    assert [f["output_uris"] for f in listed["files"]] == [[f"s3://{FOLDER_BUCKET}/api-out/one.md"], [f"s3://{FOLDER_BUCKET}/api-out/two.md"]]

    for bad, error_id in (
        ({"input": {"folder": f"s3://{FOLDER_BUCKET}/{prefix[:-1]}"}}, "FOLDER_URI_NO_SLASH"),
        ({"input": {"folder": "s3://someone-elses-bucket/docs/"}}, "FOLDER_NOT_ALLOWED"),
    ):
        code, error = api(stack, "POST", "/api/v1/folder-jobs", bad)
        assert (code, error["code"]) == (400, error_id)
