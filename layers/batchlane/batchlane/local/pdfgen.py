"""Test documents: a multi-page PDF with real text on every page (reportlab, ~2 s per 1,000 pages).

Each page carries a heading and paragraphs that name the page ("page 17 of 1200"), so a
test can check that each page's own text landed under its own marker. Every
``blank_every``-th page is left empty on purpose.
"""

from __future__ import annotations

import io

from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

_WORDS = (
    "batch inference bills half of on-demand for jobs that can wait while every page keeps its marker and "
    "nothing is lost between prepare submit wait collect and resume the ledger holds one row per batch job"
).split()


def page_phrase(number: int, total: int) -> str:
    return f"This is page {number} of {total}"


def make_pdf(pages: int, *, blank_every: int = 0, lines_per_page: int = 18, title: str = "batchlane sample") -> bytes:
    if pages < 1:
        raise ValueError("pages must be at least 1")
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=True)
    _, height = A4
    for number in range(1, pages + 1):
        if not (blank_every and number % blank_every == 0):
            pdf.setFont("Helvetica-Bold", 16)
            pdf.drawString(72, height - 72, f"{title}: section {number}")
            pdf.setFont("Helvetica", 10)
            pdf.drawString(72, height - 100, f"{page_phrase(number, pages)}.")
            for line in range(lines_per_page):
                start = (number * 7 + line * 3) % len(_WORDS)
                words = [_WORDS[(start + k) % len(_WORDS)] for k in range(12)]
                pdf.drawString(72, height - 130 - line * 14, " ".join(words).capitalize() + ".")
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()
