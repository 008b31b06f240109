"""Born-digital documents keep what they hold (issue 43, "Done when"): on real files we did not make (docling's
test data, tests/data/formats), the headings, tables, table cells and pictures in the Markdown equal what
python-docx, python-pptx and openpyxl read from the source; EPUB and ODT built with pandoc from those DOCX files
are counted from their own XML. Each runs through the real converter in its bounded child (pandoc 3.9)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from formatscount import DATA, Counts, docx_counts, epub_counts, markdown_counts, odt_counts, pptx_counts, xlsx_counts

from batchlane.formats.convert_document import convert_document
from batchlane.formats.document import ConvertedDocument
from batchlane.formats.pandoc import pandoc_path

SOURCE_COUNTS = {"docx": docx_counts, "pptx": pptx_counts, "xlsx": xlsx_counts}


def _convert(path: Path, file_type: str, scratch: Path) -> ConvertedDocument:
    scratch.mkdir(exist_ok=True)
    return convert_document(path, file_type, folder="doc.images", scratch=scratch, max_pages=1000)


def _markdown(document: ConvertedDocument) -> str:
    return "\n\n".join(section.markdown for section in document.sections)


@pytest.mark.parametrize(
    "name",
    [
        "word_sample.docx",
        "docx_rich_cells.docx",  # lists, nested tables and pictures inside cells
        "equations.docx",
        "table_with_equations.docx",
        "unit_test_headers.docx",
        "lorem_ipsum.docx",
        "powerpoint_sample.pptx",
        "powerpoint_with_image.pptx",
        "powerpoint_malformed_pictures.pptx",  # its broken pictures are skipped, the slides kept
        "xlsx_01.xlsx",
        "xlsx_05_table_with_title.xlsx",
        "xlsx_06_edge_cases_.xlsx",
        "xlsx_08_one_cell_anchor.xlsx",
    ],
)
def test_the_markdown_holds_what_the_source_holds(name: str, tmp_path: Path) -> None:
    path = DATA / name
    file_type = path.suffix[1:]
    document = _convert(path, file_type, tmp_path / "figures")
    assert markdown_counts(_markdown(document)) == SOURCE_COUNTS[file_type](path)
    written = sorted(p.name for p in (tmp_path / "figures").iterdir())
    assert written == sorted(f.name for s in document.sections for f in s.figures)  # every picture linked is a file
    for section in document.sections:
        for figure in section.figures:
            linked = f"(doc.images/{figure.name})" in section.markdown or f'src="doc.images/{figure.name}"' in section.markdown  # in an HTML table cell
            assert linked and figure.path.stat().st_size > 0


def test_word_tables_with_rows_starting_late_keep_every_table_and_heading(tmp_path: Path) -> None:
    """word_tables.docx: rows that start late (w:gridBefore) are padded with empty cells in any rendered table, so
    the cell count differs by the padding (82 against 81 physical cells); tables and headings are exact."""
    document = _convert(DATA / "word_tables.docx", "docx", tmp_path / "figures")
    got, source = markdown_counts(_markdown(document)), docx_counts(DATA / "word_tables.docx")
    assert (got.headings, got.tables, got.images) == (source.headings, source.tables, source.images)
    assert 0 < got.cells - source.cells <= 2


def _pandoc(*args: str) -> None:
    subprocess.run([pandoc_path(), *args], check=True, capture_output=True, timeout=120)


@pytest.mark.parametrize("name", ["word_sample", "docx_rich_cells", "unit_test_headers", "word_tables"])
def test_an_epub_built_by_pandoc_keeps_what_it_holds(name: str, tmp_path: Path) -> None:
    book = tmp_path / f"{name}.epub"
    _pandoc(str(DATA / f"{name}.docx"), "--epub-title-page=false", "-o", str(book))
    document = _convert(book, "epub", tmp_path / "figures")
    assert markdown_counts(_markdown(document)) == epub_counts(book)
    assert len(document.sections) >= 1 and all(s.markdown.strip() for s in document.sections)


@pytest.mark.parametrize("name", ["word_sample", "unit_test_headers", "word_tables"])
def test_an_odt_built_by_pandoc_keeps_what_it_holds(name: str, tmp_path: Path) -> None:
    text = tmp_path / f"{name}.odt"
    _pandoc(str(DATA / f"{name}.docx"), "-o", str(text))
    assert markdown_counts(_markdown(_convert(text, "odt", tmp_path / "figures"))) == odt_counts(text)


def test_a_real_odt_keeps_what_it_holds(tmp_path: Path) -> None:
    path = DATA / "text_document_01.odt"
    document = _convert(path, "odt", tmp_path / "figures")
    assert markdown_counts(_markdown(document)) == odt_counts(path) == Counts(3, 0, 0, 0)
    assert len(document.sections) == 2 and all(s.title for s in document.sections[1:])  # a page is a top-level heading's section


@pytest.mark.xfail(strict=True, reason="pandoc 3.9's ODT reader drops tables nested in a table cell (docs/formats.md, 'Known gaps')")
def test_an_odt_with_nested_tables_keeps_them(tmp_path: Path) -> None:
    text = tmp_path / "nested.odt"
    _pandoc(str(DATA / "docx_rich_cells.docx"), "-o", str(text))
    assert markdown_counts(_markdown(_convert(text, "odt", tmp_path / "figures"))) == odt_counts(text)


@pytest.mark.parametrize("name", ["example_03.html", "table_06.html", "hyperlink_03.html", "formatting.html"])
def test_html_keeps_its_headings_tables_and_links(name: str, tmp_path: Path) -> None:
    path = DATA / name
    source = epub_counts_of_html(path)
    got = markdown_counts(_markdown(_convert(path, "html", tmp_path / "figures")))
    assert got == source


def epub_counts_of_html(path: Path) -> Counts:
    """An HTML page counted like an EPUB's chapter: h1–h6, tables, td/th, img."""
    from formatscount import _Tags

    tags = _Tags()
    tags.feed(path.read_text(encoding="utf-8"))
    return Counts(sum(tags.tags[f"h{k}"] for k in range(1, 7)), tags.tags["table"], tags.tags["td"] + tags.tags["th"], tags.tags["img"])


def test_equations_footnotes_links_and_lists_are_kept(tmp_path: Path) -> None:
    math = _markdown(_convert(DATA / "equations.docx", "docx", tmp_path / "a"))
    assert "$A = \\pi r^{2}$" in math  # inline TeX
    assert "$$\\begin{array}" in math  # display math
    sample = _markdown(_convert(DATA / "word_sample.docx", "docx", tmp_path / "b"))
    assert "- Paddle about" in sample and "1.  Wear sunglasses" in sample and "> I like to eat leaves" in sample
    links = _markdown(_convert(DATA / "hyperlink_03.html", "html", tmp_path / "c"))
    assert "](" in links
    noted = tmp_path / "noted.docx"
    (tmp_path / "noted.md").write_text("Intro.[^1]\n\n# Part\n\nMore.[^2]\n\n[^1]: First note.\n[^2]: Second note.\n")
    _pandoc(str(tmp_path / "noted.md"), "-o", str(noted))
    pages = _convert(noted, "docx", tmp_path / "d").sections
    assert "[^1]: First note." in pages[0].markdown and "[^2]: Second note." in pages[1].markdown  # each note stays on its page
