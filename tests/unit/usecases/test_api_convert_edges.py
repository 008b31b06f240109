"""api/usecases.py on the fakes: registering an upload and starting a conversion, each refusal with its id and its words
(what the API answers the user: 400/402/403/409/422 bodies)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from batchlane import keys
from batchlane.api import usecases
from batchlane.domain.errors import Conflict, Forbidden, InputError, LimitReached
from batchlane.ports import UPLOAD_URL_TTL_S, Services, UniqueViolation

OWNER = "carol-3"
MB = 1024 * 1024


class Uploads:
    def __init__(self) -> None:
        self.asked: list[tuple[str, int, str | None]] = []

    def presigned_post(self, key: str, *, max_bytes: int, content_type: str | None = None, **_: Any) -> dict[str, Any]:
        self.asked.append((key, max_bytes, content_type))
        return {"url": "https://up.example/", "fields": {"key": key}}


def _with(svc: Services, **settings: Any) -> Services:
    return dataclasses.replace(svc, settings=svc.settings.model_copy(update=settings))  # type: ignore[type-var]


def test_an_upload_is_registered_with_a_presigned_post_bounded_to_its_size(svc: Services) -> None:
    uploads = Uploads()
    answer = usecases.register_upload(_with(svc, batchlane_max_file_mb=2), uploads, OWNER, name="scan.tiff", size_bytes=2 * MB)
    file_id = answer["fileId"]
    key = keys.upload_key(file_id, "scan.tiff")
    assert answer == {
        "fileId": file_id,
        "name": "scan.tiff",
        "upload": {"method": "POST", "url": "https://up.example/", "fields": {"key": key}, "maxBytes": 2 * MB, "expiresInSeconds": UPLOAD_URL_TTL_S},
    }
    assert uploads.asked == [(key, 2 * MB, "image/tiff")]
    assert svc.uow().jobs.get_file(file_id).owner_id == OWNER


def test_an_upload_over_the_size_limit_is_refused_in_megabytes(svc: Services) -> None:
    with pytest.raises(InputError) as refused:
        usecases.register_upload(_with(svc, batchlane_max_file_mb=2), Uploads(), OWNER, name="a.pdf", size_bytes=3 * MB + 5)
    assert (refused.value.error_id, str(refused.value)) == ("PDF_TOO_LARGE", "The file is 3 MB; the limit is 2 MB.")


def test_the_pending_upload_cap_says_what_to_do(svc: Services) -> None:
    capped = _with(svc, batchlane_max_pending_uploads=1)
    usecases.register_upload(capped, Uploads(), OWNER, name="a.pdf", size_bytes=10)
    with pytest.raises(LimitReached) as refused:
        usecases.register_upload(capped, Uploads(), OWNER, name="b.pdf", size_bytes=10)
    assert refused.value.error_id == "UPLOADS_LIMIT"
    assert (
        str(refused.value)
        == "You have 1 files registered and not converted; the limit is 1. Convert or delete some first, or ask an operator to raise BATCHLANE_MAX_PENDING_UPLOADS."
    )


def _uploaded(svc: Services, size: int = 10, stored: int | None = None) -> str:
    file_id = str(usecases.register_upload(svc, Uploads(), OWNER, name="a.pdf", size_bytes=size)["fileId"])
    if stored is not None:
        svc.store.put_bytes(svc.uow().jobs.get_file(file_id).s3_key, b"x" * stored)
    return file_id


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"highFidelity": False, "parser": "marker"},
            "The option(s) highFidelity, parser keep the conversion out of the half-price batch lane; that needs membership of the prio group.",
        ),
        ({"mathpix": True}, "The option(s) mathpix keep the conversion out of the half-price batch lane; that needs membership of the prio group."),
    ],
)
def test_options_that_skip_the_batch_lane_need_the_priority_group(svc: Services, options: dict[str, Any], message: str) -> None:
    file_id = _uploaded(svc, stored=10)
    with pytest.raises(Forbidden) as refused:
        usecases.convert_file(svc, OWNER, file_id, options=options, priority_group="prio")
    assert str(refused.value) == message


def test_a_deadline_inside_the_batch_turnaround_needs_the_priority_group_and_says_so(svc: Services) -> None:
    file_id = _uploaded(svc, stored=10)
    soon = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    with pytest.raises(Forbidden) as refused:
        usecases.convert_file(svc, OWNER, file_id, options={"deadline": soon}, priority_group="prio")
    hours = svc.settings.batch_deadline_hours
    assert (
        str(refused.value)
        == f"The option(s) deadline keep the conversion out of the half-price batch lane; that needs membership of the prio group (a deadline must leave the batch lane's {hours:g} h turnaround)."
    )


def test_a_conversion_refused_before_it_starts_says_why(svc: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = _uploaded(svc)
    with pytest.raises(Conflict) as refused:
        usecases.convert_file(svc, OWNER, missing, options=None)
    assert (refused.value.error_id, str(refused.value)) == ("UPLOAD_MISSING", "The file has not been uploaded yet: POST it to the upload URL first.")
    bigger = _uploaded(svc, size=10, stored=11)
    with pytest.raises(Conflict) as refused:
        usecases.convert_file(svc, OWNER, bigger, options=None)
    assert (refused.value.error_id, str(refused.value)) == (
        "UPLOAD_SIZE_MISMATCH",
        "The upload is 11 bytes, more than the 10 declared: register the file again.",
    )
    exact = _uploaded(svc, size=10, stored=10)
    created: list[Any] = []
    monkeypatch.setattr(
        usecases,
        "create_job",
        lambda s, *, file_id, options: created.append((file_id, options)) or SimpleNamespace(status="splitting", to_json=lambda: {"jobId": "j-1"}),
    )
    assert usecases.convert_file(svc, OWNER, exact, options={"highFidelity": True}) == {"jobId": "j-1"}
    assert created == [(exact, {"highFidelity": True})]


def test_a_file_already_converting_is_a_conflict_naming_the_job(svc: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    file_id = _uploaded(svc, stored=10)
    monkeypatch.setattr(type(svc.uow().jobs), "live_job_of_file", lambda self, fid: "j-live" if fid == file_id else None)
    with pytest.raises(Conflict) as refused:
        usecases.convert_file(svc, OWNER, file_id, options=None)
    assert (refused.value.error_id, str(refused.value)) == ("CONVERSION_IN_PROGRESS", "The file is already being converted (job j-live).")


def test_a_concurrent_convert_that_won_the_race_is_a_conflict_and_any_other_constraint_is_not_hidden(svc: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    file_id = _uploaded(svc, stored=10)

    def race(constraint: str) -> Any:
        def create(*_: Any, **__: Any) -> Any:
            raise UniqueViolation(constraint)

        return create

    monkeypatch.setattr(usecases, "create_job", race("one_live_job_per_file"))
    with pytest.raises(Conflict) as refused:
        usecases.convert_file(svc, OWNER, file_id, options=None)
    assert (refused.value.error_id, str(refused.value)) == ("CONVERSION_IN_PROGRESS", "The file is already being converted.")
    monkeypatch.setattr(usecases, "create_job", race("files_pkey"))
    with pytest.raises(UniqueViolation):
        usecases.convert_file(svc, OWNER, file_id, options=None)


@pytest.mark.parametrize(
    ("error_id", "message", "expected"),
    [("PDF_TOO_LARGE", "Too many pages.", ("PDF_TOO_LARGE", "Too many pages.")), (None, None, ("INPUT_INVALID", "The PDF cannot be converted."))],
)
def test_a_job_recorded_failed_at_creation_is_rejected_with_its_id(
    svc: Services, monkeypatch: pytest.MonkeyPatch, error_id: str | None, message: str | None, expected: tuple[str, str]
) -> None:
    file_id = _uploaded(svc, stored=10)
    monkeypatch.setattr(usecases, "create_job", lambda *a, **k: SimpleNamespace(status="failed", error_id=error_id, error_message=message, job_id="j-9"))
    with pytest.raises(usecases.ConversionRejected) as rejected:
        usecases.convert_file(svc, OWNER, file_id, options=None)
    assert (rejected.value.error_id, str(rejected.value), rejected.value.job_id) == (*expected, "j-9")


def _converted(svc: Services, status: str) -> tuple[str, str]:
    file_id = _uploaded(svc, stored=10)
    uow = svc.uow()
    job = uow.jobs.insert_job(file_id=file_id, owner_id=OWNER, status="processing", options={}, model_id="m", total_pages=3, pages_per_chunk=3, chunks=[])
    uow.jobs.put_job(dataclasses.replace(job, status=status))
    return file_id, str(job.id)


def test_a_file_never_converted_or_guarded_by_another_job_says_so(svc: Services) -> None:
    from batchlane.domain.errors import NotFound

    file_id = _uploaded(svc)
    with pytest.raises(NotFound) as never:
        usecases.cancel_file(svc, OWNER, file_id)
    assert (never.value.error_id, str(never.value)) == ("CONVERSION_NOT_FOUND", "The file has never been converted.")
    file_id, job_id = _converted(svc, "processing")
    other = "123e4567-e89b-12d3-a456-426614174000"
    with pytest.raises(Conflict) as guard:
        usecases.cancel_file(svc, OWNER, file_id, job_id=other)
    assert (guard.value.error_id, str(guard.value)) == ("JOB_NOT_CURRENT", f"Job {other} is not the file's current conversion ({job_id}).")


@pytest.mark.parametrize("status", ["completed", "failed"])
def test_a_finished_conversion_has_nothing_to_cancel(svc: Services, status: str) -> None:
    file_id, _ = _converted(svc, status)
    with pytest.raises(Conflict) as refused:
        usecases.cancel_file(svc, OWNER, file_id)
    assert (refused.value.error_id, str(refused.value)) == ("NOT_CANCELLABLE", f"The conversion is {status}; there is nothing to cancel.")


def test_process_now_needs_the_priority_group_after_the_owner_check_and_acts_on_the_current_job(svc: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    from batchlane.domain.errors import NotFound

    file_id, job_id = _converted(svc, "waiting_batch")
    with pytest.raises(NotFound):
        usecases.process_now_file(svc, "someone-else", file_id, priority_group="prio")  # a 403 never confirms another user's file
    with pytest.raises(Forbidden) as refused:
        usecases.process_now_file(svc, OWNER, file_id, priority_group="prio")
    assert str(refused.value) == "Converting on-demand now (skipping the half-price batch lane) needs membership of the prio group."
    acted: list[Any] = []
    monkeypatch.setattr(usecases, "process_now", lambda s, jid: acted.append((s is svc, jid)) or SimpleNamespace(to_json=lambda: {"jobId": jid}))
    assert usecases.process_now_file(svc, OWNER, file_id, job_id=job_id) == {"jobId": job_id}
    assert acted == [(True, job_id)]


def test_resume_refuses_an_id_that_is_not_a_job_and_resumes_the_owners(svc: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    from batchlane.domain.errors import NotFound

    with pytest.raises(NotFound) as refused:
        usecases.resume_job(svc, OWNER, "nope")
    assert (refused.value.error_id, str(refused.value)) == ("JOB_NOT_FOUND", "No job nope.")
    resumed: list[Any] = []
    monkeypatch.setattr(usecases.budget, "resume_job", lambda s, owner, jid: resumed.append((s is svc, owner, jid)) or {"status": "processing"})
    job_id = "123E4567-E89B-12D3-A456-426614174000"
    assert usecases.resume_job(svc, OWNER, job_id) == {"status": "processing"}
    assert resumed == [(True, OWNER, job_id.lower())]


def test_deleting_a_file_removes_what_it_left_and_keeps_what_a_bedrock_job_may_still_read(svc: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    file_id, job_id = _converted(svc, "completed")
    upload_key = svc.uow().jobs.get_file(file_id).s3_key
    for key in (f"jobs/{job_id}/out.md", f"{keys.BATCH_PREFIX}{job_id}/in.jsonl"):
        svc.store.put_bytes(key, b"x")
    doomed, kept = usecases.stored_objects(svc, file_id)
    assert (sorted(doomed), kept) == (sorted([upload_key, f"jobs/{job_id}/out.md", f"{keys.BATCH_PREFIX}{job_id}/in.jsonl"]), [])
    in_flight = SimpleNamespace(job_id=job_id, open_lane_state=sorted(usecases.IN_FLIGHT_BATCH_STATES)[0])
    monkeypatch.setattr(type(svc.uow().reads), "jobs_of_file", lambda self, fid: [in_flight] if fid == file_id else [])
    doomed, kept = usecases.stored_objects(svc, file_id)
    assert (sorted(doomed), kept) == (sorted([upload_key, f"jobs/{job_id}/out.md"]), [f"{keys.BATCH_PREFIX}{job_id}/"])
    folder_file = svc.uow().jobs.put_file(dataclasses.replace(svc.uow().jobs.get_file(file_id), source_bucket="users-bucket"))
    assert upload_key not in usecases.stored_objects(svc, folder_file.id)[0]  # the user's own object is never deleted
    purged: list[Any] = []
    monkeypatch.setattr(usecases, "purge_members", lambda s, lanes: purged.append(s is svc))
    assert usecases.delete_file(svc, OWNER, file_id) == {"fileId": file_id, "deleted": True, "cancelledJobId": None}
    assert purged == [True] and svc.store.list_keys(f"jobs/{job_id}/") == []
