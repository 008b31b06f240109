"""api/results.py and api/live.py on the fakes: a download's answer field by field, the source read per kind,
the ETA and the money beside a job, an owner's budget. Each answer is what the console and the CLI read."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest
from usecase_fakes import MODEL

from batchlane import keys
from batchlane.api import live, results, usecases
from batchlane.domain.errors import Conflict, NotFound
from batchlane.pdf.split import plan_chunks
from batchlane.ports import DOWNLOAD_URL_TTL_S, Services, StoredObject
from fakes import FakeUnitOfWork

OWNER = "alice-7"
EXPIRES = datetime(2027, 1, 1, tzinfo=UTC)


class Downloads:
    """The presigned GET port over the fake store: a URL naming the key, the file name and the lifetime."""

    def __init__(self, svc: Services) -> None:
        self.svc = svc

    def head(self, key: str) -> StoredObject:
        return StoredObject(self.svc.store.size(key), EXPIRES)  # NotFound when it is not stored

    def presigned_get(self, key: str, *, filename: str, ttl_s: int = DOWNLOAD_URL_TTL_S) -> str:
        return f"https://dl.example/{key}?as={filename}&ttl={ttl_s}"


def _job(uow: FakeUnitOfWork, name: str = "Book: One.pdf", status: str = "completed", **columns: Any) -> tuple[str, Any]:
    file_row = uow.jobs.insert_file(owner_id=OWNER, name=name, s3_key=f"uploads/{OWNER}/src", size_bytes=4321)
    job = uow.jobs.insert_job(
        file_id=str(file_row.id), owner_id=OWNER, status="processing", options={}, model_id=MODEL, total_pages=6, pages_per_chunk=3, chunks=plan_chunks(6, 3)
    )
    uow.jobs.put_job(dataclasses.replace(job, status=status, **columns))
    return str(job.id), file_row


def test_a_completed_jobs_download_names_every_file_beside_its_markdown(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id, _ = _job(fake_uow, markdown_key="jobs/j/out.md", pages_failed=1)
    svc.store.put_bytes("jobs/j/out.md", b"# Book\n")
    svc.store.put_bytes(keys.pages_key(job_id), b"{}\n{}\n")
    svc.store.put_bytes(keys.images_prefix(job_id) + "p2-1.png", b"png")
    svc.store.put_json(
        keys.outputs_key(job_id),
        {
            "html": {"status": "written", "key": "jobs/j/out.html", "sizeBytes": 99},
            "docx": {"status": "failed", "error": {"code": "DOCX_FAILED", "message": "m"}},
            "json": {"status": "failed"},
        },
    )
    before = datetime.now(UTC)
    answer = results.markdown_download(svc, Downloads(svc), OWNER, job_id)
    url_expires = datetime.fromisoformat(answer.pop("urlExpiresAt"))
    assert before + timedelta(seconds=DOWNLOAD_URL_TTL_S) <= url_expires <= datetime.now(UTC) + timedelta(seconds=DOWNLOAD_URL_TTL_S)
    assert answer == {
        "jobId": job_id, "status": "completed", "fileName": "Book_ One.md", "url": f"https://dl.example/jobs/j/out.md?as=Book_ One.md&ttl={DOWNLOAD_URL_TTL_S}",
        "method": "GET", "expiresInSeconds": DOWNLOAD_URL_TTL_S, "objectExpiresAt": EXPIRES.isoformat(), "retentionDays": keys.OBJECT_EXPIRY_DAYS,
        "sizeBytes": 7, "pagesFailed": 1,
        "pages": {"fileName": "Book_ One.pages.jsonl", "url": f"https://dl.example/{keys.pages_key(job_id)}?as=Book_ One.pages.jsonl&ttl={DOWNLOAD_URL_TTL_S}", "sizeBytes": 6},
        "images": [{"fileName": "Book__One.images/p2-1.png", "url": f"https://dl.example/{keys.images_prefix(job_id)}p2-1.png?as=p2-1.png&ttl={DOWNLOAD_URL_TTL_S}"}],
        "renderings": [
            {"format": "docx", "status": "failed", "error": {"code": "DOCX_FAILED", "message": "m"}},
            {"format": "html", "status": "written", "fileName": "Book_ One.converted.html", "url": f"https://dl.example/jobs/j/out.html?as=Book_ One.converted.html&ttl={DOWNLOAD_URL_TTL_S}", "sizeBytes": 99},
            {"format": "json", "status": "failed", "error": {"code": "RENDER_FAILED", "message": "not produced"}},
        ],
    }  # fmt: skip


def test_a_job_assembled_before_pages_and_renderings_existed_lists_none(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id, _ = _job(fake_uow, name="report.docx", markdown_key="jobs/k/out.md")
    svc.store.put_bytes("jobs/k/out.md", b"x")
    answer = results.markdown_download(svc, Downloads(svc), OWNER, job_id)
    assert (answer["fileName"], answer["pages"], answer["images"], answer["renderings"]) == ("report.md", None, [], [])


def test_a_download_before_the_markdown_or_after_it_expired_says_which(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id, _ = _job(fake_uow, status="processing")
    with pytest.raises(Conflict) as early:
        results.markdown_download(svc, Downloads(svc), OWNER, job_id)
    assert early.value.error_id == "MARKDOWN_NOT_READY" and str(early.value) == "The job is processing; its Markdown exists once it has completed."
    gone, _ = _job(fake_uow, markdown_key="jobs/gone/out.md")
    with pytest.raises(results.ObjectExpired) as expired:
        results.markdown_download(svc, Downloads(svc), OWNER, gone)
    assert (
        str(expired.value)
        == f"The Markdown of job {gone} is no longer stored: the working bucket keeps results {keys.OBJECT_EXPIRY_DAYS} days. Convert the file again."
    )
    with pytest.raises(NotFound):
        results.markdown_download(svc, Downloads(svc), "someone-else", gone)


@pytest.mark.parametrize(
    ("name", "md"),
    [
        ("Book: One.pdf", "Book_ One.md"),
        ("notes", "notes.md"),
        ("  .pdf", "document.md"),
        ("a/b.PDF", "a_b.md"),
        ("x.y.docx", "x.y.md"),
        ("über-1_2.pdf", "über-1_2.md"),
    ],
)
def test_the_markdowns_name_comes_from_the_files(name: str, md: str) -> None:
    assert results._markdown_name(name) == md


@pytest.mark.parametrize(("fmt", "name"), [("docx", "book.converted.docx"), ("html", "book.converted.html"), ("json", "book.blocks.jsonl")])
def test_a_renderings_name_never_takes_a_sources_name(fmt: str, name: str) -> None:
    assert results.rendering_name("book.md", fmt) == name
    assert results.rendering_name("book", fmt) == name


@pytest.mark.parametrize(
    ("source_type", "kind", "url_key"),
    [("pdf", "pdf", "file"), ("tiff", "pages", "pages"), ("png", "pages", "pages"), ("docx", "document", None), ("html", "document", None)],
)
def test_the_source_read_is_the_pdf_the_page_view_ranges_over(
    svc: Services, fake_uow: FakeUnitOfWork, source_type: str, kind: str, url_key: str | None
) -> None:
    job_id, file_row = _job(fake_uow, status="processing", source_type=source_type)
    answer = live.source_read(svc, Downloads(svc), OWNER, job_id)
    key = {"file": file_row.s3_key, "pages": keys.pages_source_key(job_id), None: None}[url_key]
    assert answer == {
        "jobId": job_id, "kind": kind, "fileType": source_type, "url": None if key is None else f"https://dl.example/{key}?as=source.pdf&ttl={DOWNLOAD_URL_TTL_S}",
        "method": "GET", "ranged": kind != "document", "sizeBytes": 4321, "expiresInSeconds": DOWNLOAD_URL_TTL_S,
    }  # fmt: skip


NOW = datetime(2026, 12, 6, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("view", "expected"),
    [
        ({"status": "completed", "finishedAt": "2026-12-06T11:00:00+00:00"}, {"seconds": 0, "basis": "finished", "at": "2026-12-06T11:00:00+00:00"}),
        ({"status": "cancelled", "finishedAt": None}, {"seconds": 0, "basis": "finished", "at": None}),
        ({"status": "waiting_batch", "batch": {"submittedAt": "2026-12-06T10:00:00+00:00"}}, {"seconds": 22 * 3600, "basis": "batch_limit", "at": "2026-12-07T10:00:00+00:00"}),
        ({"status": "waiting_batch", "batch": None}, {"seconds": 24 * 3600, "basis": "batch_limit", "at": "2026-12-07T12:00:00+00:00"}),
        ({"status": "waiting_batch", "batch": {"submittedAt": "2026-12-05T10:00:00+00:00"}}, {"seconds": 0, "basis": "batch_limit", "at": "2026-12-06T10:00:00+00:00"}),
        ({"status": "processing", "pages": {"total": 10, "done": 4}, "startedAt": "2026-12-06T11:58:00+00:00"}, {"seconds": 180, "basis": "pace", "at": "2026-12-06T12:03:00+00:00"}),
        ({"status": "processing", "pages": {"total": 10, "done": 12}, "startedAt": "2026-12-06T11:58:00+00:00"}, {"seconds": 0, "basis": "pace", "at": NOW.isoformat()}),
        ({"status": "processing", "pages": {"total": 10, "done": 0}, "startedAt": "2026-12-06T11:58:00+00:00"}, {"seconds": None, "basis": "unknown", "at": None}),
        ({"status": "processing", "pages": {"total": 0, "done": 3}, "startedAt": "2026-12-06T11:58:00+00:00"}, {"seconds": None, "basis": "unknown", "at": None}),
        ({"status": "processing", "pages": {"total": 10, "done": 3}, "startedAt": None}, {"seconds": None, "basis": "unknown", "at": None}),
    ],
)  # fmt: skip
def test_the_eta_is_the_pace_so_far_or_the_batch_jobs_limit(view: dict[str, Any], expected: dict[str, Any]) -> None:
    assert live.eta(view, batch_timeout_hours=24, now=NOW) == expected


def test_an_eta_started_this_instant_still_has_a_pace() -> None:
    view = {"status": "processing", "pages": {"total": 3, "done": 1}, "startedAt": NOW.isoformat()}
    assert live.eta(view, batch_timeout_hours=24, now=NOW)["basis"] == "pace"


def test_an_owners_budget_answers_what_is_committed_spent_held_and_left(svc: Services, fake_uow: FakeUnitOfWork) -> None:
    usecases.set_owner_budget(svc, "admin", OWNER, usd_per_month=Decimal("10"), max_live_jobs=3, max_live_pages=500)
    job_id, _ = _job(fake_uow, status="processing")
    fake_uow.ledger.place_hold(job_id=job_id, owner_id=OWNER, amount_usd=Decimal("2.5"), hours=30)
    answer = usecases.owner_budget(svc, OWNER)
    assert answer == {
        "usdPerMonth": "10", "committedUsd": "2.500000", "spentUsd": "0.000000", "heldUsd": "2.500000", "leftUsd": "7.500000",
        "maxLiveJobs": 3, "liveJobs": answer["liveJobs"], "maxLivePages": 500, "livePages": answer["livePages"],
    }  # fmt: skip
    assert answer["liveJobs"] >= 1 and answer["livePages"] >= 6


def test_a_budget_override_is_refused_for_an_owner_id_out_of_bounds_and_answers_with_the_owner(svc: Services) -> None:
    from batchlane.domain.errors import InputError

    for bad in ("", "x" * 129):
        with pytest.raises(InputError, match="ownerId must be 1–128 characters"):
            usecases.set_owner_budget(svc, "admin", bad, usd_per_month=None, max_live_jobs=None, max_live_pages=None)
    answer = usecases.set_owner_budget(svc, "admin", "x" * 128, usd_per_month=Decimal("0"), max_live_jobs=None, max_live_pages=None)
    assert answer["ownerId"] == "x" * 128 and answer["usdPerMonth"] == "0" and answer["leftUsd"] == "0.000000"


def test_the_failed_page_lists_retry_estimate_is_priced_on_the_jobs_model_not_the_deployments_default(
    svc: Services, fake_uow: FakeUnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A retry runs on its job's model (filejob/retry.py): "at most" priced on the deployment's default model was
    another model's price (stop 47)."""
    from batchlane.filejob import retry as retries
    from batchlane.filejob.budget import worst_case_pages_hold

    haiku = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
    assert svc.settings.batchlane_model_id != haiku
    job_id, _ = _job(fake_uow, pages_failed=2, model_id=haiku)
    monkeypatch.setattr(results.retries, "failed_pages", lambda s, jid: [retries.FailedPage(3, "ThrottlingException", 2, "on_demand", 0)] * 2)
    answer = results.job_pages(svc, OWNER, job_id, status="failed")
    on_haiku = worst_case_pages_hold(svc, model_id=haiku, pages=2).quantize(Decimal("0.0001"))
    assert on_haiku != worst_case_pages_hold(svc, model_id=svc.settings.batchlane_model_id, pages=2).quantize(Decimal("0.0001"))
    assert answer["retryEstimate"]["atMostUsd"] == str(on_haiku)


def test_the_failed_page_list_estimates_a_retry_and_names_the_pages_a_retry_will_not_change(
    svc: Services, fake_uow: FakeUnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    from batchlane.filejob import retry as retries
    from batchlane.filejob.budget import worst_case_pages_hold

    job_id, _ = _job(fake_uow, pages_failed=2)
    asked: list[str] = []
    failed = [retries.FailedPage(3, "ThrottlingException", 2, "on_demand", 0), retries.FailedPage(5, sorted(retries.UNLIKELY_TO_CHANGE)[0], 1, "batch", 1)]
    monkeypatch.setattr(results.retries, "failed_pages", lambda s, jid: asked.append(jid) or failed)
    answer = results.job_pages(svc, OWNER, job_id, status="failed")
    at_most = worst_case_pages_hold(svc, model_id=svc.settings.batchlane_model_id, pages=2).quantize(Decimal("0.0001"))
    assert asked == [job_id] and at_most > 0
    assert answer == {
        "jobId": job_id, "status": "completed", "filter": {"status": "failed"}, "pages": [p.to_json() for p in failed], "count": 2,
        "retryEstimate": {"pages": 2, "atMostUsd": str(at_most), "unlikelyToChange": [5]},
    }  # fmt: skip
    monkeypatch.setattr(results.retries, "failed_pages", lambda s, jid: [])
    assert results.job_pages(svc, OWNER, job_id, status="failed") == {
        "jobId": job_id,
        "status": "completed",
        "filter": {"status": "failed"},
        "pages": [],
        "count": 0,
    }
    with pytest.raises(NotFound):
        results.job_pages(svc, "someone-else", job_id, status="failed")


def test_a_retry_and_its_history_are_asked_for_the_owners_job_with_the_callers_narrowing(
    svc: Services, fake_uow: FakeUnitOfWork, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id, _ = _job(fake_uow, pages_failed=2)
    calls: list[Any] = []
    monkeypatch.setattr(
        results.retries,
        "start_retry",
        lambda s, jid, *, error_ids, pages: calls.append((s is svc, jid, error_ids, pages)) or SimpleNamespace(to_json=lambda: {"attempt": 1}),
    )
    monkeypatch.setattr(results.retries, "retry_history", lambda s, jid: calls.append((s is svc, jid)) or [{"attempt": 1}])
    assert results.retry_job(svc, OWNER, job_id, error_ids=["E1"], pages=[3]) == {"attempt": 1}
    assert results.job_retries(svc, OWNER, job_id) == {"jobId": job_id, "retries": [{"attempt": 1}]}
    assert calls == [(True, job_id, ["E1"], [3]), (True, job_id)]
    for call in (lambda: results.retry_job(svc, "someone-else", job_id, error_ids=None, pages=None), lambda: results.job_retries(svc, "someone-else", job_id)):
        with pytest.raises(NotFound):
            call()


def test_the_live_block_prices_the_jobs_spend_and_scales_the_batch_limit(svc: Services, fake_uow: FakeUnitOfWork, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = dataclasses.replace(svc, settings=svc.settings.model_copy(update={"batch_conversion_timeout_hours": 24, "batchlane_time_scale": 4.0}))  # type: ignore[type-var]
    asked: list[Any] = []
    monkeypatch.setattr(live, "money", lambda reads, job_id: asked.append(job_id) or {"costSoFarUsd": "0"})
    monkeypatch.setattr(live, "eta", lambda view, *, batch_timeout_hours: asked.append(batch_timeout_hours) or {"basis": "x"})
    view = {"jobId": "j-3", "status": "processing"}
    assert live.with_live(fast, view) == {**view, "live": {"costSoFarUsd": "0", "eta": {"basis": "x"}, "batchTimeoutHours": 24}}
    assert asked == ["j-3", 6.0]
