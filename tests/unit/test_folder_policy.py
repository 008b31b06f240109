"""A folder job's policy decisions (domain/folder_policy.py): retries, and the lane a deadline allows."""

from __future__ import annotations

import pytest

from batchlane.domain.folder_policy import NOT_RETRYABLE, retry_file


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
