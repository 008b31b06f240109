"""`batchlane demo --pdf` opens a user's PDF under the product's own bounds (issue 41.4): a malformed or hostile PDF
ends as the product would end it (its error id, from the job), never a traceback or an unbounded wait in the demo."""

from __future__ import annotations

from batchlane.pdf.bounded import Bound
from batchlane.pdf.survey import SURVEY_BOUND
from batchlane_dev.local.demo import sampled_record_cost_ms
from batchlane_dev.local.pdfgen import deep_page_tree_pdf, make_pdf, shared_drawing_stream_pdf


def test_the_demo_sampling_of_a_page_tree_5000_levels_deep_answers_none_not_a_pdfium_traceback():
    """pypdfium2 opens it, then `import_pages` raises PdfiumError ("Failed to import pages"): today it escapes."""
    assert sampled_record_cost_ms(deep_page_tree_pdf()) is None


def test_the_demo_sampling_of_a_content_bomb_stops_at_its_bound_instead_of_parsing_for_minutes():
    """300 pages sharing 5 MB of drawing operators: ~0.3 s a page for pdfium, unbounded today. Under a 1 s bound the
    child is killed and the clock falls back to its default (a 1 s bound here: the rule, not the default)."""
    assert sampled_record_cost_ms(shared_drawing_stream_pdf(), bound=Bound(seconds=1.0, memory_mb=384)) is None


def test_the_demo_sampling_of_an_ordinary_pdf_still_times_its_records():
    # The survey's 15 s wall-clock bound, under a loaded CI (every core busy), killed this child once: the bound's
    # seconds are not what this test is about (the content bomb's test is), so they are generous here.
    cost = sampled_record_cost_ms(make_pdf(12), bound=Bound(seconds=600.0, memory_mb=SURVEY_BOUND.memory_mb))
    assert cost is not None and cost > 0
