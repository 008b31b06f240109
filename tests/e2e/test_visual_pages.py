"""Claude sees the page: a PDF of image-only pages converts whole, in both lanes.

Scans, a grayscale picture and a CMYK JPEG, none with a text layer. Before, each page
went to Converse as a document without citations (text extraction only) and every one of
them ended ``<!-- Page N: failed (empty_text) -->``. Now the Anthropic Messages body goes
through InvokeModel (batch records: modelInvocationType InvokeModel), the emulator sees the
page in visual mode and describes each image, and every page converts.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from batchlib import page_results

from batchlane.db import ledger
from batchlane.runtime import services
from batchlane_dev.local.jobs import submit_pdf, wait_for_job
from batchlane_dev.local.pdfgen import IMAGE_PAGES, make_image_pdf

pytestmark = pytest.mark.slow

COLOURS = {"L": "grayscale", "CMYK": "CMYK", "RGB": "RGB"}


@pytest.mark.parametrize("lane", ["batch", "on-demand"])
def test_image_only_pages_convert_with_every_page_converted(stack_factory, lane):
    stack = stack_factory(
        "time_scale=36000,job_hours=0.5",
        batch_lane=lane == "batch",
        extra_env={"BATCH_CONVERSION_MIN_PAGES": "1", "BATCH_CONVERSION_MIN_RECORDS": "1", "BATCHLANE_PAGES_PER_CHUNK": "2"},
    )
    svc = services()
    job_id = submit_pdf(svc, make_image_pdf(), name="scans.pdf", owner_id="reader")["jobId"]
    assert wait_for_job(svc, job_id, timeout_s=120).status == "completed"

    job = svc.db.one("SELECT * FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=job_id)
    pages = len(IMAGE_PAGES)
    assert job["pages_failed"] == 0
    assert job["pages_batch"] == (pages if lane == "batch" else 0)
    results = page_results(job_id)
    assert {n: r.status for n, r in results.items()} == dict.fromkeys(range(1, pages + 1), "converted")
    assert {r.served_by for r in results.values()} == {"batch" if lane == "batch" else "on_demand"}

    markdown = svc.store.get_bytes(job["markdown_key"]).decode()
    assert "failed" not in markdown
    sections = re.split(r"<!-- Page (\d+) -->", markdown)[1:]
    assert [int(n) for n in sections[0::2]] == list(range(1, pages + 1)), "every page once, in order"
    for number, (body, ((width, height), mode, _, (x, y, _, _))) in enumerate(zip(sections[1::2], IMAGE_PAGES, strict=True), start=1):
        description = f"{width}×{height} {COLOURS[mode]} image at ({x}, {y})"
        if number < pages:  # a figure on the page: its file, linked with the description as alt text
            assert f"![{description}](scans.images/p{number}-1.png)" in body, "each page's own image under its own marker"
        else:  # the full-page scan is the page, not a figure on it
            assert f"*[Figure: {description}]*" in body

    if lane == "batch":
        assert [j.invocation_type for j in stack.bedrock.jobs.values()] == ["InvokeModel"]
    rows = ledger.PgLedger(svc.db).ledger_rows(job_id)
    total = sum((r.cost_usd for r in rows), Decimal(0))
    assert Decimal(job["total_cost_usd"]) == total > 0
