"""Every page keeps a marker a reader and a parser can trust (domain/markdown.py): a failure's reason that cannot
break out of its comment nor its code span, empty pages that still say they were there, and pages the join misses;
and a split job that is not for the batch lane is queued for on-demand (domain/status.py)."""

from __future__ import annotations

import pytest

from batchlane.domain import status as st
from batchlane.domain.markdown import PageText, assemble, failed_marker, failed_page_notice, render_page


def test_a_failure_reason_cannot_close_its_html_comment_early_nor_break_its_line() -> None:
    assert failed_marker(4, "stop --> here\nand there") == "<!-- Page 4: failed (stop - -> here and there) -->"


def test_a_failure_with_no_reason_says_unknown() -> None:
    assert failed_marker(4, "  ") == "<!-- Page 4: failed (unknown) -->"
    assert failed_page_notice(4, "") == "> **Page 4 was not converted** (`unknown`): its content is missing here."
    assert render_page(PageText(4, "failed")).startswith("<!-- Page 4: failed (unknown) -->")


def test_a_failure_reason_shown_to_the_reader_stays_one_code_span_on_one_line() -> None:
    notice = failed_page_notice(4, "bad `token`\n  in   the answer")

    assert notice == "> **Page 4 was not converted** (`bad 'token' in the answer`): its content is missing here."


def test_a_truncated_page_with_no_text_is_its_two_markers() -> None:
    assert render_page(PageText(3, "truncated", "  ")) == "<!-- Page 3 -->\n\n<!-- Page 3: truncated -->"


def test_a_blank_page_is_its_marker_alone() -> None:
    assert render_page(PageText(2, "blank", "")) == "<!-- Page 2 -->"


def test_joining_pages_names_a_missing_first_page_and_ends_with_one_newline() -> None:
    with pytest.raises(ValueError, match=r"^1 page\(s\) have no result, first \[1\]$"):
        assemble([PageText(2, "converted", "two")], expected_pages=2)

    assert assemble([PageText(1, "converted", "one")], expected_pages=1) == "<!-- Page 1 -->\n\none\n"


def test_a_split_job_that_is_not_for_the_batch_lane_is_queued_pending() -> None:
    move = st.queue()

    assert (move.entity, move.target) == (st.Entity.JOB, "pending")
    assert move.allows("splitting") and not move.allows("processing")
