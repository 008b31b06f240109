"""The document pass at its edges (domain/assembly.py): blocks that are not prose never run on into the next page,
tables and lists continued in their odd shapes, which edge lines are running heads and folios and which are content,
heading levels at their bounds, figure regions and links, and pages the pass must account for."""

from __future__ import annotations

import re

import pytest

from batchlane.domain.assembly import (
    Figure,
    Headings,
    assemble_document,
    clean_text,
    page_blocks,
    raw_document,
    split_region,
    survey,
)
from batchlane.domain.markdown import PageText


def _pages(bodies: list[str], statuses: dict[int, str] | None = None) -> list[PageText]:
    return [
        PageText(n, (statuses or {}).get(n, "converted"), body, "throttled" if (statuses or {}).get(n) == "failed" else None)
        for n, body in enumerate(bodies, 1)
    ]


def _assemble(bodies: list[str], statuses: dict[int, str] | None = None, figures: dict[int, list[Figure]] | None = None) -> str:
    pages = _pages(bodies, statuses)
    return "".join(assemble_document(pages, survey(pages), expected_pages=len(pages), figures=figures))


WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango".split()


def _text(n: int) -> str:
    """Two lines of page ``n``'s own text: short, as edge lines are, but never repeated and with no number in them."""
    word = WORDS[n - 1]
    return f"The {word} part begins.\n\nThe {word} part ends."


def _body(document: str) -> str:
    """The document without its page markers: what a reader sees of the text."""
    return re.sub(r"\n*<!-- Page \d+ -->\n*", "\n", document)


# -- clean text and blocks --------------------------------------------------------------------------
def test_an_old_mac_line_break_is_a_line_break() -> None:
    assert clean_text("one\rtwo") == "one\ntwo"


@pytest.mark.parametrize("fence", ["```", "~~~", "   ```"], ids=["backticks", "tildes", "indented"])
def test_a_fenced_code_block_with_blank_lines_inside_stays_one_block(fence: str) -> None:
    code = f"{fence}\nfirst()\n\nsecond()\n{fence.strip()}"

    assert page_blocks(f"Before.\n\n{code}\n\nAfter.") == ["Before.", code.rstrip(), "After."]


def test_a_blocks_indentation_and_its_first_letters_are_kept() -> None:
    markdown = "Intro.\n\n    indented code\n    more code\n\nX-rays pass.\n\n- item\n  - nested item\n\nXYZ closes."

    assert page_blocks(markdown) == ["Intro.", "    indented code\n    more code", "X-rays pass.", "- item\n  - nested item", "XYZ closes."]


def test_a_page_ending_in_an_indented_block_keeps_its_indentation() -> None:
    assert page_blocks("Intro.\n\n    indented code") == ["Intro.", "    indented code"]


# -- what never runs on into the next page -----------------------------------------------------------
@pytest.mark.parametrize(
    "block",
    ["```\ncode()\n```", "~~~\ncode()\n~~~", "&lt;div>a box&lt;/div>", "![a chart](chart.png)", "*[Figure: a chart]*", "$$ e = mc^2 $$", "> a quoted line"],
    ids=["backtick-code", "tilde-code", "html", "image", "figure-description", "formula", "quote"],
)
def test_a_block_that_is_not_prose_is_never_joined_with_the_next_pages_text(block: str) -> None:
    document = _assemble([f"Intro.\n\n{block}", "continues in lower case"])

    assert f"{block}\n\n<!-- Page 2 -->\n\ncontinues in lower case" in document


@pytest.mark.parametrize(
    "block",
    ["![a chart](chart.png) as drawn", "*[Figure: a chart]* as drawn", "   | a | b |\n   |---|---|\n   | 1 | 2 |"],
    ids=["image-with-caption", "figure-with-caption", "indented-table"],
)
def test_an_image_a_figure_or_a_table_with_more_on_its_line_is_never_joined_with_the_next_pages_text(block: str) -> None:
    document = _assemble([f"Intro.\n\n{block}", "continues in lower case"])

    assert "\n\n<!-- Page 2 -->\n\ncontinues in lower case" in document


def test_a_heading_with_text_under_it_in_one_block_is_not_joined_with_the_next_page() -> None:
    document = _assemble(["Intro.\n\n# Title\nfirst line\nsecond line", "continues in lower case"])

    assert "second line\n\n<!-- Page 2 -->\n\ncontinues in lower case" in document


def test_a_paragraph_opening_with_a_hashtag_is_prose_and_joins_the_next_page() -> None:
    document = _assemble(["Intro.\n\n#hashtags are cut", "across the page"])

    assert "#hashtags are cut <!-- Page 2 --> across the page" in document


# -- joins in their odd shapes ------------------------------------------------------------------------
def test_a_word_cut_at_the_last_line_of_a_page_ends_with_the_marker_and_nothing_after_it() -> None:
    document = _assemble(["The assem-", "bly"])

    assert document == "<!-- Page 1 -->\n\nThe assembly <!-- Page 2 -->\n"


def test_a_sentence_cut_before_a_capitalised_name_is_joined() -> None:
    assert "we travelled to <!-- Page 2 --> Paris in May." in _assemble(["In the spring we travelled to", "Paris in May."])


def test_a_salutation_ending_in_a_comma_is_joined_with_the_next_page() -> None:
    assert "Dear Sir, <!-- Page 2 --> Thank you." in _assemble(["Dear Sir,", "Thank you."])


def test_a_line_ending_in_a_number_is_not_joined_with_a_capitalised_next_page() -> None:
    assert "the total is 5\n\n<!-- Page 2 -->\n\nNext we count." in _assemble(["the total is 5", "Next we count."])


def test_tables_with_other_columns_stay_two_tables() -> None:
    document = _assemble(["| a | b |\n|---|---|\n| 1 | 2 |", "| x | y | z |\n|---|---|---|\n| 5 | 6 | 7 |"])

    assert "| 1 | 2 |\n\n<!-- Page 2 -->\n\n| x | y | z |" in document


def test_a_table_whose_header_was_a_data_row_joins_without_a_second_separator() -> None:
    document = _assemble(["| a | b |\n|---|---|\n| 1 | 2 |", "| 3 | 4 |\n|---|---|\n| 5 | 6 |"])

    assert "| a | b |\n|---|---|\n| 1 | 2 <!-- Page 2 --> |\n| 3 | 4 |\n| 5 | 6 |" in document


def test_a_table_with_only_its_header_before_the_break_joins_its_rows() -> None:
    document = _assemble(["| a | b |\n|---|---|", "| 1 | 2 |\n| 3 | 4 |"])

    assert "| a | b <!-- Page 2 --> |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |" in document  # the header is page 1's, the rows page 2's


def test_a_table_continued_by_one_row_is_one_table() -> None:
    assert "| a | b |\n|---|---|\n| 1 | 2 <!-- Page 2 --> |\n| 3 | 4 |" in _assemble(["| a | b |\n|---|---|\n| 1 | 2 |", "| 3 | 4 |"])


def test_a_lone_row_with_a_separator_under_it_joins_as_a_row() -> None:
    document = _assemble(["| a | b |\n|---|---|\n| 1 | 2 |", "| 3 | 4 |\n|---|---|"])

    assert "| 1 | 2 <!-- Page 2 --> |\n| 3 | 4 |" in document and document.count("|---|---|") == 1


def test_rows_without_a_header_separator_are_not_a_table_to_continue() -> None:
    document = _assemble(["| a | b |\n| 1 | 2 |", "| 3 | 4 |\n|---|---|\n| 5 | 6 |"])

    assert "| 1 | 2 |\n\n<!-- Page 2 -->\n\n| 3 | 4 |" in document


def test_a_one_item_list_continued_on_the_next_page_is_one_list() -> None:
    assert "- first <!-- Page 2 -->\n- second" in _assemble(["Intro.\n\n- first", "- second"])


def test_a_bulleted_list_and_a_numbered_one_stay_two_lists() -> None:
    assert "- first\n\n<!-- Page 2 -->\n\n1. second" in _assemble(["Intro.\n\n- first", "1. second"])


# -- running heads, feet and folios -------------------------------------------------------------------
def test_a_running_head_on_all_of_a_three_page_document_is_removed() -> None:
    document = _assemble([f"A Short Report\n\nPage body {n} ends." for n in (1, 2, 3)])

    assert "A Short Report" not in document


@pytest.mark.parametrize("styles", [("# Annual Report", "Annual Report"), ("**Annual Report**", "Annual Report")], ids=["heading", "bold"])
def test_a_running_head_written_in_two_styles_is_still_one_running_head(styles: tuple[str, str]) -> None:
    heads = [styles[0], styles[1], styles[1], styles[0]]

    document = _assemble([f"{head}\n\n{_text(n)}" for n, head in enumerate(heads, start=1)])

    assert "Annual Report" not in document


def test_a_head_of_exactly_eighty_characters_is_furniture_and_a_longer_one_is_content() -> None:
    eighty, longer = "H" * 80, "A notice that is repeated at the top of every single page of this document, at length."
    assert len(longer) > 80

    assert eighty not in _assemble([f"{eighty}\n\nBody {n} ends." for n in (1, 2, 3)])
    assert _assemble([f"{longer}\n\nBody {n} ends." for n in (1, 2, 3)]).count(longer) == 3


def test_a_two_line_block_repeated_at_every_page_top_is_content() -> None:
    document = _assemble([f"Name\nAddress\n\nBody {n} ends." for n in (1, 2, 3)])

    assert document.count("Name\nAddress") == 3


def test_a_running_foot_with_the_books_title_and_the_folio_is_removed_on_every_page() -> None:
    document = _assemble([f"{_text(n)}\n\nMoby Dick · {n + 10}" for n in (1, 2, 3)])

    assert "Moby Dick" not in document


def test_a_running_foot_above_the_folio_goes_with_it() -> None:
    document = _assemble([f"{_text(n)}\n\nMoby Dick\n\n{n}" for n in (1, 2, 3, 4)])

    assert "Moby Dick" not in document and "The delta part ends." in document


def test_folios_written_page_n_are_removed() -> None:
    document = _assemble([f"{_text(n)}\n\nPage {n}" for n in (1, 2, 3)])

    assert "Page 1" not in _body(document) and "Page 3" not in _body(document)


def test_folios_in_mixed_styles_are_all_removed() -> None:
    document = _assemble([f"{_text(n)}\n\n{folio}" for n, folio in enumerate(["1", "(2)", "Page 3", "4"], start=1)])

    assert "(2)" not in document and "Page 3" not in _body(document)


def test_a_last_line_that_only_mentions_the_pages_number_is_content() -> None:
    # each line says it its own way: no running foot repeats it
    document = _assemble([f"{_text(n)}\n\nThe {WORDS[n - 1]} fee is {n}\n\n{n}" for n in (1, 2, 3, 4)])

    assert all(f"The {WORDS[n - 1]} fee is {n}" in document for n in (1, 2, 3, 4))


def test_a_numbered_heading_at_the_top_of_its_page_is_content_not_a_folio() -> None:
    document = _assemble([f"# {n}\n\nBody {n} ends.\n\n{n}" for n in (1, 2, 3, 4)])

    assert "## 3\n\nBody 3 ends." in document


def test_blank_pages_do_not_dilute_a_folio_found_on_the_text_pages() -> None:
    bodies = [f"{_text(n)}\n\n{n}" if n <= 4 else "" for n in range(1, 21)]

    document = _assemble(bodies)

    assert "The delta part ends.\n\n<!-- Page 5 -->" in document


def test_a_number_found_on_three_of_eight_pages_edges_is_the_folio() -> None:
    bodies = [f"{_text(n)}\n\n{n}" if n in (2, 5, 7) else _text(n) for n in range(1, 9)]

    assert "The echo part ends.\n\n<!-- Page 6 -->" in _assemble(bodies)


def test_a_number_found_on_three_of_thirteen_pages_edges_is_the_folio() -> None:
    bodies = [f"{_text(n)}\n\n{n}" if n in (2, 5, 7) else _text(n) for n in range(1, 14)]

    assert "The echo part ends.\n\n<!-- Page 6 -->" in _assemble(bodies)


def test_numbers_on_four_of_twenty_pages_that_follow_the_page_sequence_close_by_are_folios() -> None:
    bodies = [f"{_text(n)}\n\n{n}" if n in (2, 5, 7, 9) else _text(n) for n in range(1, 21)]

    assert "The echo part ends.\n\n<!-- Page 6 -->" in _assemble(bodies)


def test_numbers_that_match_the_page_far_apart_are_content() -> None:
    bodies = [f"{_text(n)}\n\n{n}" if n in (2, 9, 16) else _text(n) for n in range(1, 21)]

    document = _assemble(bodies)

    assert all(f"part ends.\n\n{n}\n\n<!-- Page {n + 1} -->" in document for n in (2, 9, 16))


def test_a_logo_on_exactly_three_pages_is_a_decoration() -> None:
    document = _assemble([f"![logo](logo.png)\n\nBody {n} ends.\n\nMore {n}." for n in (1, 2, 3)])

    assert "logo.png" not in document


# -- headings -----------------------------------------------------------------------------------------
def test_a_numbered_heading_with_a_trailing_dot_is_a_section() -> None:
    assert Headings().level("# 1. Introduction") == "## 1. Introduction"


def test_a_deeply_numbered_heading_stops_at_level_six() -> None:
    assert Headings().level("# 1.2.3.4.5.6 Detail") == "###### 1.2.3.4.5.6 Detail"


def test_the_first_level_one_heading_is_the_title_even_after_a_section() -> None:
    headings = Headings()

    assert [headings.level(h) for h in ("## Preface", "# The Title", "# Another")] == ["## Preface", "# The Title", "## Another"]


# -- figures ------------------------------------------------------------------------------------------
def test_a_region_may_span_the_whole_page() -> None:
    assert split_region("A map (region: 0, 0, 1, 1)") == ("A map", (0.0, 0.0, 1.0, 1.0))


@pytest.mark.parametrize("region", ["0.5, 0.1, 0.5, 0.9", "0.1, 0.5, 0.9, 0.5", "0.1, 0.1, 0.9, 1.5"], ids=["no-width", "no-height", "below-the-page"])
def test_a_region_that_is_not_a_box_inside_the_page_is_dropped(region: str) -> None:
    assert split_region(f"A map (region: {region})") == ("A map", None)


def test_figures_are_linked_under_images_with_brackets_in_their_description_made_safe() -> None:
    figures = {2: [Figure("p2-1.png", 100, 80), Figure("p2-2.png", 100, 80)]}

    document = _assemble(["Intro.", "Text.\n\n*[Figure: a [labelled] chart]*"], figures=figures)

    assert "![a (labelled) chart](images/p2-1.png)" in document
    assert "![Figure 2 of page 2](images/p2-2.png)" in document


def test_a_page_of_figures_only_lists_each_once() -> None:
    document = _assemble(["Intro.", "![one](a.png)\n\n![two](b.png)", "End."])

    assert document.count("a.png") == 1 and document.count("b.png") == 1


def test_text_followed_by_two_figures_still_joins_the_next_page() -> None:
    document = _assemble(["It continues\n\n![one](a.png)\n\n![two](b.png)", "on the next page."])

    assert "It continues <!-- Page 2 --> on the next page." in document


# -- every page accounted for -------------------------------------------------------------------------
def test_a_truncated_page_ends_with_its_truncated_marker() -> None:
    assert "Half a page.\n\n<!-- Page 1: truncated -->" in _assemble(["Half a page."], {1: "truncated"})


def test_missing_pages_at_the_end_are_counted_in_the_error() -> None:
    with pytest.raises(ValueError, match=r"^3 page\(s\) have no result, first 3$"):
        "".join(assemble_document(_pages(["one", "two"]), survey([]), expected_pages=5))


def test_the_page_by_page_output_keeps_a_failed_pages_reason() -> None:
    document = "".join(raw_document(_pages(["one", "", "three"], {2: "failed"}), expected_pages=3))

    assert "<!-- Page 2: failed (throttled) -->" in document
