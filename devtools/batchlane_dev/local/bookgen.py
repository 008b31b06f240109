"""A book-like test PDF: running heads, folios, numbered headings, paragraphs and words cut by page breaks.

What a typeset book looks like to a text layer (reportlab canvas, deterministic): the running
head is drawn first on each page and the folio last, front matter is unnumbered (so the folio is
the page number less 2), chapters and sections are numbered, paragraphs flow across pages and
every other page break splits a word with a hyphen. ``Book`` says what was drawn, so a test can
check that the assembled Markdown holds exactly the body, in order, and nothing of the furniture.
"""

from __future__ import annotations

import io
import random
import textwrap
from dataclasses import dataclass, field
from typing import Any

from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

BOOK_TITLE = "A Short Book on Assembly"
FRONT_PAGES = 2  # title page and contents: no folio, so the folio is the page number less 2
_LINES_PER_PAGE = 40
_WIDTH = 88  # characters a body line holds
_VOCABULARY = (
    "assembly joins pages into documents while running heads and folios stay out of the body the converter "
    "reads every page alone so a sentence cut by the break must be joined again and tables continue where "
    "they stopped figures keep their captions search indexes want clean text without control characters"
).split()
_CHAPTERS = ("Introduction", "Running heads", "Paragraphs across pages", "Headings and clean text")


@dataclass
class Book:
    pdf: bytes
    pages: int
    body_words: list[str]  # every word of the body in reading order, hyphenated words whole
    heads: set[str] = field(default_factory=set)  # the running heads drawn
    cut_words: list[str] = field(default_factory=list)  # words split by a page break ("assem-" / "bly")
    cut_pages: list[int] = field(default_factory=list)  # pages whose first line continues a paragraph
    figure_pages: list[int] = field(default_factory=list)  # pages with a figure (a raster image) drawn


def _paragraph(rng: random.Random) -> list[str]:
    words = [rng.choice(_VOCABULARY) for _ in range(rng.randint(40, 110))]
    lines = textwrap.wrap(" ".join(words).capitalize(), _WIDTH)
    if len(lines[-1]) > 0.6 * _WIDTH:  # a ragged last line, as typesetting leaves it
        lines.append("and so it ends.")
    else:
        lines[-1] += "."
    return lines


def _content(rng: random.Random) -> list[tuple[str, str]]:
    """(kind, text) lines: chapter, section, body (a paragraph's lines), gap (between paragraphs)."""
    out: list[tuple[str, str]] = []
    for number, title in enumerate(_CHAPTERS, start=1):
        out.append(("chapter", f"{number} {title}"))
        for section in range(1, 6):
            out.append(("section", f"{number}.{section} {rng.choice(_VOCABULARY).capitalize()} {rng.choice(_VOCABULARY)}"))
            for _ in range(rng.randint(7, 10)):
                out += [("body", line) for line in _paragraph(rng)]
                out.append(("gap", ""))
    return out


def _png(size: tuple[int, int], colour: tuple[int, int, int]) -> Any:
    from PIL import Image, ImageDraw
    from reportlab.lib.utils import ImageReader

    image = Image.new("RGB", size, (250, 250, 245))
    draw = ImageDraw.Draw(image)
    for x in range(10, size[0] - 10, 24):  # a bar chart, as a figure looks
        draw.rectangle((x, size[1] - 10 - (x * 7) % (size[1] - 20), x + 14, size[1] - 10), fill=colour)
    data = io.BytesIO()
    image.save(data, format="PNG")
    data.seek(0)
    return ImageReader(data)


def make_book_pdf(seed: int = 26, *, figures: bool = False) -> Book:
    """The book; with ``figures`` a banner (the same image) tops every body page and every 4th page has a chart."""
    rng = random.Random(seed)
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=True)
    _, height = A4
    pdf.setFont("Helvetica-Bold", 24)
    pdf.drawString(72, height - 200, BOOK_TITLE)
    pdf.showPage()
    pdf.setFont("Helvetica-Bold", 16)
    pdf.drawString(72, height - 100, "Contents")
    pdf.setFont("Helvetica", 11)
    for index, title in enumerate(_CHAPTERS, start=1):
        pdf.drawString(72, height - 130 - index * 16, f"{index} {title}.")
    pdf.showPage()

    lines = _content(rng)
    book = Book(pdf=b"", pages=FRONT_PAGES, body_words=[])
    chapter = _CHAPTERS[0]
    position = 0
    page = FRONT_PAGES
    cut = 0
    while position < len(lines):
        page += 1
        head = BOOK_TITLE if page % 2 == 0 else f"Chapter {_CHAPTERS.index(chapter) + 1}. {chapter}"
        book.heads.add(head)
        pdf.setFont("Helvetica-Oblique", 9)
        pdf.drawString(72, height - 50, head)
        if figures:
            pdf.drawImage(_png((200, 60), (120, 120, 120)), 400, height - 60, width=150, height=45)
            if page % 4 == 0:
                pdf.drawImage(_png((320, 200), (40, 90, 100 + page * 4)), 300, 120 + page * 3, width=240, height=150)
                book.figure_pages.append(page)
        if lines[position][0] == "body" and position and lines[position - 1][0] == "body":
            book.cut_pages.append(page)
        y = height - 90
        for row in range(_LINES_PER_PAGE):
            if position >= len(lines):
                break
            kind, text = lines[position]
            if kind == "gap" and row == 0:
                position += 1
                continue
            last_row = row == _LINES_PER_PAGE - 1
            following = lines[position + 1] if position + 1 < len(lines) else ("", "")
            if kind == "body" and last_row and following[0] == "body":
                cut += 1
                word, _, rest = following[1].partition(" ")
                if cut % 2 and len(word) >= 6 and rest:  # every other break splits a word
                    text = f"{text} {word[:3]}-"
                    lines[position + 1] = ("body", f"{word[3:]} {rest}")
                    book.cut_words.append(word)
            if kind == "chapter":
                chapter = text.split(" ", 1)[1]
                pdf.setFont("Helvetica-Bold", 16)
            elif kind == "section":
                pdf.setFont("Helvetica-Bold", 12)
            else:
                pdf.setFont("Helvetica", 10)
            if text:
                pdf.drawString(72, y, text)
            y -= 16 if kind in ("chapter", "section") else 14
            position += 1
        pdf.setFont("Helvetica", 9)
        pdf.drawString(297, 40, str(page - FRONT_PAGES))
        pdf.showPage()
    pdf.save()
    book.pdf = buffer.getvalue()
    book.pages = page
    words = " ".join(text for kind, text in _content(random.Random(seed)) if text).split()
    book.body_words = words
    return book
