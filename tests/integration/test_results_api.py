"""Results reach the user (issue 14): download, failed pages, retry of only those, dry run.

Over HTTP against the offline stack (the real api handler, real PostgreSQL, moto S3, the
Step Functions emulation running the same conversion machine). Failed pages are made
deterministically by the Bedrock emulator's ``refuse_pages`` fault (answers for those pages
are declined, stopReason content_filtered), which the test then lifts, as a transient
refusal passes, before retrying.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from botocore.exceptions import ClientError
from held import HeldInvocations

from batchlane import keys
from batchlane.aws.clients import client
from batchlane.aws.s3 import lifecycle_expiry
from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.runtime import services
from batchlane_dev.cli.jobs_commands import post_upload
from batchlane_dev.local.bedrock import parse_faults
from batchlane_dev.local.jobs import wait_until
from batchlane_dev.local.lambda_runtime import Invocation
from batchlane_dev.local.pdfgen import make_pdf, page_phrase
from tests.e2e.batchlib import assert_converted_whole, assert_retries_booked
from tests.integration.test_api import estimate

PAGES, PER_CHUNK, REFUSED = 9, 3, (2, 5)  # chunk 0 holds page 2, chunk 1 page 5, chunk 2 nothing refused
BASE_FAULTS = "time_scale=36000"


@pytest.fixture(scope="module")
def stack(migrated_url, stack_starter):  # type: ignore[no-untyped-def]
    started = stack_starter(
        migrated_url,
        faults=f"{BASE_FAULTS},refuse_pages={'+'.join(map(str, REFUSED))}",
        batch_lane=False,
        schedules=False,
        extra_env={"BATCHLANE_PAGES_PER_CHUNK": str(PER_CHUNK)},
    )
    yield started
    started.stop()


@pytest.fixture
def owner(stack):  # type: ignore[no-untyped-def]
    name = f"user-{uuid.uuid4().hex[:8]}"
    yield name
    stack.bedrock.set_runtime_faults(parse_faults(f"{BASE_FAULTS},refuse_pages={'+'.join(map(str, REFUSED))}"))
    for name_ in ("chunk_processor",):
        stack.registry.intercept(name_, None)
    services().db.run("DELETE FROM files WHERE owner_id = :owner", owner=name)


def call(stack: Any, method: str, path: str, body: Any = None, *, user: str) -> tuple[int, dict[str, Any]]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer local:{user}"}
    request = urllib.request.Request(stack.env["BATCHLANE_API_URL"] + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def upload(stack: Any, owner: str, data: bytes, name: str = "report.pdf") -> str:
    status, registered = call(stack, "POST", "/api/v1/files", {"name": name, "sizeBytes": len(data)}, user=owner)
    assert status == 201, registered
    assert post_upload(registered["upload"], data) == 204
    return str(registered["fileId"])


def job(job_id: str) -> job_repo.JobRow:
    row = job_repo.PgJobs(services().db).get_job(job_id)
    assert row is not None
    return row


def converted_with_failed_pages(stack: Any, owner: str) -> tuple[str, str]:
    """Upload and convert a 9-page PDF; pages 2 and 5 come back refused (failed)."""
    file_id = upload(stack, owner, make_pdf(PAGES))
    status, created = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)
    assert status == 202, created
    job_id = created["jobId"]
    wait_until(lambda: job(job_id).status in ("completed", "failed"), what="the conversion")
    assert (job(job_id).status, job(job_id).pages_failed) == ("completed", len(REFUSED)), job(job_id)
    return file_id, job_id


def markdown(job_id: str) -> str:
    return services().store.get_bytes(keys.markdown_key(job_id)).decode()


def section(text: str, number: int) -> str:
    """The page's part of the Markdown: from its marker to the next page's."""
    start = text.index(f"<!-- Page {number}")
    end = text.find("<!-- Page", start + 5)
    return text[start : end if end != -1 else len(text)]


def execution_status(name: str) -> str | None:
    arn = (services().workflows.conversion_arn or "").replace(":stateMachine:", ":execution:")
    try:
        return str(client("stepfunctions").describe_execution(executionArn=f"{arn}:{name}")["status"])
    except ClientError:
        return None


def lift_refusals(stack: Any) -> None:
    stack.bedrock.set_runtime_faults(parse_faults(BASE_FAULTS))


# -- failed pages ------------------------------------------------------------------------------
def test_failed_pages_are_listed_with_reason_attempts_and_lane_owner_only(stack, owner):
    _, job_id = converted_with_failed_pages(stack, owner)
    status, body = call(stack, "GET", f"/api/v1/jobs/{job_id}/pages?status=failed", user=owner)
    assert status == 200, body
    assert [p["page"] for p in body["pages"]] == list(REFUSED) and body["count"] == len(REFUSED)
    for page in body["pages"]:
        assert page["reason"] == "stop_reason=refusal" and page["attempts"] == 1 and page["lane"] == "on_demand"
    for refused in REFUSED:
        assert f"<!-- Page {refused}: failed (stop_reason=refusal) -->" in markdown(job_id)
    assert call(stack, "GET", f"/api/v1/jobs/{job_id}/pages?status=failed", user=f"other-{owner}")[0] == 404
    assert call(stack, "GET", f"/api/v1/jobs/{job_id}/pages?status=converted", user=owner)[1]["error"]["code"] == "BAD_REQUEST"


# -- download ----------------------------------------------------------------------------------
def test_download_is_a_sigv4_presigned_url_for_the_owner_with_the_object_expiry(stack, owner):
    _, job_id = converted_with_failed_pages(stack, owner)
    status, body = call(stack, "GET", f"/api/v1/jobs/{job_id}/markdown", user=owner)
    assert status == 200, body
    query = urllib.parse.parse_qs(urllib.parse.urlparse(body["url"]).query)
    assert "X-Amz-Signature" in query and query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"] and "Signature" not in query
    assert int(query["X-Amz-Expires"][0]) == body["expiresInSeconds"] <= 900
    with urllib.request.urlopen(body["url"], timeout=30) as response:
        assert response.read().decode() == markdown(job_id)
    assert body["fileName"] == "report.md" and body["retentionDays"] == 14 and body["pagesFailed"] == len(REFUSED)
    assert body["pages"]["fileName"] == "report.pages.jsonl"
    with urllib.request.urlopen(body["pages"]["url"], timeout=30) as response:
        lines = [json.loads(line) for line in response.read().decode().splitlines()]
    assert [line["page"] for line in lines] == list(range(1, len(lines) + 1)) and len(lines) > len(REFUSED)
    assert sorted(line["page"] for line in lines if line["status"] == "failed") == sorted(REFUSED)
    head = client("s3").head_object(Bucket=services().store.bucket, Key=keys.markdown_key(job_id))
    expires = datetime.fromisoformat(body["objectExpiresAt"])
    assert expires == lifecycle_expiry(head["LastModified"]) and expires.hour == 0
    assert timedelta(days=14) <= expires - head["LastModified"] < timedelta(days=15)

    foreign = call(stack, "GET", f"/api/v1/jobs/{job_id}/markdown", user=f"other-{owner}")
    assert (foreign[0], foreign[1]["error"]["code"]) == (404, "JOB_NOT_FOUND")
    assert call(stack, "GET", f"/api/v1/jobs/{uuid.uuid4()}/markdown", user=owner)[1]["error"]["code"] == "JOB_NOT_FOUND"

    # the bucket's lifecycle deleted it: a clear 410, not a broken link
    client("s3").delete_object(Bucket=services().store.bucket, Key=keys.markdown_key(job_id))
    gone = call(stack, "GET", f"/api/v1/jobs/{job_id}/markdown", user=owner)
    assert gone[0] == 410 and gone[1]["error"]["code"] == "MARKDOWN_EXPIRED" and "14 days" in gone[1]["error"]["message"]


def test_lifecycle_expiry_rounds_up_to_the_next_midnight_utc():
    assert lifecycle_expiry(datetime(2026, 1, 1, 10, 30, tzinfo=UTC)) == datetime(2026, 1, 16, tzinfo=UTC)
    assert lifecycle_expiry(datetime(2026, 1, 1, tzinfo=UTC)) == datetime(2026, 1, 15, tzinfo=UTC)


def test_download_before_the_markdown_exists_is_409(stack, owner):
    file_id = upload(stack, owner, make_pdf(3))
    with HeldChunks(stack) as held:
        job_id = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)[1]["jobId"]
        assert held.entered.wait(30)
        answer = call(stack, "GET", f"/api/v1/jobs/{job_id}/markdown", user=owner)
        assert answer[0] == 409 and answer[1]["error"]["code"] == "MARKDOWN_NOT_READY"
    wait_until(lambda: job(job_id).status == "completed", what="the conversion")


# -- retry -------------------------------------------------------------------------------------
def test_retry_converts_only_the_failed_pages_splices_them_in_order_and_books_only_their_cost(stack, owner):
    _, job_id = converted_with_failed_pages(stack, owner)
    before = job(job_id)
    first_markdown = markdown(job_id)
    untouched_chunk = job_repo.PgJobs(services().db).get_chunk(job_id, 2)
    lift_refusals(stack)
    requests_before = stack.bedrock.stats["converse_requests"]

    status, started = call(stack, "POST", f"/api/v1/jobs/{job_id}/retry", {}, user=owner)
    assert status == 202, started
    assert (started["retry"], started["pages"], started["lane"]) == (1, list(REFUSED), "on_demand")
    wait_until(lambda: execution_status(f"retry-{job_id}-1") == "SUCCEEDED", what="the retry execution")

    # only the two refused pages were sent again: one request each
    assert stack.bedrock.stats["converse_requests"] - requests_before == len(REFUSED)
    after = job(job_id)
    assert after.status == "completed" and after.pages_failed == 0 and after.error_id is None
    assert (after.retry_attempt, after.retry_pages) == (None, None) and not [k for k in after.options if k.startswith("_")]
    # the Markdown: every page once, in order, under its own marker, with its own text; money adds up
    assert_converted_whole(job_id, pages=PAGES, blank_every=0)
    # pages that were fine are byte-identical; the chunk with no failed page was not touched
    new_markdown = markdown(job_id)
    for number in (1, 3, 4, 6, 7, 9):
        assert section(first_markdown, number) == section(new_markdown, number) and page_phrase(number, PAGES) in section(new_markdown, number)
    for number in REFUSED:
        assert page_phrase(number, PAGES) in section(new_markdown, number) and page_phrase(number, PAGES) not in first_markdown
    assert job_repo.PgJobs(services().db).get_chunk(job_id, 2).result_key == untouched_chunk.result_key == keys.chunk_result_key(job_id, 2)
    # the previous version is kept; the history has both attempts
    assert services().store.get_bytes(keys.markdown_before_retry_key(job_id, 1)).decode() == first_markdown
    history = call(stack, "GET", f"/api/v1/jobs/{job_id}/retries", user=owner)[1]["retries"]
    assert [(r["retry"], r["status"], r["pages"], r["pagesFailedBefore"], r["pagesFailedAfter"]) for r in history] == [
        (1, "completed", list(REFUSED), len(REFUSED), 0)
    ]
    # only the retried pages' cost is booked: one row per retried chunk, tagged with the retry
    retry_rows = assert_retries_booked(job_id)
    assert sorted(r.chunk_index for r in retry_rows[1]) == [0, 1]
    assert Decimal(history[0]["costUsd"]) == Decimal(after.total_cost_usd) - Decimal(before.total_cost_usd) > 0
    assert call(stack, "GET", f"/api/v1/jobs/{job_id}/pages?status=failed", user=owner)[1]["pages"] == []
    again = call(stack, "POST", f"/api/v1/jobs/{job_id}/retry", {}, user=owner)
    assert again[0] == 409 and again[1]["error"]["code"] == "NOTHING_TO_RETRY"
    assert call(stack, "POST", f"/api/v1/jobs/{job_id}/retry", {}, user=f"other-{owner}")[0] == 404


def test_retry_narrowed_to_one_page(stack, owner):
    _, job_id = converted_with_failed_pages(stack, owner)
    lift_refusals(stack)
    status, started = call(stack, "POST", f"/api/v1/jobs/{job_id}/retry", {"pages": [REFUSED[1]]}, user=owner)
    assert status == 202 and started["pages"] == [REFUSED[1]]
    wait_until(lambda: execution_status(f"retry-{job_id}-1") == "SUCCEEDED", what="the retry")
    failed = call(stack, "GET", f"/api/v1/jobs/{job_id}/pages?status=failed", user=owner)[1]["pages"]
    assert [(p["page"], p["attempts"]) for p in failed] == [(REFUSED[0], 1)]
    assert job(job_id).pages_failed == 1 and job(job_id).error_id == "PAGES_FAILED"
    assert_retries_booked(job_id)
    wrong = call(stack, "POST", f"/api/v1/jobs/{job_id}/retry", {"errorIds": ["max_tokens"]}, user=owner)
    assert wrong[0] == 409 and wrong[1]["error"]["code"] == "NOTHING_TO_RETRY"


def HeldChunks(stack: Any) -> HeldInvocations:
    """Holds every chunk_processor invocation until released."""
    return HeldInvocations(stack, "chunk_processor")


def test_a_double_post_starts_one_retry_and_cancel_puts_the_job_back_as_it_was(stack, owner):
    file_id, job_id = converted_with_failed_pages(stack, owner)
    first_markdown, before = markdown(job_id), job(job_id)
    lift_refusals(stack)
    with HeldChunks(stack) as held:
        # two POSTs at once: one retry starts, the other answers it
        barrier, answers = threading.Barrier(2), []

        def post() -> None:
            barrier.wait(10)
            answers.append(call(stack, "POST", f"/api/v1/jobs/{job_id}/retry", {}, user=owner))

        threads = [threading.Thread(target=post) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert sorted(code for code, _ in answers) == [200, 202], answers
        assert {body["retry"] for _, body in answers} == {1} and [body["alreadyRunning"] for code, body in answers if code == 200] == [True]
        third = call(stack, "POST", f"/api/v1/jobs/{job_id}/retry", {}, user=owner)
        assert third[0] == 200 and third[1]["alreadyRunning"] is True
        assert held.entered.wait(30)
        view = call(stack, "GET", f"/api/v1/jobs/{job_id}", user=owner)[1]
        assert view["status"] in ("pending", "processing") and view["retry"] == {"attempt": 1, "pages": list(REFUSED)}
        busy = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)
        assert busy[0] == 409 and busy[1]["error"]["code"] == "CONVERSION_IN_PROGRESS"
        code, cancelled = call(stack, "POST", f"/api/v1/files/{file_id}/cancel", {"jobId": job_id}, user=owner)
        assert code == 200 and cancelled["retryCancelled"] == 1 and cancelled["status"] == "completed", cancelled
    wait_until(lambda: execution_status(f"retry-{job_id}-1") in ("SUCCEEDED", "FAILED"), what="the cancelled retry to end")
    assert execution_status(f"retry-{job_id}-1") == "SUCCEEDED", "a cancelled retry is not a workflow failure"
    after = job(job_id)
    assert (after.status, after.pages_failed, after.error_id) == ("completed", len(REFUSED), "PAGES_FAILED")
    assert markdown(job_id) == first_markdown and Decimal(after.total_cost_usd) == Decimal(before.total_cost_usd)
    assert ledger.PgLedger(services().db).get_hold(job_id).outcome == "settled"
    assert job_repo.PgJobs(services().db).get_file(file_id).status == "converted"
    assert [r["status"] for r in call(stack, "GET", f"/api/v1/jobs/{job_id}/retries", user=owner)[1]["retries"]] == ["cancelled"]
    # and the failed pages can be retried again, to the end
    assert call(stack, "POST", f"/api/v1/jobs/{job_id}/retry", {}, user=owner)[1]["retry"] == 2
    wait_until(lambda: execution_status(f"retry-{job_id}-2") == "SUCCEEDED", what="the second retry")
    assert_converted_whole(job_id, pages=PAGES, blank_every=0)
    assert_retries_booked(job_id)


def test_a_retry_whose_workflow_fails_leaves_the_job_completed_as_it_was(stack, owner):
    file_id, job_id = converted_with_failed_pages(stack, owner)
    first_markdown, before = markdown(job_id), job(job_id)
    lift_refusals(stack)
    stack.registry.intercept("chunk_processor", lambda event, call_real: Invocation(error_type="RuntimeError", error_message="Runtime exited"))
    try:
        assert call(stack, "POST", f"/api/v1/jobs/{job_id}/retry", {}, user=owner)[0] == 202
        wait_until(lambda: execution_status(f"retry-{job_id}-1") == "FAILED", what="the retry workflow to fail")
    finally:
        stack.registry.intercept("chunk_processor", None)
    after = job(job_id)
    assert (after.status, after.pages_failed, after.error_id) == ("completed", len(REFUSED), "PAGES_FAILED")
    assert markdown(job_id) == first_markdown and after.total_cost_usd == before.total_cost_usd
    assert job_repo.PgJobs(services().db).get_file(file_id).status == "converted"
    history = call(stack, "GET", f"/api/v1/jobs/{job_id}/retries", user=owner)[1]["retries"]
    # a stable code, never the Lambda's raw cause (issue 15, "Leaks"): that stays in settle's log
    assert history[0]["status"] == "failed" and "CONVERSION_FAILED" in history[0]["error"] and "Runtime exited" not in history[0]["error"]
    assert_retries_booked(job_id)
    assert call(stack, "POST", f"/api/v1/jobs/{job_id}/retry", {}, user=owner)[1]["retry"] == 2
    wait_until(lambda: execution_status(f"retry-{job_id}-2") == "SUCCEEDED", what="the second retry")
    assert_converted_whole(job_id, pages=PAGES, blank_every=0)
    failed_then_passed = call(stack, "GET", f"/api/v1/jobs/{job_id}/retries", user=owner)[1]["retries"]
    assert [r["status"] for r in failed_then_passed] == ["failed", "completed"]


def test_retry_after_the_source_pages_expired_says_so_and_changes_nothing(stack, owner):
    _, job_id = converted_with_failed_pages(stack, owner)
    client("s3").delete_object(Bucket=services().store.bucket, Key=keys.chunk_source_key(job_id, 0))  # the 14-day lifecycle
    answer = call(stack, "POST", f"/api/v1/jobs/{job_id}/retry", {}, user=owner)
    assert answer[0] == 409 and answer[1]["error"]["code"] == "SOURCE_EXPIRED", answer
    assert job(job_id).status == "completed" and call(stack, "GET", f"/api/v1/jobs/{job_id}/retries", user=owner)[1]["retries"] == []


def test_a_retry_beyond_the_budget_is_402_and_changes_nothing(stack, owner):
    # Given a converted job with failed pages, and a budget already used up by its spend
    _, job_id = converted_with_failed_pages(stack, owner)
    spent = job(job_id).total_cost_usd
    assert call(stack, "PUT", f"/api/v1/admin/budgets/{owner}", {"usdPerMonth": str(spent)}, user="admin;groups=batchlane-admins")[0] == 200
    # When the owner retries the failed pages, the retry's worst case does not fit: refused, nothing written
    answer = call(stack, "POST", f"/api/v1/jobs/{job_id}/retry", {}, user=owner)
    assert (answer[0], answer[1]["error"]["code"]) == (402, "BUDGET_EXCEEDED"), answer
    assert job(job_id).status == "completed" and call(stack, "GET", f"/api/v1/jobs/{job_id}/retries", user=owner)[1]["retries"] == []
    services().db.run("DELETE FROM user_budgets WHERE owner_id = :owner", owner=owner)


def test_a_retry_at_the_live_job_cap_is_429_and_changes_nothing(stack, owner):
    # Given a converted job with failed pages, and its owner's one live-job place taken by another conversion
    from tests.integration.test_api import make_job

    _, job_id = converted_with_failed_pages(stack, owner)
    make_job(owner, "processing")
    assert call(stack, "PUT", f"/api/v1/admin/budgets/{owner}", {"maxLiveJobs": 1}, user="admin;groups=batchlane-admins")[0] == 200
    # When the owner retries the failed pages: a retry is a live job again, refused like a new conversion
    answer = call(stack, "POST", f"/api/v1/jobs/{job_id}/retry", {}, user=owner)
    assert (answer[0], answer[1]["error"]["code"]) == (429, "LIVE_JOBS_LIMIT"), answer
    assert job(job_id).status == "completed" and call(stack, "GET", f"/api/v1/jobs/{job_id}/retries", user=owner)[1]["retries"] == []
    services().db.run("DELETE FROM user_budgets WHERE owner_id = :owner", owner=owner)


def test_retry_of_a_job_that_is_not_completed_is_409(stack, owner):
    file_id = upload(stack, owner, make_pdf(3))
    with HeldChunks(stack) as held:
        job_id = call(stack, "POST", f"/api/v1/files/{file_id}/convert", {}, user=owner)[1]["jobId"]
        assert held.entered.wait(30)
        answer = call(stack, "POST", f"/api/v1/jobs/{job_id}/retry", {}, user=owner)
        assert answer[0] == 409 and answer[1]["error"]["code"] == "NOT_RETRYABLE"
    wait_until(lambda: job(job_id).status == "completed", what="the conversion")


# -- dry run -----------------------------------------------------------------------------------
def _footprint(owner: str) -> dict[str, Any]:
    db = services().db
    counts = db.one(
        """SELECT (SELECT count(*) FROM large_conversion_jobs WHERE owner_id = :o) AS jobs,
                  (SELECT count(*) FROM cost_ledger l JOIN large_conversion_jobs j ON j.id = l.job_id WHERE j.owner_id = :o) AS ledger,
                  (SELECT count(*) FROM funds_holds WHERE owner_id = :o) AS holds,
                  (SELECT count(*) FROM files WHERE owner_id = :o) AS files""",
        o=owner,
    )
    sfn = client("stepfunctions")
    executions = sum(
        len(sfn.list_executions(stateMachineArn=arn)["executions"]) for arn in (services().workflows.conversion_arn, services().workflows.intake_arn)
    )
    return {**counts, "objects": sorted(services().store.list_keys("")), "executions": executions}


def test_dry_run_answers_pages_lane_cost_and_turnaround_and_creates_nothing(stack, owner):
    file_id = upload(stack, owner, make_pdf(12, blank_every=4))
    before = _footprint(owner)
    assert before["files"] == 1 and before["jobs"] == 0

    status, body = estimate(stack, f"/api/v1/files/{file_id}/convert?dry_run=true", {}, user=owner)
    assert status == 200, body
    assert body["dryRun"] is True and body["created"] is False
    assert body["pages"] == {"total": 12, "blank": 3, "scans": 0} and body["records"] == 9
    assert body["inspection"]["method"] == "all_pages"
    assert body["lane"] == {"name": "on_demand", "reason": "lane_off", "minPages": services().settings.batch_conversion_min_pages, "condition": None}
    cost = body["estimate"]
    assert Decimal(cost["batchUsd"]) == (Decimal(cost["onDemandUsd"]) / 2).quantize(Decimal("0.000001")) or Decimal(cost["batchUsd"]) < Decimal(
        cost["onDemandUsd"]
    )
    assert Decimal(cost["onDemandUsd"]) > 0 and cost["costUsd"] == cost["onDemandUsd"]
    assert body["turnaround"]["onDemandSeconds"] > 0 and "on-demand" in body["turnaround"]["expected"]
    assert _footprint(owner) == before, "a dry run writes no row, object or execution of a conversion"

    bulk = estimate(stack, f"/api/v1/files/{file_id}/convert?dry_run=true", {"options": {"highFidelity": False}}, user=owner)[1]
    assert bulk["lane"]["reason"] == "lane_off"
    assert call(stack, "POST", f"/api/v1/files/{file_id}/convert?dry_run=true", {}, user=f"other-{owner}")[0] == 404
    assert call(stack, "POST", f"/api/v1/files/{file_id}/convert?dry_run=maybe", {}, user=owner)[1]["error"]["code"] == "BAD_REQUEST"
    assert _footprint(owner) == before


def test_dry_run_of_a_broken_pdf_says_why_as_convert_would(stack, owner):
    data = make_pdf(4)
    file_id = upload(stack, owner, data[: len(data) // 3], "cut.pdf")
    status, body = estimate(stack, f"/api/v1/files/{file_id}/convert?dry_run=true", {}, user=owner)
    assert status == 400 and body["status"] == "failed" and body["error"]["code"] == "PDF_CORRUPT", body
