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
from batchlane.domain.errors import Conflict, InputError
from batchlane.folders import usecases
from batchlane.folders.spec import folder_job_id, parse_spec
from batchlane.runtime import services
from batchlane_dev.contract import component_errors
from batchlane_dev.local.jobs import wait_until
from batchlane_dev.local.pdfgen import encrypted_pdf, make_pdf, page_phrase
from batchlane_dev.local.stack import FOLDER_BUCKET, owner_home
from tests.integration.test_api import estimate

OWNER = "tester"
HOME = owner_home(OWNER)  # the folder granted to OWNER offline (users/{owner}/)


def s3() -> Any:
    import os

    return boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")


def put_folder(prefix: str, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        s3().put_object(Bucket=FOLDER_BUCKET, Key=HOME + prefix + name, Body=data)


def keys(prefix: str) -> set[str]:
    pages = s3().get_paginator("list_objects_v2").paginate(Bucket=FOLDER_BUCKET, Prefix=HOME + prefix)
    return {item["Key"].removeprefix(HOME) for page in pages for item in page.get("Contents", [])}


def text(key: str) -> str:
    return s3().get_object(Bucket=FOLDER_BUCKET, Key=HOME + key)["Body"].read().decode()


def submit(spec: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    return usecases.submit(services(), OWNER, spec)


def wait_done(job_id: str, timeout_s: float = 180) -> dict[str, Any]:
    wait_until(lambda: (row := repo.PgFolderJobs(services().db).get(job_id)) and row.finished_at is not None, timeout_s=timeout_s, what=f"folder job {job_id}")
    return usecases.status(services(), OWNER, job_id)


def executions(job_id: str) -> dict[str, str]:
    """The folder job's executions (one per run) and their statuses."""
    import os

    sfn = boto3.client("stepfunctions", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    listed = sfn.list_executions(stateMachineArn=services().workflows.folder_job_arn, maxResults=1000)["executions"]
    return {e["name"]: e["status"] for e in listed if e["name"].startswith(f"folder-{job_id}-")}


def by_key(job_id: str) -> dict[str, dict[str, Any]]:
    return {f["key"].removeprefix(HOME): f for f in usecases.files(services(), OWNER, job_id)["files"]}


def report(job_id: str, prefix: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in text(f"{prefix}_batchlane/{job_id}/report.jsonl").splitlines()]
    return [{**line, "key": line["key"].removeprefix(HOME)} for line in lines]


@pytest.fixture(scope="module")
def stack(migrated_url: str, stack_starter: Any) -> Any:  # type: ignore[no-untyped-def]
    # Two documents in flight per folder job: enough to see queued files wait for the cap. One turn
    # per execution: every job that needs a second turn hands over to a new execution (history limit).
    started = stack_starter(
        migrated_url, faults="time_scale=36000", extra_env={"BATCHLANE_FOLDER_MAX_IN_FLIGHT": "2", "BATCHLANE_FOLDER_TURNS_PER_EXECUTION": "1"}
    )
    yield started
    started.stop()
    assert not (started.grants and started.grants.denials), started.grants.denials


def test_a_folder_converts_alongside_bad_files_get_error_ids_and_the_record_lands(stack: Any) -> None:
    prefix = "alongside/"
    good = {"a.pdf": make_pdf(3, title="A"), "sub/b.pdf": make_pdf(2, title="B"), "sub/deeper/c.pdf": make_pdf(4, title="C")}
    bad = {"broken.pdf": b"%PDF-1.7\n" + b"x" * 200, "locked.pdf": encrypted_pdf(make_pdf(2), "pw"), "notes.txt": b"hello"}
    put_folder(prefix, {**good, **bad})

    status, created = submit({"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}{prefix}", "include": ["*.pdf", "*.txt"]}})
    assert created and status["id"].startswith("fj-")
    done = wait_done(status["id"])

    assert done["status"] == "completed_with_failures", done
    runs = wait_until(lambda: (e := executions(status["id"])) and "RUNNING" not in e.values() and e, what="the last run to end")
    assert len(runs) >= 3 and all(r == "SUCCEEDED" for r in runs.values()), runs  # 6 files, 2 at a time: handed over, never lost
    assert done["files"] == {"discovered": 6, "excluded": 0, "queued": 0, "processing": 0, "completed": 3, "failed": 3, "skipped": 0}
    assert done["pages"]["completed"] == 9
    files = by_key(status["id"])
    assert {k: (f["error"] or {}).get("code") for k, f in files.items() if f["status"] == "failed"} == {
        prefix + "broken.pdf": "PDF_CORRUPT",
        prefix + "locked.pdf": "PDF_ENCRYPTED",
        prefix + "notes.txt": "FILE_TYPE_UNSUPPORTED",  # issue 43: NOT_PDF before
    }
    for name, pages in (("a", 3), ("sub/b", 2), ("sub/deeper/c", 4)):
        markdown = text(f"{prefix}{name}.md")
        assert page_phrase(pages, pages) in markdown, name  # the document's own last page, next to its source
    lines = report(status["id"], prefix)
    assert [line["key"] for line in lines] == sorted(files)
    assert "".join(usecases.report(services(), OWNER, status["id"])) == text(f"{prefix}_batchlane/{status['id']}/report.jsonl")
    manifest = json.loads(text(f"{prefix}_batchlane/{status['id']}/manifest.json"))
    assert manifest["spec"]["output"] == {"folder": f"s3://{FOLDER_BUCKET}/{HOME}{prefix}", "layout": "alongside", "onExisting": "skip"}
    assert manifest["files"]["completed"] == 3 and manifest["batchlaneVersion"]
    assert component_errors(manifest, "FolderManifest") == []  # camelCase like every JSON the product writes (issue 41.3)
    assert [component_errors(line, "FolderReportLine") for line in lines] == [[]] * len(lines)

    # The same spec again: the same job, nothing converted twice.
    again, created_again = submit({"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}{prefix}", "include": ["*.txt", "*.pdf"]}})
    assert not created_again and again["id"] == status["id"] and again["status"] == "completed_with_failures"

    # A new job over the same folder (replace → a different spec) never takes our .md or _batchlane/ as inputs.
    other, _ = submit({"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}{prefix}"}, "output": {"onExisting": "skip"}, "policy": {"maxRetries": 1}})
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
    spec = {"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}{prefix}"}, "output": {"layout": "mirror", "folder": f"s3://{FOLDER_BUCKET}/{HOME}api-out/"}}

    code, dry = estimate(stack, "/api/v1/folder-jobs?dry_run=true", spec, user=OWNER)
    assert code == 200 and dry["created"] is False and dry["files"]["toConvert"] == 2
    assert {k: dry["pages"][k] for k in ("total", "low", "high", "method", "filesInspected")} == {  # camelCase (issue 24)
        "total": 5,
        "low": 5,
        "high": 5,
        "method": "exact",
        "filesInspected": 2,
    }
    assert float(dry["estimate"]["batchUsd"]) < float(dry["estimate"]["onDemandUsd"])
    assert repo.PgFolderJobs(services().db).get(folder_job_id(parse_spec(spec), OWNER)) is None  # nothing created

    code, first = api(stack, "POST", "/api/v1/folder-jobs", spec)
    assert code == 201
    code, second = api(stack, "POST", "/api/v1/folder-jobs", spec)
    assert code == 200 and second["id"] == first["id"]
    assert api(stack, "GET", f"/api/v1/folder-jobs/{first['id']}", user="mallory")[0] == 404
    assert api(stack, "GET", f"/api/v1/folder-jobs/{first['id']}/report", user="mallory")[0] == 404
    wait_done(first["id"])
    code, done = api(stack, "GET", f"/api/v1/folder-jobs/{first['id']}")
    assert code == 200 and done["status"] == "completed" and done["files"]["completed"] == 2 and done["etaSeconds"] == 0
    assert done["throughputPagesPerMinute"] > 0
    assert keys("api-out/") >= {"api-out/one.md", "api-out/two.md", f"api-out/_batchlane/{first['id']}/report.jsonl"}
    assert {"api-out/one.pages.jsonl", "api-out/two.pages.jsonl"} <= keys("api-out/"), "the per-page record beside each Markdown"
    code, body = api(stack, "GET", f"/api/v1/folder-jobs/{first['id']}/report")
    assert code == 200 and [json.loads(line)["key"].removeprefix(HOME) for line in body.splitlines()] == ["api/one.pdf", "api/two.pdf"]
    code, again = estimate(stack, "/api/v1/folder-jobs?dry_run=true", spec, user=OWNER)
    assert (again["files"]["toConvert"], again["files"]["alreadyProcessed"]) == (0, 2)  # their mirrored outputs exist
    code, listed = api(stack, "GET", f"/api/v1/folder-jobs/{first['id']}/files?status=completed")
    assert [f["outputUris"] for f in listed["files"]] == [[f"s3://{FOLDER_BUCKET}/{HOME}api-out/one.md"], [f"s3://{FOLDER_BUCKET}/{HOME}api-out/two.md"]]

    high = {**spec, "policy": {"priority": "high"}}
    code, error = api(stack, "POST", "/api/v1/folder-jobs", high)  # skipping the batch lane needs the priority group
    assert (code, error["error"]["code"]) == (403, "FORBIDDEN")
    code, _ = api(stack, "POST", "/api/v1/folder-jobs", high, user=f"{OWNER};groups=batchlane-priority")
    assert code == 201
    for bad, error_id in (
        ({"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}{prefix[:-1]}"}}, "FOLDER_URI_NO_SLASH"),
        ({"input": {"folder": "s3://someone-elses-bucket/docs/"}}, "FOLDER_NOT_ALLOWED"),
        ({"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}{prefix}"}, "options": {"modelId": "some.other-model"}}, "MODEL_NOT_ALLOWED"),
    ):
        code, error = api(stack, "POST", "/api/v1/folder-jobs", bad)
        assert (code, error["error"]["code"]) == (400, error_id)


def test_bad_folders_are_job_errors_and_bad_files_are_file_errors(stack: Any) -> None:
    put_folder("nopdf/", {"a.txt": b"x", "b.png": b"y"})  # neither in the default include (a picture only when asked: issue 43)
    put_folder("limits/", {"short.pdf": make_pdf(2), "long.pdf": make_pdf(5)})
    put_folder("flat/", {"x/report.pdf": make_pdf(2), "y/report.pdf": make_pdf(2), "z/other.pdf": make_pdf(2)})
    empty, _ = submit({"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}nothing-here/"}})
    nopdf, _ = submit({"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}nopdf/"}})
    limits, _ = submit({"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}limits/"}, "policy": {"maxPagesPerDocument": 3}})
    flat, _ = submit(
        {"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}flat/"}, "output": {"layout": "flat", "folder": f"s3://{FOLDER_BUCKET}/{HOME}flat-out/"}}
    )

    assert (wait_done(empty["id"])["status"], wait_done(empty["id"])["error"]["code"]) == ("error", "FOLDER_EMPTY")
    no_pdf = wait_done(nopdf["id"])
    assert (no_pdf["status"], no_pdf["error"]["code"], no_pdf["files"]["excluded"]) == ("error", "FOLDER_NO_PDF", 2)
    assert wait_done(limits["id"])["status"] == "completed_with_failures"
    assert {k: (f["error"] or {}).get("code") for k, f in by_key(limits["id"]).items()} == {"limits/long.pdf": "PDF_TOO_MANY_PAGES", "limits/short.pdf": None}
    assert wait_done(flat["id"])["files"]["completed"] == 2
    assert {k: (f["error"] or {}).get("code") for k, f in by_key(flat["id"]).items()} == {
        "flat/x/report.pdf": None,
        "flat/y/report.pdf": "OUTPUT_COLLISION",
        "flat/z/other.pdf": None,
    }
    assert {"flat-out/report/report.md", "flat-out/other/other.md"} <= keys("flat-out/")
    assert page_phrase(2, 2) in text("flat-out/report/report.md")


def test_include_exclude_recursive_and_an_explicit_file_list(stack: Any) -> None:
    put_folder("globs/", {"keep.pdf": make_pdf(1), "drafts/skip.pdf": make_pdf(1), "sub/deep.pdf": make_pdf(1), "sub/x.PDF": make_pdf(1)})
    flat_only, _ = submit({"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}globs/", "recursive": False}})
    globbed, _ = submit({"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}globs/", "exclude": ["drafts/*"]}, "output": {"onExisting": "replace"}})
    listed, _ = submit(
        {
            "input": {"files": [f"s3://{FOLDER_BUCKET}/{HOME}globs/sub/deep.pdf", f"s3://{FOLDER_BUCKET}/{HOME}globs/missing.pdf"]},
            "output": {"layout": "mirror", "folder": f"s3://{FOLDER_BUCKET}/{HOME}listed-out/"},
        }
    )
    assert set(by_key(flat_only["id"]) if wait_done(flat_only["id"]) else ()) == {"globs/keep.pdf"}
    done = wait_done(globbed["id"])
    assert set(by_key(globbed["id"])) == {"globs/keep.pdf", "globs/sub/deep.pdf", "globs/sub/x.PDF"} and done["files"]["excluded"] == 1
    wait_done(listed["id"])
    assert {k: (f["status"], (f["error"] or {}).get("code")) for k, f in by_key(listed["id"]).items()} == {
        "globs/sub/deep.pdf": ("completed", None),
        "globs/missing.pdf": ("failed", "FILE_MISSING"),
    }
    assert "listed-out/sub/deep.md" in keys("listed-out/")  # mirrored below the list's common folder, globs/


class Gate:
    """Hold every call of one function until released (the files stay in flight meanwhile)."""

    def __init__(self, stack: Any, function: str) -> None:
        import threading

        self.released = threading.Event()
        registry, original = stack.registry, stack.registry.invoke

        def invoke(target: str, event: Any) -> Any:
            if registry.logical_name(target) == function:
                self.released.wait(120)
            return original(target, event)

        registry.invoke = invoke
        self._restore = lambda: setattr(registry, "invoke", original)

    def release(self) -> None:
        self.released.set()
        self._restore()


def test_cancel_skips_queued_files_lets_in_flight_ones_finish_and_a_resubmit_resumes(stack: Any) -> None:
    prefix = "cancel/"
    put_folder(prefix, {f"doc{i}.pdf": make_pdf(2) for i in range(5)})
    spec = {"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}{prefix}"}}
    gate = Gate(stack, "job_split")  # the first two conversions are held while they split
    try:
        status, _ = submit(spec)
        wait_until(lambda: usecases.status(services(), OWNER, status["id"])["files"]["processing"] == 2, timeout_s=60, what="two files in flight")
        cancelled = usecases.cancel(services(), OWNER, status["id"])
        assert cancelled["status"] == "cancelled" and cancelled["files"]["skipped"] == 3
    finally:
        gate.release()
    done = wait_done(status["id"])
    assert done["files"]["completed"] == 2 and done["files"]["skipped"] == 3 and done["status"] == "cancelled"
    assert len(report(status["id"], prefix)) == 5
    with pytest.raises(Conflict):
        usecases.cancel(services(), OWNER, status["id"])

    again, created = submit(spec)  # skip: the same id resumes, converting only what was skipped
    assert not created and again["id"] == status["id"]
    resumed = wait_done(status["id"])
    assert (resumed["status"], resumed["files"]["completed"], resumed["files"]["skipped"]) == ("completed", 5, 0)
    attempts = {k: f["attempts"] for k, f in by_key(status["id"]).items()}
    assert sorted(attempts.values()) == [1, 1, 1, 1, 1]  # nothing converted twice


def test_retry_by_error_id_requeues_only_those_files(stack: Any) -> None:
    prefix = "retry/"
    put_folder(prefix, {"good.pdf": make_pdf(2), "locked.pdf": encrypted_pdf(make_pdf(2), "pw"), "broken.pdf": b"%PDF-1.4 broken"})
    status, _ = submit({"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}{prefix}"}})
    assert wait_done(status["id"])["files"]["failed"] == 2
    assert {f["key"].removeprefix(HOME) for f in usecases.files(services(), OWNER, status["id"], status_filter="failed")["files"]} == {
        prefix + "locked.pdf",
        prefix + "broken.pdf",
    }
    put_folder(prefix, {"locked.pdf": make_pdf(3)})  # the user fixed one of them

    retried = usecases.retry(services(), OWNER, status["id"], error_ids=["PDF_ENCRYPTED"])
    assert retried["requeued"] == 1
    done = wait_done(status["id"])
    files = by_key(status["id"])
    assert (done["status"], files[prefix + "locked.pdf"]["status"], (files[prefix + "broken.pdf"]["error"] or {}).get("code")) == (
        "completed_with_failures",
        "completed",
        "PDF_CORRUPT",
    )
    assert files[prefix + "good.pdf"]["attempts"] == 1 and files[prefix + "locked.pdf"]["attempts"] == 2
    assert page_phrase(3, 3) in text(prefix + "locked.md")
    with pytest.raises(InputError):
        usecases.files(services(), OWNER, status["id"], status_filter="nonsense")


def test_the_report_resumes_a_job_whose_database_was_lost(stack: Any) -> None:
    prefix = "resume/"
    put_folder(prefix, {"a.pdf": make_pdf(2), "b.pdf": make_pdf(2)})
    spec = {"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}{prefix}"}, "output": {"layout": "mirror", "folder": f"s3://{FOLDER_BUCKET}/{HOME}resume-out/"}}
    first, _ = submit(spec)
    assert wait_done(first["id"])["files"]["completed"] == 2
    s3().delete_object(Bucket=FOLDER_BUCKET, Key=HOME + "resume-out/a.md")  # only the report still says a.pdf was converted
    db = services().db
    db.run("DELETE FROM folder_jobs WHERE id = :id", id=first["id"])  # the database lost the job
    conversions = db.one("SELECT count(*) AS n FROM large_conversion_jobs")["n"]

    again, created = submit(spec)
    assert created and again["id"] == first["id"]
    done = wait_done(first["id"])
    assert (done["files"]["skipped"], done["files"]["completed"]) == (2, 0)
    assert {(f["error"] or {}).get("code") for f in by_key(first["id"]).values()} == {"ALREADY_CONVERTED"}
    assert db.one("SELECT count(*) AS n FROM large_conversion_jobs")["n"] == conversions  # nothing converted (or billed) again


def test_priority_high_goes_on_demand(stack: Any) -> None:
    prefix = "high/"
    put_folder(prefix, {"a.pdf": make_pdf(2)})
    status, _ = submit({"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}{prefix}"}, "policy": {"priority": "high"}})
    wait_done(status["id"])
    row = by_key(status["id"])[prefix + "a.pdf"]
    conversion = services().db.one("SELECT process_now FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=row["conversionJobId"])
    assert conversion["process_now"] is True and row["status"] == "completed"


def test_a_folder_past_one_listing_page_is_enumerated_whole(stack: Any) -> None:
    """2,500 objects: three ListObjectsV2 pages from the checkpoint (a Distributed Map offline would stop at 1,000)."""
    from concurrent.futures import ThreadPoolExecutor

    prefix = "many/"
    client = s3()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: client.put_object(Bucket=FOLDER_BUCKET, Key=f"{HOME}{prefix}a/{i:05d}.txt", Body=b"x"), range(2500)))
    put_folder(prefix, {"z/last.pdf": make_pdf(1), "z/other.pdf": make_pdf(1)})  # listed on the third page
    status, _ = submit({"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}{prefix}"}})
    done = wait_done(status["id"])
    assert (done["files"]["discovered"], done["files"]["excluded"], done["files"]["completed"]) == (2, 2500, 2)
    row = repo.PgFolderJobs(services().db).get(status["id"])
    assert row is not None and row.objects_listed == 2502 and row.continuation_token is None


def test_a_folder_job_with_a_webhook_gets_one_signed_delivery_for_its_end(stack: Any) -> None:
    from batchlane.aws.clients import client
    from tests.webhook_receiver import Receiver, readme_verify

    receiver = Receiver()
    try:
        prefix = "notify/"
        put_folder(prefix, {"a.pdf": make_pdf(2, title="A"), "b.pdf": make_pdf(3, title="B")})
        spec = {
            "input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}{prefix}"},
            "notifications": {"callbackUrl": receiver.url, "callbackHeaders": {"X-Team": "legal"}},
        }
        status, created = submit(spec)
        assert created
        job_id = status["id"]
        wait_done(job_id)
        rows = wait_until(
            lambda: (r := services().uow().deliveries.for_owner(OWNER, job_id=job_id)) and all(d.status == "delivered" for d in r) and r,
            what="the folder job's webhook to be delivered",
        )
        assert len(rows) == 1 and rows[0].event == "job.completed", rows
        (received,) = receiver.received  # one delivery, not one per status change or per file
        body = received.json
        assert body["event"] == "job.completed" and body["jobId"] == job_id and body["scope"] == "folder_job"
        assert body["status"] == "completed" and body["files"]["completed"] == 2 and body["pages"]["completed"] == 5
        assert body["outputs"]["report"] == f"s3://{FOLDER_BUCKET}/{HOME}{prefix}_batchlane/{job_id}/report.jsonl"
        assert received.headers["X-Team"] == "legal" and received.headers["Batchlane-Delivery"] == body["deliveryId"]
        secret = str(client("secretsmanager").get_secret_value(SecretId=services().settings.webhook_secret_arn)["SecretString"])
        assert readme_verify()(secret, receiver.url, received.body, received.headers["Batchlane-Signature"])
    finally:
        receiver.stop()


def test_a_folder_job_refuses_a_bad_callback_before_anything_starts(stack: Any) -> None:
    with pytest.raises(InputError) as bad:
        submit({"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}notify/"}, "notifications": {"callbackUrl": "ftp://example.com/x"}})
    assert bad.value.error_id == "CALLBACK_INVALID"
    with pytest.raises(InputError) as wrong_event:
        submit(
            {
                "input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}notify/"},
                "notifications": {"callbackUrl": "https://example.com/x", "callbackEvents": ["job.waiting_batch"]},
            }
        )
    assert wrong_event.value.error_id == "CALLBACK_INVALID"


def test_a_file_whose_first_conversion_fails_is_converted_again_within_max_retries(stack: Any) -> None:
    from batchlane_dev.local.lambda_runtime import Invocation

    prefix = "retries/"
    put_folder(prefix, {"flaky.pdf": make_pdf(2, title="F"), "broken.pdf": b"%PDF-1.7\n" + b"x" * 200})
    failed_once: set[str] = set()

    def split_crashes_on_the_first_conversion_of_flaky(event: Any, call_real: Any) -> Any:
        """The first conversion of flaky.pdf loses its split (every attempt): the intake fails it SPLIT_FAILED."""
        job_id = str(event["jobId"])
        row = services().db.one("SELECT f.s3_key FROM large_conversion_jobs j JOIN files f ON f.id = j.file_id WHERE j.id = CAST(:id AS uuid)", id=job_id)
        if row and row["s3_key"] == HOME + prefix + "flaky.pdf" and (not failed_once or job_id in failed_once):
            failed_once.add(job_id)
            return Invocation(error_type="Runtime.ExitError", error_message="the split's Lambda died")
        return call_real(event)

    stack.registry.intercept("job_split", split_crashes_on_the_first_conversion_of_flaky)
    try:
        status, _ = submit({"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}{prefix}"}, "policy": {"maxRetries": 1}})
        done = wait_done(status["id"])
    finally:
        stack.registry.intercept("job_split", None)
    files = by_key(status["id"])
    assert len(failed_once) == 1  # the fault did fail one conversion
    flaky, broken = files[prefix + "flaky.pdf"], files[prefix + "broken.pdf"]
    assert flaky["status"] == "completed" and flaky["attempts"] == 2 and (flaky["error"] or {}).get("code") is None, flaky
    assert broken["status"] == "failed" and (broken["error"] or {}).get("code") == "PDF_CORRUPT" and broken["attempts"] == 1, broken  # the document: never retried
    assert done["status"] == "completed_with_failures" and done["files"]["completed"] == 1
    assert page_phrase(2, 2) in text(prefix + "flaky.md")


def test_a_deadline_inside_the_batch_turnaround_sends_the_files_on_demand_and_the_report_says_why(stack: Any) -> None:
    from datetime import UTC, datetime, timedelta

    prefix = "deadline/"
    put_folder(prefix, {"a.pdf": make_pdf(2)})
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    with pytest.raises(InputError) as refused:
        submit({"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}{prefix}"}, "policy": {"deadline": past}})
    assert refused.value.error_id == "DEADLINE_PAST"

    # The offline stack's batch turnaround is (24 h + 2 h) / time_scale: a deadline an hour away leaves it room...
    roomy = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    status, _ = submit({"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}{prefix}"}, "policy": {"deadline": roomy}})
    wait_done(status["id"])
    (line,) = report(status["id"], prefix)
    assert line["laneReason"] != "deadline" and line["status"] == "completed", line

    # ...and one closer than the turnaround (minus the time left) does not: the file goes on-demand.
    # (submit is one in-process call, milliseconds after this line; 90 % of the turnaround leaves it the rest, and a
    # deadline that passes after submit still sends the file on-demand: the lane decision is "less time than a turnaround")
    tight = (datetime.now(UTC) + timedelta(hours=services().settings.batch_deadline_hours * 0.9)).isoformat()
    status, _ = submit({"input": {"folder": f"s3://{FOLDER_BUCKET}/{HOME}{prefix}"}, "output": {"onExisting": "replace"}, "policy": {"deadline": tight}})
    wait_done(status["id"])
    row = by_key(status["id"])[prefix + "a.pdf"]
    conversion = services().db.one("SELECT process_now FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=row["conversionJobId"])
    assert conversion["process_now"] is True and row["status"] == "completed"
    (line,) = report(status["id"], prefix)
    assert (line["lane"], line["laneReason"]) == ("on_demand", "deadline"), line


def test_a_folder_job_waits_for_its_owners_live_job_places_instead_of_failing_files(stack: Any) -> None:
    """The owner's live-job cap (issue 15) is lower than the folder's in-flight cap: files wait for places; none fails."""
    from batchlane.db import budgets

    owner = "capped-owner"
    budgets.PgBudgets(services().db).set_override(owner, usd_per_month=None, max_live_jobs=1, max_live_pages=None, updated_by="test")
    prefix = "capped/"
    for i in range(4):
        s3().put_object(Bucket=FOLDER_BUCKET, Key=f"{owner_home(owner)}{prefix}d{i}.pdf", Body=make_pdf(1 + i % 2))
    status, _ = usecases.submit(services(), owner, {"input": {"folder": f"s3://{FOLDER_BUCKET}/{owner_home(owner)}{prefix}"}})
    wait_until(lambda: (row := repo.PgFolderJobs(services().db).get(status["id"])) and row.finished_at is not None, timeout_s=180, what="the capped folder job")
    done = usecases.status(services(), owner, status["id"])
    assert done["status"] == "completed" and done["files"]["completed"] == 4 and done["files"]["failed"] == 0, done


def test_the_api_takes_a_camel_case_spec_and_its_report_lines_are_camel_case(stack: Any) -> None:
    """Issues 24.4, 41.3: the documented spec is camelCase, the only spelling (a snake_case name is SPEC_INVALID)."""
    prefix = "camel/"
    put_folder(prefix, {"one.pdf": make_pdf(2)})
    folder = f"s3://{FOLDER_BUCKET}/{HOME}{prefix}"
    code, first = api(stack, "POST", "/api/v1/folder-jobs", {"input": {"folder": folder}, "output": {"onExisting": "replace"}, "policy": {"maxRetries": 0}})
    assert code == 201, first
    assert first["spec"]["output"]["onExisting"] == "replace" and first["spec"]["policy"]["maxRetries"] == 0
    code, legacy = api(stack, "POST", "/api/v1/folder-jobs", {"input": {"folder": folder}, "output": {"on_existing": "replace"}, "policy": {"max_retries": 0}})
    assert (code, legacy["error"]["code"]) == (400, "SPEC_INVALID")  # the old names are gone (decision 0031)
    wait_done(first["id"])
    code, body = api(stack, "GET", f"/api/v1/folder-jobs/{first['id']}/report")
    (line,) = [json.loads(raw) for raw in body.splitlines()]
    assert code == 200 and (line["status"], line["pagesFailed"], (line["error"] or {}).get("code"), line["outputKeys"]) == ("completed", 0, None, [f"{HOME}camel/one.md"])
    assert [k for k in line if "_" in k] == []  # no snake_case name beside any more
    assert report(first["id"], prefix)[0]["costUsd"] == line["costUsd"]  # report.jsonl in the bucket: the same lines
