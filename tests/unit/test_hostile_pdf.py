"""Hostile structure (issue 15): tiny PDFs that hung or crashed the split end as a stable error id
or as pages whose estimate is unknown, and a failed split leaves no chunk PDF behind."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from batchlane.aws.s3 import S3Store
from batchlane.domain.errors import InputError
from batchlane.filejob.source import store_chunk_sources
from batchlane.pdf import open_pdf
from batchlane.pdf.content import Deadline
from batchlane.pdf.split import _diagnose_with_pypdf, open_pdf_file
from batchlane_dev.local.pdfgen import deep_page_tree_pdf, huge_xref_pdf, make_pdf, object_flood_pdf, unbalanced_parentheses_pdf


def test_a_page_tree_5000_levels_deep_is_refused_as_too_complex_not_a_traceback():
    document = open_pdf(deep_page_tree_pdf(5_000), max_pages=10)  # pdfium opens it by its /Count ...
    with pytest.raises(InputError) as caught:
        document.chunk_pdf(document.chunks(10)[0])  # ... and cannot load the page: pypdf says why
    assert caught.value.error_id == "PDF_TOO_COMPLEX"


def test_an_xref_declaring_50_million_entries_is_too_complex_where_pypdf_must_read_it():
    """pdfium repairs the table and converts the file; pypdf, which reads what pdfium refuses, stops at its limit."""
    with pytest.raises(InputError) as caught:
        _diagnose_with_pypdf(huge_xref_pdf())
    assert caught.value.error_id == "PDF_TOO_COMPLEX"
    document = open_pdf(huge_xref_pdf(), max_pages=10)
    page = next(document.pages(document.chunks(10)[0]))
    assert (page.blank, page.estimate_known) == (False, False)  # pypdf cannot read it: the model looks, default estimate


def test_a_page_pypdf_cannot_walk_to_is_not_blank_and_has_no_estimate():
    document = open_pdf(deep_page_tree_pdf(300), max_pages=10)  # pdfium: fine; pypdf: deeper than its 100 levels
    page = next(document.pages(document.chunks(10)[0]))
    assert (page.blank, page.text_chars, page.estimate_known) == (False, 0, False)


def test_a_page_read_out_of_time_is_unknown_not_blank():
    document = open_pdf(unbalanced_parentheses_pdf(40_000), max_pages=1)
    assert document._inspect(1, Deadline(0.0, clock=lambda: 0.0)) == (False, 0, False, None)
    page = next(document.pages(document.chunks(1)[0]))  # with the real budget: read at once
    assert (page.blank, page.text_chars, page.estimate_known) == (False, 2, True)


def test_a_content_stream_past_the_scan_bound_is_not_blank_and_has_no_estimate(monkeypatch):
    from batchlane.pdf import split

    monkeypatch.setattr(split, "MAX_CONTENT_SCAN_BYTES", 64)
    document = open_pdf(make_pdf(1), max_pages=1)
    page = next(document.pages(document.chunks(1)[0]))
    assert (page.blank, page.text_chars, page.estimate_known) == (False, 0, False)


@mock_aws
def test_a_split_failing_midway_deletes_the_chunk_pdfs_it_wrote(tmp_path):
    """Two ordinary pages are written as chunks, the third sits 5,000 levels deep: no chunk PDF is left."""
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="hostile-pdfs")
    store = S3Store(s3, "hostile-pdfs")
    path = tmp_path / "upload.pdf"
    path.write_bytes(deep_page_tree_pdf(5_000, shallow_pages=2))
    with path.open("rb") as stream:
        document = open_pdf_file(stream, max_pages=10)
        assert document.page_count == 3
        with pytest.raises(InputError) as caught:
            store_chunk_sources(store, "job-1", document, document.chunks(1))
    assert caught.value.error_id == "PDF_TOO_COMPLEX"
    assert store.list_keys("jobs/job-1/") == []


# -- issue 21: every operation on user PDF content is bounded in time and memory ---------------------


def _sleep(seconds: float) -> str:
    import time

    time.sleep(seconds)
    return "slept"


def _allocate(megabytes: int) -> int:
    return len(bytearray(megabytes * 1024 * 1024))


def _refuse() -> None:
    raise InputError("no", error_id="PDF_ENCRYPTED")


def test_a_bounded_operation_past_its_deadline_is_killed_and_one_past_its_memory_is_stopped():
    from batchlane.pdf.bounded import Bound, OverBudget, run_bounded

    assert run_bounded(_allocate, 50, bound=Bound(seconds=60, memory_mb=200)) == 50 * 1024 * 1024
    with pytest.raises(OverBudget) as slow:
        run_bounded(_sleep, 600, bound=Bound(seconds=0.5, memory_mb=200))
    assert slow.value.reason == "deadline"
    with pytest.raises(OverBudget) as greedy:
        run_bounded(_allocate, 1_000, bound=Bound(seconds=60, memory_mb=200))
    assert greedy.value.reason == "memory"
    with pytest.raises(InputError) as refused:  # the child's own error comes back with its id
        run_bounded(_refuse, bound=Bound(seconds=60, memory_mb=200))
    assert refused.value.error_id == "PDF_ENCRYPTED"


def test_pages_sharing_one_5_mb_drawing_stream_end_the_survey_as_too_complex_when_its_deadline_kills_it(tmp_path):
    """300 pages x 5 MB of operators is ~90 s of pdfium parsing (0.3 s a page): the child is killed at its
    deadline, whatever the machine's speed, and the file is PDF_TOO_COMPLEX (a 1 s bound here: the rule, not the default)."""
    from batchlane.pdf.bounded import Bound, OverBudget
    from batchlane.pdf.survey import survey_pdf
    from batchlane_dev.local.pdfgen import shared_drawing_stream_pdf

    data = shared_drawing_stream_pdf()
    assert 55_000 < len(data) < 75_000
    path = tmp_path / "shared.pdf"
    path.write_bytes(data)
    with pytest.raises(InputError) as caught:
        survey_pdf(path, max_pages=1_000, bound=Bound(seconds=1.0, memory_mb=384))
    assert caught.value.error_id == "PDF_TOO_COMPLEX"
    assert isinstance(caught.value.__cause__, OverBudget) and caught.value.__cause__.reason == "deadline"


def test_one_page_inflating_to_30_mb_ends_the_survey_as_too_complex_at_its_memory_cap(tmp_path):
    """pdfium holds ~540 MB for it: past the survey's 384 MB on top of its process, the allocation fails."""
    from batchlane.pdf.bounded import OverBudget
    from batchlane.pdf.survey import survey_pdf
    from batchlane_dev.local.pdfgen import inflating_page_pdf

    data = inflating_page_pdf()
    assert 55_000 < len(data) < 62_000
    path = tmp_path / "inflating.pdf"
    path.write_bytes(data)
    with pytest.raises(InputError) as caught:
        survey_pdf(path, max_pages=10)
    assert caught.value.error_id == "PDF_TOO_COMPLEX"
    assert isinstance(caught.value.__cause__, OverBudget) and caught.value.__cause__.reason == "memory"


def test_a_page_inflating_past_the_content_cap_fails_page_too_complex_before_anything_parses_it(monkeypatch):
    """The chunk processor's view: the page is failed (never sent, no text layer read), its content only
    measured; pypdf's text extraction of it would take ~10 s and raise LimitReachedError."""
    from batchlane.ondemand.planner import PlannedPage
    from batchlane.pdf.fit import fit
    from batchlane_dev.local.pdfgen import inflating_page_pdf

    document = open_pdf(inflating_page_pdf(), max_pages=1)
    page = fit(next(document.pages(document.chunks(1)[0])))
    assert (page.failure, page.blank, page.estimate_known) == ("PAGE_TOO_COMPLEX", False, False)
    monkeypatch.setattr("batchlane.ondemand.planner.text_layer", lambda _: pytest.fail("the text layer of a page read cut short is not extracted"))
    assert PlannedPage(page, estimate=1200).layer == ""


def test_a_decompression_bomb_past_pypdfs_own_limit_is_page_too_complex_not_a_traceback():
    from batchlane_dev.local.pdfgen import inflating_page_pdf

    document = open_pdf(inflating_page_pdf(80_000_000), max_pages=1)  # past pypdf's 75 MB inflate limit
    page = next(document.pages(document.chunks(1)[0]))
    assert page.failure == "PAGE_TOO_COMPLEX"


def test_a_page_under_the_content_cap_still_converts_with_an_unknown_estimate():
    from batchlane_dev.local.pdfgen import inflating_page_pdf

    document = open_pdf(inflating_page_pdf(8_000_000), max_pages=1)  # past the 4 MB scan bound, under the 16 MB cap
    page = next(document.pages(document.chunks(1)[0]))
    assert (page.failure, page.blank, page.estimate_known) == (None, False, False)


def test_a_file_pdfium_refuses_whose_objects_take_pypdf_minutes_is_too_complex_within_the_bound(monkeypatch):
    """Issue 40: 300,000 objects and no usable xref (pypdf rebuilds the table object by object, ~8 s here; the
    900,000-object file of the review took 24-31 s, past API Gateway's 29 s). The diagnosis runs in the bounded
    child, so the answer is PDF_TOO_COMPLEX at the bound, saying so, whatever the file makes pypdf do."""
    from batchlane.pdf import split
    from batchlane.pdf.bounded import Bound

    monkeypatch.setattr(split, "DIAGNOSE_BOUND", Bound(seconds=1.0, memory_mb=768), raising=False)
    with pytest.raises(InputError) as caught:
        open_pdf(object_flood_pdf(300_000), max_pages=10)
    assert caught.value.error_id == "PDF_TOO_COMPLEX"
    assert "could not be read within 1 s" in str(caught.value)
