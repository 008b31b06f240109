"""Small rules at their edges: the base64 size a record travels in (domain/limits.py), the page form to fall back to
(domain/page_form.py), and a run that ended the very moment its row last moved (domain/workflow_end.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from batchlane.domain import workflow_end as we
from batchlane.domain.limits import RECORD_JSON_OVERHEAD_BYTES, SPLIT_PAGE_OVERHEAD_BYTES, encoded_size, estimated_record_bytes
from batchlane.domain.page_form import IMAGE, PDF, effective_form, other


@pytest.mark.parametrize(("raw", "encoded"), [(0, 0), (1, 4), (2, 4), (3, 4), (4, 8), (5, 8)])
def test_base64_takes_four_bytes_for_every_three_started(raw: int, encoded: int) -> None:
    assert encoded_size(raw) == encoded


def test_a_chunks_records_weigh_its_pages_encoded_with_their_overhead_and_a_json_envelope_each() -> None:
    raw = 10_000 + 3 * SPLIT_PAGE_OVERHEAD_BYTES

    assert estimated_record_bytes(10_000, 3) == 4 * ((raw + 2) // 3) + 3 * RECORD_JSON_OVERHEAD_BYTES
    assert estimated_record_bytes(None, 3) == 0


def test_the_other_form_of_an_image_is_a_pdf_and_of_a_pdf_an_image() -> None:
    assert (other(PDF), other(IMAGE)) == (IMAGE, PDF)


def test_a_recorded_form_this_release_does_not_know_falls_back_to_pdf() -> None:
    assert effective_form("auto", {"m": "svg"}, "m") == PDF
    assert effective_form("auto", {"m": IMAGE}, "m") == IMAGE


def test_a_run_that_ended_the_very_moment_its_row_last_moved_ended_unrecorded() -> None:
    moment = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    ended = we.Execution("conversion", "conversion-j1", "FAILED", moment - timedelta(minutes=30), moment)

    assert we.ended_unrecorded(ended, moment) is True
    assert we.ended_unrecorded(ended, moment + timedelta(seconds=1)) is False
