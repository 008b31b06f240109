"""A folder job's policy decisions (domain/folder_policy.py): retries, and the lane a deadline allows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from batchlane.domain.errors import InputError
from batchlane.domain.folder_policy import NOT_RETRYABLE, check_deadline, deadline_lane, retry_file


@pytest.mark.parametrize("error_id", ["SPLIT_FAILED", "INTAKE_UNAVAILABLE", "CHUNKS_INCOMPLETE", None])
def test_a_passing_failure_runs_again_up_to_max_retries(error_id: str | None) -> None:
    assert retry_file(error_id, attempts=1, max_retries=2)
    assert retry_file(error_id, attempts=2, max_retries=2)
    assert not retry_file(error_id, attempts=3, max_retries=2)  # 1 conversion + 2 retries spent
    assert not retry_file(error_id, attempts=1, max_retries=0)


@pytest.mark.parametrize("error_id", ["NOT_PDF", "PDF_CORRUPT", "PDF_ENCRYPTED", "PDF_TOO_COMPLEX", "PDF_TOO_LARGE", "OUTPUT_COLLISION", "BUDGET_EXCEEDED"])
def test_a_failure_in_the_document_the_spec_or_the_budget_is_never_retried(error_id: str) -> None:
    assert error_id in NOT_RETRYABLE
    assert not retry_file(error_id, attempts=1, max_retries=10)


NOW = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
TURNAROUND_H = 26.0  # 24 h batch timeout + 2 h grace, the deployment's batch_deadline_hours


def test_a_deadline_inside_the_batch_turnaround_sends_the_files_on_demand() -> None:
    assert deadline_lane(NOW + timedelta(hours=25, minutes=59), NOW, TURNAROUND_H) == "deadline"
    assert deadline_lane(NOW + timedelta(hours=1), NOW, TURNAROUND_H) == "deadline"
    assert deadline_lane(NOW - timedelta(minutes=5), NOW, TURNAROUND_H) == "deadline"  # passed while the job ran: fastest lane


def test_a_deadline_with_room_for_the_batch_lane_or_none_leaves_the_rule_to_decide() -> None:
    assert deadline_lane(NOW + timedelta(hours=26), NOW, TURNAROUND_H) is None
    assert deadline_lane(NOW + timedelta(days=3), NOW, TURNAROUND_H) is None
    assert deadline_lane(None, NOW, TURNAROUND_H) is None
    assert deadline_lane(datetime(2026, 12, 1, 8, 0), NOW, TURNAROUND_H) == "deadline"  # no zone: UTC


def test_a_deadline_already_past_is_refused_at_submit() -> None:
    with pytest.raises(InputError) as past:
        check_deadline(NOW - timedelta(seconds=1), NOW)
    assert past.value.error_id == "DEADLINE_PAST"
    check_deadline(NOW + timedelta(seconds=1), NOW)
    check_deadline(None, NOW)


def test_a_full_live_page_cap_makes_a_file_wait_unless_the_document_alone_exceeds_it() -> None:
    from batchlane.domain.budget import Limits
    from batchlane.domain.folder_policy import waits_for_capacity

    limits = Limits(usd_per_month=Decimal(250), max_live_jobs=20, max_live_pages=100)
    assert waits_for_capacity("LIVE_PAGES_LIMIT", 40, limits)  # others hold the pages now: queued again
    assert not waits_for_capacity("LIVE_PAGES_LIMIT", 101, limits)  # never fits: fails with its error id
    assert not waits_for_capacity("PDF_CORRUPT", 40, limits)


@pytest.mark.parametrize("data", [b"", b"plain text saved as notes.pdf\n"], ids=["empty", "text-named-pdf"])
def test_a_file_the_split_refuses_as_not_a_pdf_is_never_retried_in_a_folder_job(data: bytes) -> None:
    """Issue 24.8: the id the split really raises (not a hand-written one) must stop the folder's retries."""
    from batchlane.pdf.split import open_pdf

    with pytest.raises(InputError) as refused:
        open_pdf(data, max_pages=10)
    assert refused.value.error_id in {"PDF_EMPTY", "PDF_NOT_PDF"}
    assert not retry_file(refused.value.error_id, attempts=1, max_retries=2)
