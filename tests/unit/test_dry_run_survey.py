"""The dry run's page survey: exact on small files, a seeded (repeatable) sample on large ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from batchlane.domain.errors import InputError
from batchlane.pdf.survey import survey_pdf
from batchlane_dev.local.pdfgen import make_pdf


def test_every_page_is_inspected_below_the_sample_size(tmp_path: Path) -> None:
    path = tmp_path / "doc.pdf"
    path.write_bytes(make_pdf(30, blank_every=5))
    survey = survey_pdf(path, max_pages=100)
    assert (survey.pages, survey.blank, survey.scans, survey.inspected) == (30, 6, 0, 30)
    assert survey.text_chars_nonblank > 0


def test_large_files_are_sampled_repeatably_and_the_page_count_stays_exact(tmp_path: Path) -> None:
    path = tmp_path / "doc.pdf"
    path.write_bytes(make_pdf(200, blank_every=10))
    first = survey_pdf(path, max_pages=1000, sample=50)
    assert first.pages == 200 and first.inspected == 50
    assert first == survey_pdf(path, max_pages=1000, sample=50), "a dry run answers the same twice"
    assert 0 < first.blank < 60  # 20 really: an estimate, not a count


def test_the_page_limit_is_the_conversions(tmp_path: Path) -> None:
    path = tmp_path / "doc.pdf"
    path.write_bytes(make_pdf(12))
    with pytest.raises(InputError) as caught:
        survey_pdf(path, max_pages=10)
    assert caught.value.error_id == "PDF_TOO_MANY_PAGES"


def test_a_page_tree_too_deep_for_pdfium_is_refused_with_a_stable_id_not_a_500(tmp_path: Path) -> None:
    from batchlane_dev.local.pdfgen import deep_page_tree_pdf

    path = tmp_path / "deep.pdf"
    path.write_bytes(deep_page_tree_pdf(5_000, shallow_pages=2))
    with pytest.raises(InputError) as caught:
        survey_pdf(path, max_pages=100)
    assert caught.value.error_id == "PDF_TOO_COMPLEX"
