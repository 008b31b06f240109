"""Counting what a document holds, two ways: from its source with the libraries that read it (python-docx,
python-pptx, openpyxl) and from the Markdown batchlane wrote (markdown-it-py for headings, pipe tables and
images; the HTML tables pandoc writes for cells with blocks counted by their tags). The formats tests hold the
two equal (issue 43, "Done when")."""

from __future__ import annotations

import zipfile
from collections import Counter
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import docx
import openpyxl
import pptx
from docx.oxml.ns import qn
from markdown_it import MarkdownIt
from pptx.enum.shapes import MSO_SHAPE_TYPE

DATA = Path(__file__).resolve().parent / "data" / "formats"


@dataclass(frozen=True)
class Counts:
    headings: int
    tables: int
    cells: int
    images: int


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: Counter[str] = Counter()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1


def markdown_counts(text: str) -> Counts:
    """Headings (ATX/setext), tables (pipe or HTML), their cells, and images (``![..](..)`` or ``<img>``)."""
    md = MarkdownIt("commonmark").enable("table")
    headings = tables = cells = images = 0
    html = _Tags()
    for token in md.parse(text):
        if token.type == "heading_open":
            headings += 1
        elif token.type == "table_open":
            tables += 1
        elif token.type in ("th_open", "td_open"):
            cells += 1
        elif token.type == "html_block":
            html.feed(token.content)
        elif token.type == "inline":
            for child in token.children or []:
                if child.type == "image":
                    images += 1
                elif child.type == "html_inline":
                    html.feed(child.content)
    return Counts(headings, tables + html.tags["table"], cells + html.tags["td"] + html.tags["th"], images + html.tags["img"])


def docx_counts(path: Path) -> Counts:
    """Heading-styled paragraphs, every table (nested too) and its cells as a reader sees them (a cell merged across
    columns or down rows counted once: a ``w:vMerge`` continuation is no cell of its own), pictures."""
    document = docx.Document(str(path))
    headings = sum(1 for p in document.paragraphs if (p.style is not None and (p.style.name or "").startswith("Heading")))
    tables = cells = 0
    stack = list(document.tables)
    while stack:
        table = stack.pop()
        tables += 1
        for tc in table._tbl.iter(qn("w:tc")):
            if tc.getparent().getparent() is not table._tbl:
                continue  # a nested table's cell: counted with its own table
            merge = tc.find(f"{qn('w:tcPr')}/{qn('w:vMerge')}")
            cells += merge is None or merge.get(qn("w:val")) == "restart"
        stack.extend(nested for row in table.rows for cell in row.cells for nested in cell.tables)
    body = document.element.body
    images = sum(1 for _ in body.iter(qn("a:blip"))) + sum(1 for _ in body.iter("{urn:schemas-microsoft-com:vml}imagedata"))
    return Counts(headings, tables, cells, images)


def pptx_counts(path: Path) -> Counts:
    """Slides with a title, tables and their cells, pictures (in groups too) whose image can be read."""
    deck = pptx.Presentation(str(path))
    headings = tables = cells = images = 0

    def walk(shapes: object) -> None:
        nonlocal tables, cells, images
        for shape in shapes:  # type: ignore[attr-defined]
            if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
                walk(shape.shapes)
            elif getattr(shape, "has_table", False) and shape.has_table:
                tables += 1
                cells += sum(len(row.cells) for row in shape.table.rows)
            elif shape.shape_type == MSO_SHAPE_TYPE.PICTURE:
                try:
                    shape.image.blob
                except Exception:
                    continue
                images += 1

    for slide in deck.slides:
        title = slide.shapes.title
        headings += bool(title is not None and title.text_frame.text.strip())
        walk(slide.shapes)
    return Counts(headings, tables, cells, images)


def xlsx_counts(path: Path) -> Counts:
    """A sheet is a heading; a sheet with values is one table of its used range (rows × columns); its pictures."""
    book = openpyxl.load_workbook(str(path), data_only=True)
    headings = tables = cells = images = 0
    for sheet in book.worksheets:
        headings += 1
        filled = [(r, c) for (r, c), cell in sheet._cells.items() if cell.value is not None]
        if filled:
            rows = max(r for r, _ in filled) - min(r for r, _ in filled) + 1
            cols = max(c for _, c in filled) - min(c for _, c in filled) + 1
            tables += 1
            cells += rows * cols
        images += len(sheet._images)
    return Counts(headings, tables, cells, images)


def zip_names(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as archive:
        return archive.namelist()


def epub_counts(path: Path) -> Counts:
    """From the book's XHTML files (its navigation document left out): h1–h6, tables, td/th, img."""
    tags = _Tags()
    with zipfile.ZipFile(path) as archive:
        for name in archive.namelist():
            if name.endswith((".xhtml", ".html")) and not name.endswith("nav.xhtml"):
                tags.feed(archive.read(name).decode("utf-8"))
    return Counts(sum(tags.tags[f"h{k}"] for k in range(1, 7)), tags.tags["table"], tags.tags["td"] + tags.tags["th"], tags.tags["img"])


def odt_counts(path: Path) -> Counts:
    """From content.xml: text:h, table:table, table:table-cell (a covered cell is no cell of its own), draw:image."""
    from xml.etree import ElementTree

    text, table, draw = (
        "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
        "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
        "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    )
    with zipfile.ZipFile(path) as archive:
        root = ElementTree.fromstring(archive.read("content.xml"))
    count = lambda ns, tag: sum(1 for _ in root.iter(f"{{{ns}}}{tag}"))  # noqa: E731
    return Counts(count(text, "h"), count(table, "table"), count(table, "table-cell"), count(draw, "image"))
