"""Pages too large for one request (issue 10, point 5), on the offline stack, in both lanes.

A six-page document: page 2 carries a 20-megapixel photo (12 MB), page 5 a drawing of 700,000
vectors (18 MB stored uncompressed, ~5.5 MB once the split Flate-compresses its content stream,
as pdfium does when it writes the page), both over the 4.5 MB page limit. Page 2 is recompressed and converts with
its own text. Page 5's content stream inflates past the 16 MiB a page may hold (issue 21.3,
domain/limits.MAX_PAGE_CONTENT_BYTES), so it is refused before anything parses it: it ends
``<!-- Page 5: failed (PAGE_TOO_COMPLEX) -->`` and never reaches Bedrock (no batch record, no call).
(A page over 4.5 MB that nothing can shrink ends PAGE_TOO_LARGE the same way: tests/unit/test_fit.py.)
"""

from __future__ import annotations

import base64

import pytest
from batchlib import lanes
from bigpages import image_page, jpeg, merged, noise, text_page, vector_page
from held import HeldInvocations

from batchlane import keys
from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.domain.limits import MAX_PAGE_BYTES, encoded_size
from batchlane.filejob.source import chunk_pages
from batchlane.runtime import services
from batchlane_dev.local.jobs import submit_pdf, wait_for_job

PAGES = 6
PHOTO, DRAWING = 2, 5


WORDS = ("", "Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot")


def phrase(number: int) -> str:
    """A line of its own on each page. Not "This is page N of 6": alone on every page's edge and varying only in
    the page number, that is a folio by the document pass's rule (domain/furniture.py), and it is removed."""
    return f"{WORDS[number]} is the word written on this heavy page"


def document() -> bytes:
    pages = []
    for number in range(1, PAGES + 1):
        if number == PHOTO:
            pages.append(image_page(jpeg(noise((5000, 4000))), text=phrase(number)))
        elif number == DRAWING:
            pages.append(vector_page(700_000, text=phrase(number)))
        else:
            pages.append(text_page(phrase(number)))
    assert all(len(p) > MAX_PAGE_BYTES for n, p in enumerate(pages, 1) if n in (PHOTO, DRAWING))
    return merged(pages)


@pytest.mark.slow
@pytest.mark.parametrize("lane", ["batch", "on-demand"])
def test_a_heavy_page_is_reduced_and_converts_and_an_unreducible_one_fails_at_once_unsent(stack_factory, lane):
    stack = stack_factory(
        "time_scale=36000,job_hours=0.5",
        batch_lane=lane == "batch",
        extra_env={
            "BATCH_CONVERSION_MIN_PAGES": "1",
            "BATCH_CONVERSION_MIN_RECORDS": "1",
            "BATCHLANE_PAGES_PER_CHUNK": "3",
            "BATCHLANE_PAGES_PER_REQUEST": "1",  # one request per page sent: the request count names the pages
            "BATCHLANE_COVERAGE_THRESHOLD": "0",
            "BATCHLANE_PAGE_RENDER": "false",
        },
    )
    svc = services()
    # A billed lane deletes the records it sent: hold its collect while the test reads them.
    with HeldInvocations(stack, "batch_collect") as collect:
        job_id = submit_pdf(svc, document(), name="heavy.pdf", owner_id="tester")["jobId"]
        if lane == "batch":
            assert collect.entered.wait(120), "the lane was never collected"
            [lane_row] = lanes(job_id)
            manifest = svc.store.get_json(keys.batch_manifest_key(lane_row["lane_id"]))
            lines = b"".join(svc.store.get_bytes(s["key"]) for s in manifest["shards"]).splitlines()
    final = wait_for_job(svc, job_id, timeout_s=180)
    assert final.status == "completed"

    job = job_repo.PgJobs(svc.db).get_job(job_id)
    assert job is not None and job.pages_failed == 1
    markdown = svc.store.get_bytes(job.markdown_key).decode()
    assert f"<!-- Page {DRAWING}: failed (PAGE_TOO_COMPLEX) -->" in markdown
    for number in range(1, PAGES + 1):
        if number != DRAWING:
            start = markdown.index(f"<!-- Page {number} -->")
            section = markdown[start : markdown.find("<!-- Page", start + 5)]
            assert phrase(number) in section, f"page {number} lost its text"

    rows = ledger.PgLedger(svc.db).ledger_rows(job_id)
    calls = sum(r.metadata.get("requests", 0) for r in rows if r.source == "chunk")
    if lane == "on-demand":
        assert calls == PAGES - 1, "one call per page sent, none for the page too large"
        return
    # Batch lane: every page that could be sent went as a record; the drawing has none, and nothing went on-demand.
    record_ids = list(manifest["promptHashes"])  # every record the lane sent, by its pooled id (m<k>c<chunk>p<page>)
    assert len(record_ids) == PAGES - 1 and not any(r.endswith(f"p{DRAWING}") for r in record_ids)
    assert calls == 0 and job.pages_batch == PAGES - 1
    # The photo page's record carries the reduced page: the very bytes the on-demand path would send.
    photo_chunk = next(c for c in job_repo.PgJobs(svc.db).get_chunks(job_id) if c.first_page <= PHOTO <= c.last_page)
    sent = next(p for p in chunk_pages(svc.store, job_id, photo_chunk, render=False) if p.number == PHOTO)
    assert len(sent.pdf_bytes) <= MAX_PAGE_BYTES
    photo_line = next(line for line in lines if f"p{PHOTO}\"".encode() in line[:40])
    assert base64.b64encode(sent.pdf_bytes) in photo_line and len(photo_line) < encoded_size(MAX_PAGE_BYTES) + 100_000
