"""The document pass's rules: tables, lists, headings, clean text, and a property on simple documents (hypothesis);
the properties on drawn books, idempotence among them, are in tests/unit/test_assembly_properties.py."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from batchlane.domain.assembly import Headings, assemble_document, clean_text, raw_document, survey
from batchlane.domain.markdown import PageText

MARKER = re.compile(r"<!-- Page \d+ -->")


def _assemble(bodies: list[str], statuses: dict[int, str] | None = None) -> str:
    pages = [
        PageText(n, (statuses or {}).get(n, "converted"), body, "throttled" if (statuses or {}).get(n) == "failed" else None)
        for n, body in enumerate(bodies, 1)
    ]
    return "".join(assemble_document(pages, survey(pages), expected_pages=len(pages)))


def test_a_table_continued_on_the_next_page_with_its_header_repeated_is_one_table() -> None:
    first = "Results follow.\n\n| lane | pages |\n|---|---|\n| batch | 600 |"
    second = "| lane | pages |\n| --- | --- |\n| on-demand | 12 |\n\nThat is all."
    document = _assemble([first, second])
    assert "| lane | pages |\n|---|---|\n| batch | 600 <!-- Page 2 --> |\n| on-demand | 12 |\n\nThat is all." in document
    assert document.count("| lane | pages |") == 1


def test_a_table_continued_without_a_header_is_one_table_and_other_columns_are_not() -> None:
    first = "| a | b |\n|---|---|\n| 1 | 2 |"
    assert "| 1 | 2 <!-- Page 2 --> |\n| 3 | 4 |" in _assemble([first, "| 3 | 4 |\n|---|---|\n| 5 | 6 |"])  # the model's header was a data row
    assert "| 5 | 6 |" not in _assemble([first, "| x | y | z |\n|---|---|---|\n| 5 | 6 | 7 |"]).split("<!-- Page 2 -->")[0]


def test_a_list_continued_stays_one_list() -> None:
    document = _assemble(["Steps:\n\n- split the PDF\n- convert each page", "- assemble the document\n\nDone."])
    assert "- split the PDF\n- convert each page <!-- Page 2 -->\n- assemble the document\n\nDone." in document


def test_a_hyphenated_word_cut_by_the_page_break_is_rejoined_before_the_marker() -> None:
    document = _assemble(["The pages are joined by the assem-", "bly pass at the end."])
    assert "joined by the assembly <!-- Page 2 --> pass at the end." in document


def test_a_finished_sentence_and_a_heading_are_not_joined() -> None:
    document = _assemble(["It ends here.", "A new paragraph starts.", "## Next part\n\nText."])
    assert "It ends here.\n\n<!-- Page 2 -->\n\nA new paragraph starts.\n\n<!-- Page 3 -->\n\n## Next part" in document


def test_a_failed_page_keeps_its_visible_marker_and_breaks_no_join() -> None:
    document = _assemble(["It is cut", "whatever", "and goes on"], {2: "failed"})
    assert "<!-- Page 2: failed (throttled) -->" in document
    assert "It is cut\n\n<!-- Page 2: failed" in document


def test_headings_follow_numbering_and_only_the_first_title_is_a_title() -> None:
    h = Headings()
    got = [h.level(b) for b in ("# The Book", "# 1 Introduction", "# 1.1 Scope", "#### 1.1.2 Detail", "# Notes", "#### Aside", "## Appendix A Tables")]
    assert got == ["# The Book", "## 1 Introduction", "### 1.1 Scope", "#### 1.1.2 Detail", "## Notes", "### Aside", "## Appendix A Tables"]
    assert [h.level(b) for b in ("### 2 Methods", "#### Exercises", "## 2.1 Design", "# Exercises", "## Notes")] == [
        "## 2 Methods",
        "### Exercises",
        "### 2.1 Design",
        "### Exercises",  # the level it had the first time, whatever this page's model guessed
        "## Notes",
    ]


def test_clean_text_drops_control_characters_and_spells_out_ligatures() -> None:
    assert clean_text("A \x12 B\x04 \ufb01le \ufb02ow e\ufb00ect\tend\r\nnext") == "A  B ﬁle flow effect end\nnext".replace("ﬁ", "fi")
    assert clean_text("an exam-\nple of hyphen-\nation, well-\nKnown") == "an example of hyphenation, well-\nKnown"
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", clean_text("".join(map(chr, range(0xA0)))))


def test_assembly_none_keeps_the_page_by_page_output() -> None:
    pages = [PageText(1, "converted", "Head\n\nIt is cut"), PageText(2, "converted", "Head\n\nand goes on")]
    assert "".join(raw_document(pages, expected_pages=2)) == "<!-- Page 1 -->\n\nHead\n\nIt is cut\n\n<!-- Page 2 -->\n\nHead\n\nand goes on\n"


def test_a_missing_page_is_an_error_never_skipped() -> None:
    pages = [PageText(1, "converted", "a"), PageText(3, "converted", "c")]
    try:
        "".join(assemble_document(pages, survey(pages), expected_pages=3))
    except ValueError as exc:
        assert "page 2" in str(exc)
    else:
        raise AssertionError("page 2 was skipped")


# --- properties: documents drawn at random, with the furniture a book carries -------------------------

_word = st.text("abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=9)
_HEADS = ("The Book of Tests", "Chapter Two. Properties")


@st.composite
def documents(draw: st.DrawFn) -> tuple[list[PageText], list[str], bool]:
    """Pages with unique body words, running heads and folios on some (on all of a book-like one), paragraphs cut at some breaks."""
    book_like = draw(st.booleans())
    count = draw(st.integers(1, 14))
    offset = draw(st.integers(-3, 5))
    serial = iter(range(10_000))
    pages, body = [], []
    for number in range(1, count + 1):
        paragraphs = []
        for _ in range(draw(st.integers(1 if book_like else 0, 3))):
            words = [f"{w}{chr(97 + (next(serial) % 26))}" * 1 for w in draw(st.lists(_word, min_size=1, max_size=12))]
            words = [f"{w}q{next(serial):04d}".translate(str.maketrans("0123456789", "abcdefghij")) for w in words]
            ending = draw(st.sampled_from([".", "", ","]))
            paragraphs.append(" ".join(words) + ending)
            body += words
        furniture = book_like or draw(st.booleans())
        blocks = ([_HEADS[number % 2]] if furniture else []) + paragraphs + ([str(number + offset)] if furniture and number + offset > 0 else [])
        failed = draw(st.integers(0, 9)) == 0
        if failed:
            body = body[: len(body) - sum(len(p.split()) for p in paragraphs)]
        pages.append(PageText(number, "failed" if failed else "converted", "\n\n".join(blocks), "throttled" if failed else None))
    return pages, body, book_like


def _body_words(document: str) -> list[str]:
    text = re.sub(r"<!-- Page \d+: failed \([^)]*\) -->", " ", MARKER.sub(" ", document))
    text = re.sub(r"^> \*\*Page \d+ was not converted\*\* \(`[^`]*`\): its content is missing here\.$", " ", text, flags=re.M)  # failed_page_notice
    return [w.strip(".,") for w in text.split() if w.strip(".,")]


@settings(max_examples=150, deadline=None)
@given(documents())
def test_every_page_s_content_appears_exactly_once_in_order_and_only_furniture_is_removed(drawn: tuple[list[PageText], list[str], bool]) -> None:
    pages, body, _ = drawn
    document = "".join(assemble_document(pages, survey(pages), expected_pages=len(pages)))
    found = [int(n) for n in re.findall(r"<!-- Page (\d+)[ :]", document)]
    assert found == [p.page_number for p in pages], "every page's marker once, in order"
    words = _body_words(document)
    furniture = {w.lower().strip(".") for head in _HEADS for w in head.split()}
    kept = [w for w in words if not w.isdigit() and w.lower().strip(".") not in furniture]
    assert kept == body, "every body word once, in order, none added"
    # Which heads and folios go is tested on drawn books, by the rule (tests/unit/test_assembly_properties.py).
