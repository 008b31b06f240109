"""The review's Low points (issue 40.5), each on the in-memory unit of work: a folder job's status shows no callback
header value, a folder file's source PDF is signed in its own bucket as its owner, and a NUL in a folder URI is a
400 with an id (it was a 500: PostgreSQL refuses NUL in text)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from batchlane.api import app as api_app
from batchlane.api import live, throttle
from batchlane.domain import status as st
from batchlane.domain.errors import InputError
from batchlane.folders import usecases as folder_usecases
from batchlane.folders.spec import parse_spec
from batchlane.pdf.split import plan_chunks
from batchlane.ports import Services
from fakes import FakeUnitOfWork

OWNER = "alice"


def _with_folders(svc: Services) -> Services:
    return dataclasses.replace(svc, settings=svc.settings.model_copy(update={"batchlane_folder_sources": "folders", "batchlane_webhook_allow_private": True}))


def test_a_folder_jobs_status_never_shows_its_callback_header_values(svc_on_fakes: Services) -> None:
    """GET /folder-jobs/{id} once answered the spec's callback headers in clear (the manifest redacted them)."""
    svc = _with_folders(svc_on_fakes)
    spec = {
        "input": {"folder": "s3://folders/in/"},
        "output": {"layout": "mirror", "folder": "s3://folders/out/"},
        "notifications": {"callbackUrl": "http://127.0.0.1:9/hook", "callbackHeaders": {"Authorization": "Bearer receiver-secret"}},
        "options": {"callbackUrl": "http://127.0.0.1:9/file", "callbackHeaders": {"X-Token": "file-receiver-secret"}},
    }
    job, _ = folder_usecases.submit(svc, OWNER, spec)
    shown = json.dumps(folder_usecases.status(svc, OWNER, job["id"]))
    assert "receiver-secret" not in shown and "file-receiver-secret" not in shown
    status = folder_usecases.status(svc, OWNER, job["id"])
    assert status["spec"]["notifications"]["callbackHeaders"] == {"Authorization": "(redacted)"}  # the names stay
    assert status["spec"]["options"]["callbackHeaders"] == {"X-Token": "(redacted)"}
    assert "receiver-secret" not in json.dumps(folder_usecases.list_jobs(svc, OWNER))


class SignedDownloads:
    """The Downloads port: which bucket a URL was signed in, and as whom."""

    def __init__(self, bucket: str, owner: str | None = None) -> None:
        self.bucket, self.owner = bucket, owner

    def head(self, key: str) -> Any:
        raise AssertionError("not asked")

    def presigned_get(self, key: str, *, filename: str, ttl_s: int = 900) -> str:
        return f"https://{self.bucket}.s3.example/{key}?signed-as={self.owner or 'the-api'}"


def test_a_folder_files_source_pdf_is_signed_in_its_own_bucket_as_its_owner(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    """The source-PDF route signed a folder file's key in the working bucket: the wrong object, and where a grant
    overlaps uploads/ or jobs/, another user's."""
    svc = svc_on_fakes
    signed_as: list[tuple[str, str]] = []

    def owner_downloads(bucket: str, owner_id: str) -> SignedDownloads:
        signed_as.append((bucket, owner_id))
        return SignedDownloads(bucket, owner_id)

    svc.owner_downloads = owner_downloads  # type: ignore[method-assign]  # the port, offline
    row = fake_uow.folder_jobs.insert_source_file(owner_id=OWNER, name="a.pdf", bucket="user-bucket", key="uploads/x/a.pdf", size_bytes=10)
    job = fake_uow.jobs.insert_job(
        file_id=row.id, owner_id=OWNER, status=st.JobStatus.PENDING, options={}, model_id="m", total_pages=1, pages_per_chunk=1, chunks=plan_chunks(1, 1)
    )
    answer = live.source_read(svc, SignedDownloads("working-bucket"), OWNER, str(job.id))
    assert answer["url"] == "https://user-bucket.s3.example/uploads/x/a.pdf?signed-as=alice"
    assert signed_as == [("user-bucket", OWNER)]
    # an upload of the user's own is still signed in the working bucket
    upload = fake_uow.jobs.insert_file(owner_id=OWNER, name="b.pdf", s3_key="uploads/y/b.pdf", size_bytes=10)
    own = fake_uow.jobs.insert_job(
        file_id=upload.id, owner_id=OWNER, status=st.JobStatus.PENDING, options={}, model_id="m", total_pages=1, pages_per_chunk=1, chunks=plan_chunks(1, 1)
    )
    assert live.source_read(svc, SignedDownloads("working-bucket"), OWNER, str(own.id))["url"].startswith("https://working-bucket.")


@pytest.mark.parametrize(
    "spec",
    [
        {"input": {"folder": "s3://folders/in\x00/"}},
        {"input": {"files": ["s3://folders/in/a\x00.pdf"]}},
        {"input": {"folder": "s3://folders/in/"}, "output": {"layout": "mirror", "folder": "s3://folders/o\x00ut/"}},
    ],
)
def test_a_nul_in_a_folder_uri_is_a_clear_400_not_a_500(svc_on_fakes: Services, monkeypatch: pytest.MonkeyPatch, spec: dict[str, Any]) -> None:
    with pytest.raises(InputError) as refused:
        parse_spec(spec)
    assert refused.value.error_id == "FOLDER_URI_INVALID" and "U+0000" in str(refused.value)
    svc = _with_folders(svc_on_fakes)
    monkeypatch.setattr(api_app, "services", lambda: svc)
    monkeypatch.setattr(throttle, "services", lambda: svc)
    monkeypatch.setattr("batchlane.api.folder_routes.services", lambda: svc)
    event = {
        "httpMethod": "POST",
        "path": "/api/v1/folder-jobs",
        "resource": "/api/v1/folder-jobs",
        "headers": {"Content-Type": "application/json"},
        "queryStringParameters": None,
        "body": json.dumps(spec),
        "requestContext": {"authorizer": {"claims": {"sub": OWNER}}, "requestId": "r-1"},
        "isBase64Encoded": False,
    }
    response = api_app.app.resolve(event, None)
    assert (response["statusCode"], json.loads(response["body"])["error"]["code"]) == (400, "FOLDER_URI_INVALID")


def test_a_nul_elsewhere_in_a_spec_is_refused_before_any_query(svc_on_fakes: Services) -> None:
    with pytest.raises(InputError) as refused:
        parse_spec({"name": "a\x00b", "input": {"folder": "s3://folders/in/"}})
    assert refused.value.error_id == "SPEC_INVALID" and "spec.name" in str(refused.value)
