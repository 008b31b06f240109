"""api/views.py: how a conversion and a file look through the API and the console, field by field."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from batchlane.api.views import _phase, conversion_view, file_view
from batchlane.domain.advice import next_step
from batchlane.rows import HoldView, JobLanes, JobProgress, OwnerFile

T0, T1, T2 = (datetime(2026, 12, 6, h, 0, tzinfo=UTC) for h in (9, 10, 11))
LANES = JobLanes("submitted", None, "InProgress", "pooled", 40, 38, 2, Decimal("0.12"), T1, None, 2)
HOLD = HoldView(Decimal("5.00"), None, None, T2)
JOB = JobProgress(
    job_id="j-1", file_id="f-1", owner_id="alice", status="waiting_batch", model_id="m", total_pages=120, chunk_count=4, pages_failed=3,
    pages_batch=38, total_cost_usd=Decimal("0.671317"), error_id="PAGES_FAILED", error_message="3 pages failed", created_at=T0,
    started_at=T1, finished_at=None, retry_attempt=2, retry_pages=(4, 9), chunks_done=1, chunks_cancelled=1, pages_done=30,
    lanes=LANES, hold=HOLD,
)  # fmt: skip


def test_a_conversion_view_carries_every_field_by_its_api_name() -> None:
    assert conversion_view(JOB) == {
        "jobId": "j-1", "fileId": "f-1", "status": "waiting_batch", "phase": "batch_running", "batchWaiting": True, "modelId": "m",
        "pages": {"total": 120, "done": 30, "failed": 3, "batchServed": 38}, "chunks": {"total": 4, "done": 1, "cancelled": 1},
        "batch": {"state": "submitted", "endState": None, "bedrockStatus": "InProgress", "reason": "pooled", "records": 40, "accepted": 38,
                  "fallback": 2, "costUsd": "0.12", "bedrockJobs": 2, "submittedAt": T1.isoformat(), "closedAt": None},
        "hold": {"amountUsd": "5.00", "outcome": None, "settledUsd": None, "expiresAt": T2.isoformat()},
        "costUsd": "0.671317", "error": {"code": "PAGES_FAILED", "message": "3 pages failed", "nextStep": next_step("PAGES_FAILED")},
        "retry": {"attempt": 2, "pages": [4, 9]}, "createdAt": T0.isoformat(), "startedAt": T1.isoformat(), "finishedAt": None,
    }  # fmt: skip


def test_a_finished_conversion_without_lanes_hold_error_or_retry_shows_nulls() -> None:
    job = dataclasses.replace(
        JOB, status="completed", lanes=None, hold=None, error_id=None, error_message=None, retry_attempt=None, retry_pages=None, finished_at=T2
    )
    view = conversion_view(job)
    assert (view["phase"], view["batchWaiting"], view["batch"], view["hold"], view["error"], view["retry"], view["finishedAt"]) == (
        "completed", False, None, None, None, None, T2.isoformat(),
    )  # fmt: skip
    settled = conversion_view(dataclasses.replace(job, hold=HoldView(Decimal("5"), "settled", Decimal("0.67"), T2), retry_attempt=1, retry_pages=None))
    assert settled["hold"] == {"amountUsd": "5", "outcome": "settled", "settledUsd": "0.67", "expiresAt": T2.isoformat()}
    assert settled["retry"] == {"attempt": 1, "pages": []}


@pytest.mark.parametrize(
    ("status", "lane_state", "phase"),
    [
        ("waiting_batch", None, "batch_queued"), ("waiting_batch", "preparing", "batch_preparing"), ("waiting_batch", "submitted", "batch_running"),
        ("waiting_batch", "stopping", "batch_resuming"), ("waiting_batch", "closed", "batch_resuming"), ("pending", "closed", "queued"),
        ("processing", None, "converting"), ("splitting", None, "splitting"), ("paused_budget", None, "paused_budget"), ("failed", "closed", "failed"),
    ],
)  # fmt: skip
def test_the_phase_is_one_word_for_where_the_job_is(status: str, lane_state: str | None, phase: str) -> None:
    lanes = dataclasses.replace(LANES, state=lane_state) if lane_state else None
    assert _phase(dataclasses.replace(JOB, status=status, lanes=lanes)) == phase


def test_a_file_view_carries_its_conversion_and_whether_it_waits_for_the_batch_lane() -> None:
    f = OwnerFile("f-1", "book.pdf", 1234, "uploaded", T0, T1, "fj-1", JOB)
    view = file_view(f)
    assert view == {
        "fileId": "f-1", "name": "book.pdf", "sizeBytes": 1234, "status": "uploaded", "batchWaiting": True, "conversion": conversion_view(JOB),
        "folderJobId": "fj-1", "createdAt": T0.isoformat(), "updatedAt": T1.isoformat(),
    }  # fmt: skip
    never = file_view(dataclasses.replace(f, job=None, folder_job_id=None))
    assert (never["batchWaiting"], never["conversion"], never["folderJobId"]) == (False, None, None)
    done = file_view(dataclasses.replace(f, job=dataclasses.replace(JOB, status="completed")))
    assert done["batchWaiting"] is False
