"""Hostile structure (issue 15): tiny PDFs that hung or crashed the split end as a stable error id
or as pages whose estimate is unknown, and a failed split leaves no chunk PDF behind."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from batchlane.aws.s3 import S3Store
from batchlane.conversion.source import store_chunk_sources
from batchlane.domain.errors import InputError
from batchlane.pdf import open_pdf
from batchlane.pdf.content import Deadline
from batchlane.pdf.split import _diagnose_with_pypdf, open_pdf_file
from batchlane_dev.local.pdfgen import deep_page_tree_pdf, huge_xref_pdf, make_pdf, unbalanced_parentheses_pdf


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
