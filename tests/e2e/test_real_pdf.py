"""A PDF laid out like a real document converts whole: every page's own text under its own marker.

The document is built with reportlab's layout engine (platypus), not line by line: text
flows across pages, with headings, a table, a two-column page, a landscape page, an
image, a blank page and Latin-1 accents. Each page's text is read back from the source PDF
with pypdf and must appear, in full, in that page's section of the Markdown.
"""

from __future__ import annotations

import io
import re

import pytest
from PIL import Image as PILImage
from pypdf import PdfReader
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4, landscape
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.lib.units import cm
from reportlab.platypus import BaseDocTemplate, Frame, FrameBreak, Image, NextPageTemplate, PageBreak, PageTemplate, Paragraph, Spacer, Table, TableStyle

from batchlane.runtime import services
from batchlane_dev.local.jobs import submit_pdf, wait_for_job

LOREM = (
    "Batch inference lets jobs that can wait pay half price. Each page keeps its marker, each marker its page, "
    "and the ledger remembers what every answer cost. Résumé, naïve, façade: accents survive the trip. "
)


def build_document() -> bytes:
    buffer = io.BytesIO()
    styles = getSampleStyleSheet()
    portrait = A4
    doc = BaseDocTemplate(buffer, pagesize=portrait, title="A real-looking report", invariant=True)
    width, height = portrait
    one_column = Frame(2 * cm, 2 * cm, width - 4 * cm, height - 4 * cm, id="one")
    left = Frame(2 * cm, 2 * cm, (width - 5 * cm) / 2, height - 4 * cm, id="left")
    right = Frame(3 * cm + (width - 5 * cm) / 2, 2 * cm, (width - 5 * cm) / 2, height - 4 * cm, id="right")
    lw, lh = landscape(A4)
    wide = Frame(2 * cm, 2 * cm, lw - 4 * cm, lh - 4 * cm, id="wide")
    doc.addPageTemplates(
        [
            PageTemplate("normal", [one_column], pagesize=portrait),
            PageTemplate("columns", [left, right], pagesize=portrait),
            PageTemplate("wide", [wide], pagesize=landscape(A4)),
        ]
    )
    story = [Paragraph("Quarterly conversion report", styles["Title"])]
    for section in range(1, 7):
        story.append(Paragraph(f"Section {section}: findings", styles["Heading2"]))
        story.extend(Paragraph(f"Paragraph {section}.{n}. " + LOREM * 3, styles["BodyText"]) for n in range(1, 6))
    table = Table([["Lane", "Pages", "Cost"], ["batch", "1152", "5.57"], ["on-demand", "48", "0.46"]])
    table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.grey)]))
    story += [Spacer(1, 12), table, NextPageTemplate("columns"), PageBreak()]
    story += [Paragraph(f"Column text {n}. " + LOREM, styles["BodyText"]) for n in range(1, 9)]
    story += [FrameBreak(), *[Paragraph(f"Right column {n}. " + LOREM, styles["BodyText"]) for n in range(1, 6)]]
    story += [NextPageTemplate("wide"), PageBreak(), Paragraph("A landscape appendix", styles["Heading1"])]
    logo = io.BytesIO()
    PILImage.new("RGB", (40, 40), (30, 60, 200)).save(logo, format="PNG")
    logo.seek(0)
    story += [Image(logo, width=2 * cm, height=2 * cm), Paragraph("Figure 1. A blue square. " + LOREM, styles["BodyText"])]
    story += [NextPageTemplate("normal"), PageBreak(), Spacer(1, 1), PageBreak(), Paragraph("The last page, after a blank one.", styles["BodyText"])]
    doc.build(story)
    return buffer.getvalue()


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


@pytest.mark.parametrize("lane", ["batch", "on-demand"])
def test_a_laid_out_document_converts_every_page_under_its_own_marker(stack_factory, lane):
    pdf = build_document()
    source = PdfReader(io.BytesIO(pdf))
    pages = len(source.pages)
    assert pages >= 6
    stack_factory(
        "time_scale=36000,job_hours=0.5",
        batch_lane=lane == "batch",
        extra_env={"BATCH_CONVERSION_MIN_PAGES": "1", "BATCH_CONVERSION_MIN_RECORDS": "1", "BATCHLANE_PAGES_PER_CHUNK": "3"},
    )
    job_id = submit_pdf(services(), pdf, name="report.pdf", owner_id="reader")["jobId"]
    final = wait_for_job(services(), job_id, timeout_s=120)
    assert final.status == "completed"
    job = services().db.one("SELECT * FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=job_id)
    assert job["pages_failed"] == 0 and job["pages_batch"] == (0 if lane == "on-demand" else job["pages_batch"])
    markdown = services().store.get_bytes(job["markdown_key"]).decode()
    sections = re.split(r"<!-- Page (\d+) -->", markdown)[1:]
    numbers = [int(n) for n in sections[0::2]]
    assert numbers == list(range(1, pages + 1)), "every page once, in order"
    blank_pages = 0
    for number, body in zip(numbers, sections[1::2], strict=True):
        expected = words(source.pages[number - 1].extract_text())
        if not expected:
            blank_pages += 1
            continue
        got = set(words(body))
        missing = [w for w in expected if w not in got]
        assert not missing, f"page {number} lost words {missing[:10]}"
    assert blank_pages == 1
