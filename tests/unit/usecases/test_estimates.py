"""A dry run is an estimate (issue 40.1): the API records it and answers 202 without reading the file; the worker
reads it within its bounds and answers it once; an owner has a few running at most; another owner sees none."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from folder_fakes import MemoryBuckets, on_folders
from usecase_fakes import MemoryStore

from batchlane.api import app as api_app
from batchlane.api import estimates, throttle
from batchlane.domain.errors import InputError, LimitReached, NotFound, StoreUnavailable
from batchlane.folders import dryrun as folder_dryrun
from batchlane.naming import api_json
from batchlane.ports import Services
from batchlane_dev.local.pdfgen import make_pdf, object_flood_pdf
from fakes import FakeUnitOfWork

A, B = "owner-a", "owner-b"


class UnreadableStore(MemoryStore):
    """An upload whose size is known but whose bytes must not be read here: the API may HEAD it, never open it."""

    def get_bytes(self, key: str) -> bytes:
        raise AssertionError(f"the request read {key}")

    def download_to(self, key: str, path: Path, *, max_bytes: int | None = None) -> int:
        raise AssertionError(f"the request downloaded {key}")

    def size(self, key: str) -> int:
        return len(self.objects[key])


def uploaded(svc: Services, data: bytes, owner: str = A) -> str:
    key = f"uploads/{owner}/{len(data)}.pdf"
    svc.store.put_bytes(key, data)
    return str(svc.uow().jobs.insert_file(owner_id=owner, name="book.pdf", s3_key=key, size_bytes=len(data)).id)


def _event(method: str, path: str, *, query: dict[str, str] | None = None, user: str = A, body: Any = None) -> dict[str, Any]:
    return {
        "httpMethod": method,
        "path": path,
        "resource": path,
        "headers": {"Content-Type": "application/json"},
        "queryStringParameters": query,
        "body": json.dumps(body) if body is not None else None,
        "requestContext": {"authorizer": {"claims": {"sub": user}}, "requestId": "r-1"},
        "isBase64Encoded": False,
    }


def test_the_api_answers_a_dry_run_with_202_and_never_reads_the_pdf(svc: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails on the synchronous dry run (it downloaded and surveyed the upload inside the request: 31 s for a 60 MB
    file of 900,000 objects, past API Gateway's 29 s)."""
    svc.store = UnreadableStore(bucket=svc.store.bucket)  # type: ignore[misc]
    file_id = uploaded(svc, object_flood_pdf(1_000))
    monkeypatch.setattr(api_app, "services", lambda: svc)
    monkeypatch.setattr(throttle, "services", lambda: svc)
    response = api_app.app.resolve(_event("POST", f"/api/v1/files/{file_id}/convert", query={"dry_run": "true"}, body={}), None)
    body = json.loads(response["body"])
    assert response["statusCode"] == 202, body
    assert body["status"] == "running" and body["kind"] == "file" and body["poll"] == f"/api/v1/estimates/{body['estimateId']}"
    assert ("estimate", body["estimateId"]) in svc.workflows.started  # type: ignore[attr-defined]  # the worker is started
    polled = api_app.app.resolve(_event("GET", body["poll"]), None)
    assert polled["statusCode"] == 200 and json.loads(polled["body"])["status"] == "running"
    assert api_app.app.resolve(_event("GET", body["poll"], user=B), None)["statusCode"] == 404


def test_the_worker_answers_the_estimate_once_with_the_dry_runs_answer(svc: Services) -> None:
    started = estimates.start_file_estimate(svc, A, uploaded(svc, make_pdf(3)), options={})
    assert estimates.run_estimate(svc, started["estimateId"]) == {"estimateId": started["estimateId"], "status": "completed"}
    done = estimates.owned_estimate(svc, A, started["estimateId"])
    assert done["status"] == "completed" and done["error"] is None and done["finishedAt"] is not None
    assert done["result"]["dryRun"] is True and done["result"]["pages"]["total"] == 3
    assert done["progress"]["step"] == "reading"
    assert estimates.run_estimate(svc, started["estimateId"])["status"] == "completed"  # a retried task changes nothing
    assert estimates.owned_estimate(svc, A, started["estimateId"]) == done


def test_a_refused_file_is_a_failed_estimate_with_the_id_convert_would_give(svc: Services) -> None:
    started = estimates.start_file_estimate(svc, A, uploaded(svc, b"%PDF-1.4\nnot really a PDF\n"), options={})
    assert estimates.run_estimate(svc, started["estimateId"])["status"] == "failed"
    failed = estimates.owned_estimate(svc, A, started["estimateId"])
    assert failed["status"] == "failed" and failed["result"] is None
    assert failed["error"]["code"] == "PDF_CORRUPT"


def test_an_owner_has_a_few_estimates_running_at_most_and_another_owner_is_not_held_by_them(svc: Services) -> None:
    file_id = uploaded(svc, make_pdf(1))
    first = estimates.start_file_estimate(svc, A, file_id, options={})  # the deployment's default: one at a time
    with pytest.raises(LimitReached) as refused:
        estimates.start_file_estimate(svc, A, file_id, options={})
    assert refused.value.error_id == "ESTIMATES_LIMIT" and "BATCHLANE_MAX_LIVE_ESTIMATES" in str(refused.value)
    assert estimates.start_file_estimate(svc, B, uploaded(svc, make_pdf(1), owner=B), options={})["status"] == "running"
    estimates.run_estimate(svc, first["estimateId"])
    assert estimates.start_file_estimate(svc, A, file_id, options={})["status"] == "running"  # one ended: a place again


def test_another_owners_file_or_estimate_is_a_missing_one(svc: Services) -> None:
    file_id = uploaded(svc, make_pdf(1))
    with pytest.raises(NotFound) as theirs:
        estimates.start_file_estimate(svc, B, file_id, options={})
    assert theirs.value.error_id == "FILE_NOT_FOUND"
    started = estimates.start_file_estimate(svc, A, file_id, options={})
    with pytest.raises(NotFound) as missing:
        estimates.owned_estimate(svc, B, started["estimateId"])
    assert missing.value.error_id == "ESTIMATE_NOT_FOUND"


def test_an_estimate_whose_worker_was_lost_answers_failed_and_frees_its_place(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    file_id = uploaded(svc, make_pdf(1))
    started = [estimates.start_file_estimate(svc, A, file_id, options={})]
    fake_uow.state.clock.at += timedelta(seconds=estimates.LOST_AFTER_S + 1)
    lost = estimates.owned_estimate(svc, A, started[0]["estimateId"])
    assert lost["status"] == "failed" and lost["error"]["code"] == "ESTIMATE_LOST"
    assert estimates.start_file_estimate(svc, A, file_id, options={})["status"] == "running"


def test_an_estimate_that_cannot_start_is_failed_not_left_running(svc: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    def throttled(estimate_id: str, owner_id: str) -> str:
        raise RuntimeError("TooManyRequestsException")

    monkeypatch.setattr(svc.workflows, "start_estimate", throttled)
    file_id = uploaded(svc, make_pdf(1))
    for _ in range(3):  # never held against the cap
        with pytest.raises(StoreUnavailable) as refused:
            estimates.start_file_estimate(svc, A, file_id, options={})
        assert refused.value.error_id == "ESTIMATE_NOT_STARTED"


def test_the_state_machines_end_answers_the_estimate_failed_saying_which_error(svc: Services) -> None:
    started = estimates.start_file_estimate(svc, A, uploaded(svc, make_pdf(1)), options={})
    estimates.fail_estimate(svc, started["estimateId"], {"Error": "Lambda.Unknown", "Cause": "internal detail"})
    failed = estimates.owned_estimate(svc, A, started["estimateId"])
    assert failed["error"]["code"] == "ESTIMATE_FAILED" and "Lambda.Unknown" in failed["error"]["message"]
    assert "internal detail" not in failed["error"]["message"]


def test_an_estimate_ended_by_an_error_without_a_name_says_an_error_and_the_worker_answers_failed(svc: Services) -> None:
    """The state machine's Catch may hand no ``Error`` (or none at all): the user still reads a sentence, and the
    worker's answer (what the execution's history records at ``$.failure``) names the estimate and ESTIMATE_FAILED."""
    for error in (None, {"Cause": "internal detail"}):
        started = estimates.start_file_estimate(svc, A, uploaded(svc, make_pdf(1)), options={})
        answer = estimates.fail_estimate(svc, started["estimateId"], error)
        assert answer == {"estimateId": started["estimateId"], "status": "failed", "errorId": "ESTIMATE_FAILED"}
        failed = estimates.owned_estimate(svc, A, started["estimateId"])
        assert failed["error"] == {"code": "ESTIMATE_FAILED", "message": "The estimate stopped before it finished (an error); try again."}


def test_a_dry_runs_tokens_follow_the_work_it_starts() -> None:
    costs = {"file_cost": 10, "folder_cost": 20}
    assert throttle.request_cost("POST", "/api/v1/files/x/convert", {"dry_run": "true"}, **costs) == 10
    assert throttle.request_cost("POST", "/api/v1/folder-jobs", {"dry_run": "1"}, **costs) == 20
    assert throttle.request_cost("POST", "/api/v1/folder-jobs", None, **costs) == 1
    assert throttle.request_cost("GET", "/api/v1/estimates/x", None, **costs) == 1


# -- a folder's estimate through the API and its worker (stop 47: start_folder_estimate and the worker's folder path
# were reached by no fast test, 41 mutants) ----------------------------------------------------------------------
def _folder_spec(owner: str = A) -> dict[str, Any]:
    return {"input": {"folder": f"s3://folders/{owner}/in/"}, "output": {"folder": f"s3://folders/{owner}/out/", "layout": "mirror"}}


def _on_folders(svc: Services) -> Services:
    """Each caller's own folder in the bucket ``folders``, granted to the group ``legal`` only; two books in Alice's."""
    buckets = MemoryBuckets()
    buckets.put("folders", f"{A}/in/a.pdf", make_pdf(1, lines_per_page=4))
    buckets.put("folders", f"{A}/in/sub/b.pdf", make_pdf(2, lines_per_page=4))
    return on_folders(svc, buckets, batchlane_folder_sources="legal@folders/{owner}/")


def test_a_folder_estimate_is_checked_at_once_and_the_worker_counts_it_with_the_callers_groups(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    svc = _on_folders(svc)
    with pytest.raises(InputError) as outside:  # no group legal: refused now, nothing recorded or started
        estimates.start_folder_estimate(svc, A, _folder_spec(), groups=["staff"])
    assert outside.value.error_id == "FOLDER_NOT_ALLOWED" and f"s3://folders/{A}/in/" in str(outside.value)
    assert fake_uow.estimates.running(A, younger_than_s=estimates.LOST_AFTER_S) == 0 and svc.workflows.started == []  # type: ignore[attr-defined]

    started = estimates.start_folder_estimate(svc, A, _folder_spec(), groups=["staff", "legal"])
    assert (started["status"], started["kind"], started["result"], started["error"]) == ("running", "folder", None, None)
    assert svc.workflows.started == [("estimate", started["estimateId"])]  # type: ignore[attr-defined]
    assert fake_uow.estimates.get(started["estimateId"]).request == {"spec": _folder_spec(), "groups": ["legal", "staff"]}  # type: ignore[union-attr]

    assert estimates.run_estimate(svc, started["estimateId"]) == {"estimateId": started["estimateId"], "status": "completed"}
    done = estimates.owned_estimate(svc, A, started["estimateId"])
    assert (done["status"], done["kind"], done["error"]) == ("completed", "folder", None)
    result = done["result"]
    assert (result["dryRun"], result["files"]["toConvert"], result["pages"]["total"], result["pages"]["method"]) == (True, 2, 3, "exact")
    assert result == api_json(folder_dryrun.estimate(svc, _folder_spec(), owner_id=A, groups=["legal"]))  # the synchronous dry run's answer
    assert done["progress"] == {"step": "counting", "done": 2, "total": 2}  # the worker's last step, as it reported it
    assert "dry_run" not in json.dumps(result)  # the API's camelCase, not the report's snake_case


def test_a_folder_whose_grant_went_away_before_the_worker_ran_is_a_failed_estimate_saying_so(svc: Services) -> None:
    svc = _on_folders(svc)
    started = estimates.start_folder_estimate(svc, A, _folder_spec(), groups=["legal"])
    svc.settings = svc.settings.model_copy(update={"batchlane_folder_sources": "legal@folders/shared/"})  # type: ignore[misc]
    assert estimates.run_estimate(svc, started["estimateId"]) == {"estimateId": started["estimateId"], "status": "failed", "errorId": "FOLDER_NOT_ALLOWED"}
    failed = estimates.owned_estimate(svc, A, started["estimateId"])
    assert (failed["status"], failed["result"], failed["error"]["code"]) == ("failed", None, "FOLDER_NOT_ALLOWED")
    assert failed["error"]["message"].startswith(f"The input folder s3://folders/{A}/in/ is outside the folders granted to you")
    assert estimates.run_estimate(svc, started["estimateId"]) == {"estimateId": started["estimateId"], "status": "failed"}  # answered once
