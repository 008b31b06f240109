"""The offline stack enforces each function's grants: a missing grant fails here as on AWS.

(moto checks no IAM; batchlane_dev.local.iam refuses every handler call that the function's
topology ``needs`` do not grant, with the AccessDenied AWS answers.)
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from typing import Any

import boto3
import pytest

from batchlane.aws.s3 import NotFound
from batchlane.config import reload_settings
from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.runtime import services
from batchlane_dev.cli.jobs_commands import post_upload
from batchlane_dev.local import iam
from batchlane_dev.local.jobs import submit_pdf, wait_for_job
from batchlane_dev.local.pdfgen import make_pdf
from batchlane_dev.local.stack import BUCKET, REGION, SERVICE_ROLE_ARN
from deployment import topology
from tests.conftest import start_stack


@pytest.fixture(scope="module")
def stack(migrated_url):  # type: ignore[no-untyped-def]
    stack = start_stack(migrated_url, faults="time_scale=36000", batch_lane=False, schedules=False)
    yield stack
    stack.stop()


def _call(stack: Any, method: str, path: str, body: Any = None, *, user: str) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer local:{user}"}
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(stack.env["BATCHLANE_API_URL"] + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_job_split_without_s3_write_jobs_fails_with_access_denied_and_leaves_no_chunk(stack):
    # Given the splitting function's role as job creation's was synthesized before: it reads the upload but may not write jobs/
    needs = topology.function("job_split").needs
    stack.grants.set_needs("job_split", tuple(n for n in needs if n != "s3_write_jobs"))
    try:
        # When a PDF is submitted
        refused = submit_pdf(services(), make_pdf(4), name="no-grant.pdf", owner_id=f"iam-{uuid.uuid4().hex[:8]}")
    finally:
        stack.grants.set_needs("job_split", None)
    # Then the split fails exactly as it would on AWS: refused by IAM, the job failed, no chunk source written
    assert ("job_split", "s3:PutObject") in {(fn, action) for fn, action, _ in stack.grants.denials}
    assert refused["status"] == "failed" and refused["errorId"] == "SPLIT_FAILED", refused
    assert not services().store.list_keys(f"jobs/{refused['jobId']}/source/")
    stack.grants.denials.clear()  # seen and asserted: the fixture fails a test on any other refusal
    # And with the topology's grants the same submission creates its job
    created = submit_pdf(services(), make_pdf(4), name="granted.pdf", owner_id=f"iam-{uuid.uuid4().hex[:8]}")
    assert created["totalPages"] == 4


def test_deleting_a_file_removes_its_upload_from_the_bucket(stack):
    # Given an uploaded file
    owner = f"iam-{uuid.uuid4().hex[:8]}"
    pdf = make_pdf(2)
    status, registered = _call(stack, "POST", "/api/v1/files", {"name": "gone.pdf", "sizeBytes": len(pdf)}, user=owner)
    assert status == 201
    assert post_upload(registered["upload"], pdf) == 204
    key = services().db.one("SELECT s3_key FROM files WHERE id = CAST(:id AS uuid)", id=registered["fileId"])["s3_key"]
    # When the owner deletes it
    assert _call(stack, "DELETE", f"/api/v1/files/{registered['fileId']}", user=owner)[0] == 200
    # Then the PDF is gone from S3 too (the api's role may delete uploads/ objects; before, the
    # refusal was swallowed and the document stayed until the bucket's lifecycle expired it)
    with pytest.raises(NotFound):
        services().store.get_bytes(key)
    assert not [d for d in stack.grants.denials if d[0] == "api"]


def test_pages_converted_without_the_model_grant_fail_with_access_denied_from_worker_threads(stack):
    # Given a chunk processor whose role cannot invoke the model (its pages are converted on worker threads)
    needs = topology.function("chunk_processor").needs
    stack.grants.set_needs("chunk_processor", tuple(n for n in needs if n != "bedrock_runtime"))
    try:
        # When a document converts
        svc = services()
        created = submit_pdf(svc, make_pdf(3), name="no-model.pdf", owner_id=f"iam-{uuid.uuid4().hex[:8]}")
        wait_for_job(svc, created["jobId"], timeout_s=300)
    finally:
        stack.grants.set_needs("chunk_processor", None)
    # Then every model call was refused as AWS would refuse it, and no page claims to be converted
    refused = {(fn, action) for fn, action, _ in stack.grants.denials}
    assert ("chunk_processor", "bedrock:InvokeModel") in refused
    job = job_repo.PgJobs(svc.db).get_job(created["jobId"])
    markdown = svc.store.get_bytes(job.markdown_key).decode()
    markers = [line for line in markdown.splitlines() if line.startswith("<!--")]
    assert markers == [f"<!-- Page {n}: failed (AccessDeniedException) -->" for n in (1, 2, 3)]
    assert not [r for r in ledger.PgLedger(svc.db).ledger_rows(created["jobId"]) if r.source == "chunk" and r.cost_usd > 0]


def test_a_batch_job_whose_input_is_outside_the_service_roles_grant_fails_with_access_denied(stack):
    # Given records staged outside batch/, the only prefix the Bedrock service role may read (infra.iam.BedrockBatchAccess)
    key = f"jobs/{uuid.uuid4().hex}/input.jsonl"
    record = {"recordId": "r1", "modelInput": {"messages": [{"role": "user", "content": [{"text": "hi"}]}]}}
    services().store.put_bytes(key, (json.dumps(record) + "\n").encode())
    bedrock = boto3.client("bedrock", region_name=REGION)
    # When a job is created on it (as the operator: the caller's own grants are not the point here)
    job = bedrock.create_model_invocation_job(
        jobName=f"outside-{uuid.uuid4().hex[:8]}",
        roleArn=SERVICE_ROLE_ARN,
        modelId=reload_settings().allowed_model_ids[0],
        inputDataConfig={"s3InputDataConfig": {"s3Uri": f"s3://{BUCKET}/{key}"}},
        outputDataConfig={"s3OutputDataConfig": {"s3Uri": f"s3://{BUCKET}/batch/outside/"}},
        modelInvocationType="Converse",
    )["jobArn"]
    # Then Bedrock, acting as the service role, cannot read it: the job ends Failed with AWS's access message
    described = _wait_for_terminal(bedrock, job)
    assert described["status"] == "Failed", described
    assert "AccessDenied" in described["message"] and key in described["message"], described["message"]
    assert (iam.BEDROCK_SERVICE_ROLE, "s3:GetObject", f"arn:aws:s3:::{BUCKET}/{key}") in stack.grants.denials
    stack.grants.denials.clear()  # seen and asserted


def _wait_for_terminal(bedrock: Any, job: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # polls the job's status, as a caller does
        described = bedrock.get_model_invocation_job(jobIdentifier=job)
        if described["status"] in ("Completed", "PartiallyCompleted", "Failed", "Stopped", "Expired"):
            return dict(described)
        time.sleep(0.2)
    raise AssertionError(f"job {job} never ended")
