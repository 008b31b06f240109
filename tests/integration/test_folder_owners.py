"""Two owners against each other on folder jobs (issue 21, points 1 and 7): the offline API and stack, real PostgreSQL.

Grants offline: each user their own ``users/{owner}/`` home, and a ``shared/`` folder every user may use,
so the outputs' owner (``batchlane-owner`` metadata) is what keeps one user off another's Markdown.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from typing import Any
from urllib.parse import quote

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders

from batchlane.db import folder_jobs as repo
from batchlane.folders import usecases
from batchlane.runtime import RuntimeServices, services
from batchlane_dev.local.jobs import wait_until
from batchlane_dev.local.pdfgen import make_pdf, page_phrase
from batchlane_dev.local.stack import FOLDER_BUCKET, FOLDER_SOURCES, owner_home
from tests.conftest import start_stack
from tests.integration.test_api import estimate

SHARED = "shared/"


@pytest.fixture(scope="module")
def stack(migrated_url):  # type: ignore[no-untyped-def]
    # bob tries three folders, each as a dry run (20 tokens) and a submit: past the default burst of 60
    sources = f"{FOLDER_SOURCES},{FOLDER_BUCKET}/{SHARED}"
    stack = start_stack(migrated_url, faults="time_scale=36000", batch_lane=False, extra_env={"BATCHLANE_FOLDER_SOURCES": sources, "BATCHLANE_API_BURST": "200"})
    yield stack
    stack.stop()


def s3() -> Any:
    import os

    return boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")


def call(stack: Any, method: str, path: str, body: Any = None, *, user: str) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer local:{user}"}
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(stack.env["BATCHLANE_API_URL"] + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read().decode()
            return response.status, raw if path.endswith("/report") else json.loads(raw)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def users() -> tuple[str, str]:
    tag = uuid.uuid4().hex[:6]
    return f"alice-{tag}", f"bob-{tag}"


def uri(key: str) -> str:
    return f"s3://{FOLDER_BUCKET}/{key}"


def wait_done(owner: str, job_id: str) -> dict[str, Any]:
    wait_until(lambda: (row := repo.PgFolderJobs(services().db).get(job_id)) and row.finished_at is not None, timeout_s=180, what=f"folder job {job_id}")
    return usecases.status(services(), owner, job_id)


def files(owner: str, job_id: str) -> dict[str, tuple[str, str | None]]:
    return {f["key"].rsplit("/", 1)[-1]: (f["status"], (f["error"] or {}).get("code")) for f in usecases.files(services(), owner, job_id)["files"]}


def test_a_user_is_refused_anothers_folder_before_anything_is_listed(stack: Any) -> None:
    alice, bob = users()
    s3().put_object(Bucket=FOLDER_BUCKET, Key=f"{owner_home(alice)}papers/secret.pdf", Body=make_pdf(2))
    theirs = {"input": {"folder": uri(f"{owner_home(alice)}papers/")}}
    into_theirs = {"input": {"folder": uri(owner_home(bob))}, "output": {"layout": "mirror", "folder": uri(f"{owner_home(alice)}out/")}}
    listed = {"input": {"files": [uri(f"{owner_home(alice)}papers/secret.pdf")]}}

    for spec in (theirs, into_theirs, listed):
        for path in ("/api/v1/folder-jobs?dry_run=true", "/api/v1/folder-jobs"):
            code, answer = call(stack, "POST", path, spec, user=bob)
            assert (code, answer["error"]["code"]) == (400, "FOLDER_NOT_ALLOWED"), answer
            assert "secret.pdf" not in json.dumps(answer)  # nothing listed, nothing named
    assert services().db.one("SELECT count(*) AS n FROM folder_jobs WHERE owner_id = :o", o=bob)["n"] == 0

    code, dry = estimate(stack, "/api/v1/folder-jobs?dry_run=true", theirs, user=alice)  # the owner may
    assert code == 200 and dry["files"]["toConvert"] == 1


def test_neither_replace_nor_skip_takes_or_overwrites_another_owners_output(stack: Any) -> None:
    alice, bob = users()
    folder = f"{SHARED}{alice}/"  # a shared folder both may use
    s3().put_object(Bucket=FOLDER_BUCKET, Key=f"{folder}a.pdf", Body=make_pdf(2))
    s3().put_object(Bucket=FOLDER_BUCKET, Key=f"{folder}b.pdf", Body=make_pdf(3))
    s3().put_object(Bucket=FOLDER_BUCKET, Key=f"{folder}b.md", Body=b"forged by hand")  # not written by any folder job
    spec = {"input": {"folder": uri(folder)}, "output": {"onExisting": "skip"}}

    first, _ = usecases.submit(services(), alice, spec)
    assert files(alice, wait_done(alice, first["id"])["id"]) == {"a.pdf": ("completed", None), "b.pdf": ("failed", "OUTPUT_EXISTS")}
    head = s3().head_object(Bucket=FOLDER_BUCKET, Key=f"{folder}a.md")
    assert head["Metadata"]["batchlane-owner"] == alice
    assert s3().get_object(Bucket=FOLDER_BUCKET, Key=f"{folder}b.md")["Body"].read() == b"forged by hand"  # skip kept it, trusted nothing

    replaced, _ = usecases.submit(services(), bob, {**spec, "output": {"onExisting": "replace"}})
    assert files(bob, wait_done(bob, replaced["id"])["id"])["a.pdf"] == ("failed", "OUTPUT_NOT_YOURS")
    skipped, _ = usecases.submit(services(), bob, spec)
    assert files(bob, wait_done(bob, skipped["id"])["id"])["a.pdf"] == ("failed", "OUTPUT_NOT_YOURS")  # never ALREADY_CONVERTED
    markdown = s3().get_object(Bucket=FOLDER_BUCKET, Key=f"{folder}a.md")
    assert markdown["Metadata"]["batchlane-owner"] == alice and page_phrase(2, 2) in markdown["Body"].read().decode()

    again, _ = usecases.submit(services(), alice, {**spec, "name": "again", "policy": {"maxRetries": 1}})
    assert files(alice, wait_done(alice, again["id"])["id"])["a.pdf"] == ("skipped", "ALREADY_CONVERTED")  # its own output only


def test_ids_and_cursors_that_cannot_be_valid_answer_400_not_500(stack: Any) -> None:
    alice, _ = users()
    for path in ("/api/v1/folder-jobs/fj-zz", f"/api/v1/folder-jobs/fj-{'a' * 25}/files", "/api/v1/folder-jobs/not-a-job/report"):
        code, answer = call(stack, "GET", path, user=alice)
        assert (code, answer["error"]["code"]) == (400, "FOLDER_JOB_ID_INVALID"), (path, answer)
    s3().put_object(Bucket=FOLDER_BUCKET, Key=f"{owner_home(alice)}cursor/a.pdf", Body=make_pdf(1))
    job, _ = usecases.submit(services(), alice, {"input": {"folder": uri(f"{owner_home(alice)}cursor/")}})
    code, answer = call(stack, "GET", f"/api/v1/folder-jobs/{job['id']}/files?after=a%00b", user=alice)
    assert (code, answer["error"]["code"]) == (400, "BAD_REQUEST"), answer
    code, answer = call(stack, "PUT", "/api/v1/admin/budgets/x%3By", {"usdPerMonth": 1}, user=f"{alice};groups=batchlane-admins")
    assert (code, answer["error"]["code"]) == (400, "OWNER_ID_INVALID"), answer
    big = {"input": {"folder": uri(owner_home(alice))}, "options": {"parser": "x" * 1_000_000}}
    code, answer = call(stack, "POST", "/api/v1/folder-jobs", big, user=alice)
    assert (code, answer["error"]["code"]) == (400, "SPEC_INVALID"), answer


def test_one_object_that_cannot_be_read_fails_that_file_and_the_rest_convert(stack: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """HeadObject on an SSE-KMS object whose key the role may not use answers 403 (no body, as AWS's HEAD does);
    moto has no KMS policy, so that answer is given at botocore's before-call, where the offline IAM gives its own."""
    alice, _ = users()
    folder = f"{owner_home(alice)}kms/"
    for name in ("a.pdf", "locked.pdf", "c.pdf"):
        s3().put_object(Bucket=FOLDER_BUCKET, Key=folder + name, Body=make_pdf(1))
    denied = folder + "locked.pdf"

    def kms_denied(params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        if params.get("url_path", "").endswith(quote(denied)):
            error = {"Error": {"Code": "403", "Message": "Forbidden"}, "ResponseMetadata": {"HTTPStatusCode": 403, "HTTPHeaders": {}}}
            return AWSResponse("", 403, HTTPHeaders(), None), error
        return None

    original = RuntimeServices.folder_buckets

    def folder_buckets(self: RuntimeServices, owner_id: str | None = None) -> Any:
        buckets = original(self, owner_id)
        buckets._s3.meta.events.register("before-call.s3.HeadObject", kms_denied, unique_id="test-kms-denied")
        return buckets

    monkeypatch.setattr(RuntimeServices, "folder_buckets", folder_buckets)
    job, _ = usecases.submit(services(), alice, {"input": {"folder": uri(folder)}})
    done = wait_done(alice, job["id"])
    assert done["status"] == "completed_with_failures" and done["error"] is None, done
    assert files(alice, job["id"]) == {"a.pdf": ("completed", None), "c.pdf": ("completed", None), "locked.pdf": ("failed", "OBJECT_UNREADABLE")}


def test_a_database_blip_while_a_file_starts_requeues_it_and_never_names_the_database(stack: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """StoreUnavailable's message names the database user and host: it is a wait for the next turn, never a file's error."""
    from batchlane.domain.errors import StoreUnavailable
    from batchlane.folders import advance

    alice, _ = users()
    folder = f"{owner_home(alice)}blip/"
    s3().put_object(Bucket=FOLDER_BUCKET, Key=folder + "a.pdf", Body=make_pdf(2))
    real_create, calls = advance.create_job, []

    def unreachable_once(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise StoreUnavailable("cannot connect to postgresql://batchlane_app@db.internal.example:5432/batchlane")
        return real_create(*args, **kwargs)

    monkeypatch.setattr(advance, "create_job", unreachable_once)
    job, _ = usecases.submit(services(), alice, {"input": {"folder": uri(folder)}})
    done = wait_done(alice, job["id"])
    (file,) = usecases.files(services(), alice, job["id"])["files"]
    assert (done["status"], file["status"], (file["error"] or {}).get("code")) == ("completed", "completed", None), (done, file)
    assert len(calls) == 2 and "db.internal" not in json.dumps(usecases.status(services(), alice, job["id"]))


def test_a_folder_jobs_s3_calls_reach_only_its_owners_home_even_past_the_use_case_check(stack: Any) -> None:
    """The offline IAM, as AWS would: owner A's folder-access session is denied B's home, whatever the code asks."""
    from botocore.exceptions import ClientError

    from batchlane.domain.errors import InputError
    from batchlane_dev.local import iam

    alice, bob = users()
    secret_key = f"{owner_home(bob)}private/secret.md"
    s3().put_object(Bucket=FOLDER_BUCKET, Key=secret_key, Body=b"bob's text")
    with iam.acting_as("folder_advance"):  # the function's own role may reach users/*; the scoped session may not
        as_alice = services().folder_buckets(alice)
        with pytest.raises(ClientError) as read:
            list(as_alice.iter_lines(FOLDER_BUCKET, secret_key))
        with pytest.raises(ClientError) as write:
            as_alice.put_bytes(FOLDER_BUCKET, f"{owner_home(bob)}private/forged.md", b"forged", "text/markdown", owner=alice)
        with pytest.raises(InputError) as listing:
            as_alice.list_page(FOLDER_BUCKET, owner_home(bob), token=None, recursive=True, max_keys=10)
        as_alice.put_bytes(FOLDER_BUCKET, f"{owner_home(alice)}own.md", b"mine", "text/markdown", owner=alice)  # her own home: allowed
        assert [k for k, _ in as_alice.list_page(FOLDER_BUCKET, owner_home(alice), token=None, recursive=True, max_keys=10).objects] == [
            f"{owner_home(alice)}own.md"
        ]
    assert read.value.response["Error"]["Code"] == write.value.response["Error"]["Code"] == "AccessDenied"
    assert listing.value.error_id == "FOLDER_NOT_READABLE"
    assert "forged.md" not in json.dumps(s3().list_objects_v2(Bucket=FOLDER_BUCKET, Prefix=owner_home(bob)).get("Contents", []), default=str)
    assert stack.grants is not None and any(f.startswith("folder-access:") and owner_home(bob) in (r or "") for f, _, r in stack.grants.denials)


def test_a_folder_job_on_another_owners_home_fails_at_iam_when_the_grant_check_is_bypassed(stack: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in check_allowed would let Bob's job list and overwrite Alice's folder: IAM still refuses it, and writes nothing."""
    alice, bob = users()
    folder = f"{owner_home(alice)}bypassed/"
    s3().put_object(Bucket=FOLDER_BUCKET, Key=folder + "a.pdf", Body=make_pdf(1))
    monkeypatch.setattr(usecases, "check_allowed", lambda *a, **k: None)  # the use-case check, bypassed
    job, _ = usecases.submit(services(), bob, {"input": {"folder": uri(folder)}, "output": {"onExisting": "replace"}})
    done = wait_done(bob, job["id"])
    assert done["status"] == "error" and done["error"]["code"] == "FOLDER_NOT_READABLE", done
    assert [o["Key"] for o in s3().list_objects_v2(Bucket=FOLDER_BUCKET, Prefix=folder)["Contents"]] == [folder + "a.pdf"]  # nothing written


def test_an_owners_scoped_credentials_are_assumed_once_and_reused(stack: Any) -> None:
    """One AssumeRole per owner for the credentials' lifetime, not one per object or per call."""
    from batchlane import runtime
    from batchlane_dev.local.iam import acting_as as iam_acting

    alice, bob = users()
    svc = services()
    assert svc.settings.folder_access_role_arn
    clients = runtime._owner_clients(svc.settings.folder_access_role_arn)
    before = clients.assumed
    with iam_acting("folder_advance"):
        for _ in range(3):
            for owner in (alice, bob):
                svc.folder_buckets(owner).put_bytes(FOLDER_BUCKET, f"{owner_home(owner)}n.md", b"x", "text/markdown", owner=owner)
    assert clients.assumed - before == 2
