"""Several pages in one request, and splitting the answer by markers."""

import pytest
from ondemand_fakes import CONFIG

from batchlane.claude import MarkerProblem, build_page_request, build_pages_request, split_by_markers, strip_own_marker
from batchlane.claude.request import PAGE_INSTRUCTION


def test_a_group_of_one_is_exactly_the_single_page_request_the_batch_lane_captures():
    single = build_pages_request(chunk_index=3, pages=[(151, b"PDF")], config=CONFIG)
    assert single == build_page_request(chunk_index=3, page_number=151, pdf_bytes=b"PDF", config=CONFIG)
    assert single.text == PAGE_INSTRUCTION and single.record_id == "c3-p151"


def test_a_multi_page_request_names_each_document_and_has_its_own_prompt_hash():
    request = build_pages_request(chunk_index=0, pages=[(7, b"A"), (8, b"B"), (9, b"C")], config=CONFIG)
    blocks = request.body()["messages"][0]["content"]
    assert [b["title"] for b in blocks[:-1]] == ["page-7", "page-8", "page-9"]
    assert "<!-- Page N -->" in blocks[-1]["text"]
    assert request.page_numbers == (7, 8, 9)
    assert request.prompt_hash != build_page_request(chunk_index=0, page_number=7, pdf_bytes=b"A", config=CONFIG).prompt_hash


def test_markers_split_the_answer_page_by_page():
    text = "<!-- Page 4 -->\n\n# Four\n\nbody four\n\n<!--page 5-->\nfive\n\n<!-- Page 6 -->"
    assert split_by_markers(text, [4, 5, 6]) == {4: "# Four\n\nbody four", 5: "five", 6: ""}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("<!-- Page 1 -->\none\n<!-- Page 3 -->\nthree", "missing"),  # skipped marker: page 2's text would land under page 1
        ("<!-- Page 1 -->\none\n<!-- Page 1 -->\ntwo\n<!-- Page 3 -->\nthree", "repeated"),
        ("<!-- Page 2 -->\ntwo\n<!-- Page 1 -->\none\n<!-- Page 3 -->\nthree", "out_of_order"),
        ("<!-- Page 1 -->\none\n<!-- Page 2 -->\ntwo\n<!-- Page 9 -->\nnine", "unexpected"),
        ("Here is the Markdown:\n<!-- Page 1 -->\none\n<!-- Page 2 -->\n<!-- Page 3 -->", "preamble"),
        ("one two three, no markers at all", "missing"),
    ],
)
def test_an_answer_with_untrustworthy_markers_is_refused(text, reason):
    assert split_by_markers(text, [1, 2, 3]) == MarkerProblem(reason)


def test_a_single_page_answer_loses_only_its_own_leading_marker():
    assert strip_own_marker("<!-- Page 8 -->\n\n# Eight", 8) == "# Eight"
    assert strip_own_marker("<!-- Page 9 -->\n\n# Eight", 8) == "<!-- Page 9 -->\n\n# Eight"
