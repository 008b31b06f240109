"""PPTX and XLSX → pages of Markdown: a page per slide (python-pptx), a page per sheet (openpyxl).

pandoc reads neither (it writes PowerPoint, it does not read it). The libraries parse; this module only
walks what they give, in reading order: a slide's title is its heading, text frames are paragraphs (a body
placeholder's paragraphs are list items, by level), tables are pipe tables, pictures are figure files,
group shapes are walked into, notes follow the slide. A sheet is its name as a heading and its used range
as one table (cached values, not formulas), with its pictures after it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import openpyxl
import pptx
from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER
from pptx.exc import PythonPptxError

from batchlane.domain.errors import InputError
from batchlane.formats import guard
from batchlane.formats.document import ConvertedDocument, FigureFile, Section, figure_name, media_type

MAX_SHEET_CELLS = 1_000_000  # one sheet's used range, rows × columns: a bigger table is no page anyone reads
_SHAPE_ERRORS = (PythonPptxError, NotImplementedError, ValueError, KeyError, AttributeError, TypeError)
_TITLES = (PP_PLACEHOLDER.TITLE, PP_PLACEHOLDER.CENTER_TITLE)
_BODIES = (PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT, PP_PLACEHOLDER.SUBTITLE)


def cell_text(value: Any) -> str:
    """A table cell's Markdown: one line, pipes escaped."""
    if value is None:
        return ""
    text = str(value).replace("\r\n", "\n").replace("\r", "\n")
    return " ".join(part.strip() for part in text.split("\n") if part.strip()).replace("|", "\\|")


def pipe_table(rows: list[list[str]]) -> str:
    """Rows of cell texts → a pipe table whose first row is its header (every row as wide as the widest)."""
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "|".join(["---"] * width) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


# -- PowerPoint ---------------------------------------------------------------------------
def convert_pptx(path: Path, *, folder: str, scratch: Path, max_pages: int) -> ConvertedDocument:
    members = guard.zip_members(path)
    slides = sum(1 for m in members if m.filename.startswith("ppt/slides/slide") and m.filename.endswith(".xml"))
    if slides > max_pages:  # counted from the container, before any slide is parsed
        raise InputError(f"The presentation has {slides:,} slides; the limit is {max_pages:,} pages.", error_id="DOCUMENT_TOO_MANY_PAGES")
    try:
        deck = pptx.Presentation(str(path))
    except (KeyError, ValueError, OSError) as exc:
        raise guard.corrupt() from exc
    sections = []
    for number, slide in enumerate(deck.slides, start=1):
        figures: list[FigureFile] = []
        blocks = list(_slide_blocks(slide, number, folder, scratch, figures))
        title = next((b[2:].strip() for b in blocks if b.startswith("# ")), None)
        sections.append(Section(number, title, "\n\n".join(blocks) + "\n" if blocks else "", tuple(figures)))
    return ConvertedDocument("pptx", f"python-pptx {pptx.__version__}", tuple(sections))


def _reading_order(shapes: Iterable[Any]) -> list[Any]:
    """Top to bottom, then left to right; a shape whose position cannot be read keeps its place at the top."""

    def position(shape: Any) -> tuple[int, int]:
        try:
            return (shape.top or 0, shape.left or 0)
        except _SHAPE_ERRORS:
            return (0, 0)

    return sorted(shapes, key=position)


def _slide_blocks(slide: Any, number: int, folder: str, scratch: Path, figures: list[FigureFile]) -> Iterator[str]:
    yield from _shape_blocks(_reading_order(slide.shapes), number, folder, scratch, figures)
    if slide.has_notes_slide:
        notes = slide.notes_slide.notes_text_frame
        text = notes.text.strip() if notes is not None else ""
        if text:
            yield "**Notes:** " + " ".join(line.strip() for line in text.splitlines() if line.strip())


def _shape_blocks(shapes: list[Any], number: int, folder: str, scratch: Path, figures: list[FigureFile]) -> Iterator[str]:
    for shape in shapes:
        try:
            blocks = list(_one_shape(shape, number, folder, scratch, figures))
        except _SHAPE_ERRORS:  # a shape python-pptx cannot read
            continue  # (an unknown shape type, a malformed picture): the slide's other shapes are kept
        yield from blocks


def _one_shape(shape: Any, number: int, folder: str, scratch: Path, figures: list[FigureFile]) -> Iterator[str]:
    if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
        yield from _shape_blocks(_reading_order(shape.shapes), number, folder, scratch, figures)
    elif shape.is_placeholder and shape.placeholder_format.type in _TITLES and shape.has_text_frame:
        if text := " ".join(shape.text_frame.text.split()):
            yield f"# {text}"
    elif getattr(shape, "has_table", False) and shape.has_table:
        yield pipe_table([[cell_text(cell.text) for cell in row.cells] for row in shape.table.rows])
    elif shape.shape_type == MSO_SHAPE_TYPE.PICTURE or (shape.is_placeholder and hasattr(shape, "image")):
        if (link := _picture(shape, number, folder, scratch, figures)) is not None:
            yield link
    elif shape.has_text_frame:
        yield from _text_frame(shape)


def _picture(shape: Any, number: int, folder: str, scratch: Path, figures: list[FigureFile]) -> str | None:
    try:
        image = shape.image
        blob, ext = image.blob, image.ext
    except (AttributeError, KeyError, ValueError, TypeError):  # a picture whose part is missing (a broken or linked image)
        return None
    name = figure_name(number, len(figures) + 1, f"image.{ext}")
    (scratch / name).write_bytes(blob)
    figures.append(FigureFile(name, scratch / name, media_type(name)))
    alt = cell_text(shape._element._nvXxPr.cNvPr.get("descr") or shape.name).replace("]", "\\]")
    return f"![{alt}]({folder}/{name})"


def _text_frame(shape: Any) -> Iterator[str]:
    as_list = shape.is_placeholder and shape.placeholder_format.type in _BODIES
    lines = []
    for paragraph in shape.text_frame.paragraphs:
        text = " ".join(paragraph.text.split())
        if not text:
            continue
        lines.append(("  " * paragraph.level + "- " + text) if as_list else text)
    if lines:
        yield "\n".join(lines) if as_list else "\n\n".join(lines)


# -- Excel --------------------------------------------------------------------------------
def convert_xlsx(path: Path, *, folder: str, scratch: Path, max_pages: int) -> ConvertedDocument:
    guard.zip_members(path)
    try:
        with path.open("rb") as stream:  # a stream: openpyxl judges a path by its extension (the split's is .pdf)
            book = openpyxl.load_workbook(stream, data_only=True)
    except (KeyError, ValueError, OSError, TypeError, IndexError) as exc:
        raise guard.corrupt() from exc
    if len(book.worksheets) > max_pages:
        raise InputError(f"The workbook has {len(book.worksheets):,} sheets; the limit is {max_pages:,} pages.", error_id="DOCUMENT_TOO_MANY_PAGES")
    sections = []
    for number, sheet in enumerate(book.worksheets, start=1):
        blocks = [f"# {cell_text(sheet.title)}"]
        rows = sheet_rows(sheet)
        if rows:
            blocks.append(pipe_table(rows))
        figures: list[FigureFile] = []
        for image in getattr(sheet, "_images", []):
            name = figure_name(number, len(figures) + 1, f"image.{(image.format or 'png').lower()}")
            (scratch / name).write_bytes(image._data())
            figures.append(FigureFile(name, scratch / name, media_type(name)))
            blocks.append(f"![{name}]({folder}/{name})")
        sections.append(Section(number, sheet.title, "\n\n".join(blocks) + "\n", tuple(figures)))
    return ConvertedDocument("xlsx", f"openpyxl {openpyxl.__version__}", tuple(sections))


def sheet_rows(sheet: Any) -> list[list[str]]:
    """The sheet's used range as cell texts, trailing empty rows and columns trimmed; a hyperlink kept as a link."""
    filled = [key for key, cell in sheet._cells.items() if cell.value is not None]  # styled empty cells inflate max_row
    if not filled:
        return []
    top, bottom = min(r for r, _ in filled), max(r for r, _ in filled)
    left, right = min(c for _, c in filled), max(c for _, c in filled)
    if (bottom - top + 1) * (right - left + 1) > MAX_SHEET_CELLS:
        raise guard.too_complex(f"Sheet {sheet.title!r} spans {bottom - top + 1:,} × {right - left + 1:,} cells; the limit is {MAX_SHEET_CELLS:,}.")
    rows = []
    for row in sheet.iter_rows(min_row=top, max_row=bottom, min_col=left, max_col=right):
        cells = []
        for cell in row:
            text = cell_text(cell.value)
            link = getattr(cell, "hyperlink", None)
            if text and link is not None and link.target:
                text = f"[{text}]({link.target})"
            cells.append(text)
        rows.append(cells)
    while rows and not any(rows[-1]):
        rows.pop()
    width = max((max((k + 1 for k, c in enumerate(r) if c), default=0) for r in rows), default=0)
    return [r[:width] for r in rows] if width else []
