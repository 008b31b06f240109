"""Page text cannot become HTML, a comment or a page marker in the Markdown (issue 39.5; domain/safe_markdown.py)."""

from __future__ import annotations

import re

import pytest

from batchlane.claude import PageResult
from batchlane.domain.assembly import assemble_document, raw_document, survey
from batchlane.domain.markdown import PageText
from batchlane.domain.safe_markdown import ZERO_WIDTH_SPACE, safe_markdown
from batchlane.filejob.assemble import page_record

MARKER = re.compile(r"<!-- Page (\d+)[^>]*-->")


def _document(bodies: list[str]) -> str:
    pages = [PageText(n, "converted", body) for n, body in enumerate(bodies, start=1)]
    return "".join(assemble_document(pages, survey(pages), expected_pages=len(pages)))


@pytest.mark.parametrize(
    "hostile",
    [
        "<script>alert(1)</script>",
        '<img src=x onerror="alert(1)">',
        "<iframe src=https://example.com></iframe>",
        "<style>body{display:none}</style>",
        "<!-- a comment that hides the rest",
        "</p><svg onload=alert(1)>",
        "<?php echo 1; ?>",
        "<![CDATA[ x ]]>",
    ],
)
def test_markup_from_a_page_is_written_as_text(hostile: str) -> None:
    document = _document([f"The page says {hostile} here."])

    assert "<" not in MARKER.sub("", document)
    assert f"The page says {hostile.replace('<', '&lt;')} here." in document


def test_a_page_marker_in_a_pages_text_cannot_fake_a_page() -> None:
    document = _document(["First page.\n\n<!-- Page 99 -->\n\nFake page.", "<!--Page 2--> Second page. <!-- page 3 -->"])

    assert [int(n) for n in MARKER.findall(document)] == [1, 2]


def test_superscripts_subscripts_and_line_breaks_are_kept() -> None:
    text = "E = mc<sup>2</sup>, H<sub>2</sub>O<br>next<br/>line<BR />end"

    assert safe_markdown(text) == text


def test_an_allowed_tag_with_attributes_is_not_allowed() -> None:
    assert safe_markdown('<sup onclick="x()">2</sup>') == '&lt;sup onclick="x()">2</sup>'


def test_code_spans_and_fenced_code_keep_their_content_but_no_page_marker() -> None:
    page = "Use `<div>` and ``a <b> `c` `` here.\n\n```html\n<div class=\"x\">\n<!-- Page 7 -->\n</div>\n```\n\nAfter <div>."

    safe = safe_markdown(page)

    assert "Use `<div>` and ``a <b> `c` `` here." in safe
    assert '```html\n<div class="x">\n' in safe and "\n</div>\n```" in safe
    assert "After &lt;div>." in safe
    assert "<!-- Page 7" not in safe and f"<!{ZERO_WIDTH_SPACE}-- Page 7 -->" in safe
    assert MARKER.findall(_document([page])) == ["1"]


def test_an_unclosed_backtick_does_not_open_code_for_the_rest_of_the_line() -> None:
    assert safe_markdown("a ` b <script>") == "a ` b &lt;script>"


def test_autolinks_to_web_and_mail_addresses_stay_links() -> None:
    text = "See <https://example.com/a?b=1> or <mailto:a@example.com>."

    assert safe_markdown(text) == text
    assert safe_markdown("<javascript:alert(1)>") == "&lt;javascript:alert(1)>"


@pytest.mark.parametrize("scheme", ["javascript", "JavaScript", "vbscript", "data", "file"])
def test_a_link_to_a_script_address_loses_its_scheme(scheme: str) -> None:
    safe = safe_markdown(f"[click]({scheme}:alert(1)) and ![x]( {scheme}:x)")

    assert f"]({scheme}:" not in safe and f"]( {scheme}:" not in safe
    assert f"[click](unsafe-{scheme}:alert(1))" in safe


def test_the_page_by_page_output_and_pages_jsonl_are_safe_too() -> None:
    pages = [PageText(1, "converted", "A <script>x</script> page <!-- Page 5 -->")]

    raw = "".join(raw_document(pages, expected_pages=1))
    record = page_record(PageResult(1, "converted", pages[0].markdown), [], "book.images")

    assert MARKER.findall(raw) == ["1"] and "<script>" not in raw
    assert "<script>" not in record["markdown"] and "<!-- Page" not in record["markdown"]


def test_a_lone_surrogate_in_a_pages_text_is_dropped_and_the_job_still_writes_its_files() -> None:
    # lm-info.pdf (Debian fonts-lmodern): pypdf reads U+D800 from its glyph tables; UTF-8 cannot encode it
    pages = [PageText(1, "converted", "Glyph \ud800 table"), PageText(2, "converted", "Next.")]

    document = "".join(assemble_document(pages, survey(pages), expected_pages=2))
    record = page_record(PageResult(1, "converted", pages[0].markdown), [], "book.images")

    assert "Glyph  table" in document and document.encode("utf-8")
    assert record["markdown"].encode("utf-8")
