"""Issue 22.1: on an account where InvokeModel refuses PDF document blocks (Bedrock's "API restrictions"
page; the emulator's fault ``invoke_model_documents=refused``), a real mixed PDF still converts whole,
in the image form (the page rendered by pdfium plus its text layer), in both lanes, and each page
costs what Anthropic documents for an image (about width × height / 750 tokens) plus its text.
"""

from __future__ import annotations

import io
import re

import pytest
from pypdf import PdfReader, PdfWriter
from realmix import real_mix

from batchlane.claude import ConverterConfig, build_page_request
from batchlane.db import jobs as job_repo
from batchlane.db import page_forms
from batchlane.domain.page_form import MIN_FAILED
from batchlane.pdf.page_image import render_page_image
from batchlane.pdf.split import open_pdf, plan_chunks
from batchlane.runtime import services
from batchlane_dev.local.jobs import submit_pdf, wait_for_job

# Rendering and reading page images is slower than the text pages most tests use: 24 emulated hours = 24 s here.
# The refusal is worded without the word "document" (AWS publishes no wording; issue 42.1): caught by what succeeds.
UNWORDED = "Malformed input request: #/messages/0/content/0: extraneous key [source] is not permitted"
REFUSED = f"time_scale=3600,job_hours=0.5,invoke_model_documents=refused,document_refusal_message={UNWORDED}"


def mixed_pdf() -> tuple[bytes, list[tuple[str, ...] | None]]:
    """Every document of tests/e2e/realmix.py in one PDF (scans, rotated pages, a form, non-Latin scripts...)."""
    writer, expected = PdfWriter(), []
    for doc in real_mix():
        writer.append(PdfReader(io.BytesIO(doc.data)))
        expected.extend(doc.expected)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue(), expected


def documented_tokens(pdf_page: bytes, config: ConverterConfig) -> float:
    """Anthropic's formula for the image form of one page: width × height / 750 for the image, ~4 characters a token for the text."""
    image = render_page_image(pdf_page)
    body = build_page_request(chunk_index=0, page_number=1, pdf_bytes=pdf_page, config=config).with_form("image").body()
    text = len(body["system"]) + sum(len(block["text"]) for block in body["messages"][0]["content"] if block["type"] == "text")
    return image.width * image.height / 750 + text / 4


@pytest.mark.slow
@pytest.mark.parametrize("lane", ["on-demand", "batch-recorded", "batch-unrecorded"])
def test_with_documents_refused_a_real_mixed_pdf_converts_whole_in_the_image_form(stack_factory, lane):
    stack = stack_factory(
        REFUSED,
        batch_lane=lane != "on-demand",
        extra_env={"BATCH_CONVERSION_MIN_PAGES": "1", "BATCH_CONVERSION_MIN_RECORDS": "1", "BATCHLANE_PAGES_PER_REQUEST": "1"},
    )
    svc = services()
    config = ConverterConfig.from_settings(svc.settings)
    assert svc.settings.batchlane_page_form == "auto"
    if lane == "batch-recorded":  # what `batchlane doctor --live` records on such an account
        page_forms.PgPageForms(svc.db).record_form(config.model_id, "image", source="doctor")
    data, expected = mixed_pdf()
    job_id = submit_pdf(svc, data, name="real-mix.pdf", owner_id="archivist", options={"batchLane": True})["jobId"]
    final = wait_for_job(svc, job_id, timeout_s=300)
    job = svc.db.one("SELECT * FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=job_id)
    assert final.status == "completed", (job["status"], job["error_id"])
    assert job["pages_failed"] == 0

    markdown = svc.store.get_bytes(job["markdown_key"]).decode()
    sections = re.split(r"<!-- Page (\d+)(?::[^>]*)? -->", markdown)[1:]
    assert [int(n) for n in sections[0::2]] == list(range(1, len(expected) + 1)), "every page once, in order"
    for number, body, words in zip(sections[0::2], sections[1::2], expected, strict=True):
        assert body.strip(), f"page {number} came back empty"
        got = set(re.findall(r"\w+", body.lower()))
        assert not [w for w in words or () if w not in got and w[::-1] not in got], f"page {number} lost its words"

    # Tokens per page: what the emulator billed, against the documented formula for the page's image form.
    chunk = job_repo.PgJobs(svc.db).get_chunk(job_id, 0)
    pages = {item["page"]: item for item in svc.store.get_json(chunk.result_key)["pages"]}
    document = open_pdf(data, max_pages=len(expected))
    for page in document.pages(plan_chunks(len(expected), svc.settings.batchlane_pages_per_chunk)[0]):
        billed, documented = pages[page.number]["inputTokens"], documented_tokens(page.pdf_bytes, config)
        assert abs(billed - documented) <= 0.10 * documented, (page.number, billed, documented)

    served = {item["servedBy"] for item in pages.values()}
    assert served == ({"batch"} if lane == "batch-recorded" else {"on_demand"}), served
    refused = stack.bedrock.stats["converse_invalid"]  # on-demand calls refused for their form
    row = svc.db.one("SELECT page_form, source, detail FROM page_forms WHERE model_id = :m", m=config.model_id)
    assert row is not None and row["page_form"] == "image", "kept for both lanes"
    if lane == "on-demand":  # three pages' evidence (and those in flight beside them), then image from then on
        assert MIN_FAILED <= refused < MIN_FAILED + svc.settings.batchlane_chunk_concurrency, refused
        assert row["source"] == "refusal" and "none succeeded" in row["detail"]
    elif lane == "batch-unrecorded":  # collect learnt it from the lane's refused records: on-demand sent images at once
        assert refused == 0 and row["source"] == "refusal" and "batch records of lane" in row["detail"], (refused, row)
    else:
        assert refused == 0 and row["source"] == "doctor"


@pytest.mark.parametrize("lane", ["on-demand", "batch"])
def test_one_corrupt_pdf_page_whose_error_names_the_document_is_served_and_switches_no_form(stack_factory, lane):
    """Issue 42.1: page 2's PDF is refused as corrupt in words that say "document" (fault corrupt_pdf_pages); that
    page is served as an image, the other pages stay PDF, and no form is recorded for the model."""
    stack = stack_factory(
        "time_scale=3600,job_hours=0.2,corrupt_pdf_pages=2",
        batch_lane=lane == "batch",
        extra_env={"BATCH_CONVERSION_MIN_PAGES": "1", "BATCH_CONVERSION_MIN_RECORDS": "1", "BATCHLANE_PAGES_PER_REQUEST": "1"},
    )
    svc = services()
    from batchlane_dev.local.pdfgen import make_pdf

    job_id = submit_pdf(svc, make_pdf(6, title="corrupt page"), name="six.pdf", owner_id="archivist", options={"batchLane": lane == "batch"})["jobId"]
    final = wait_for_job(svc, job_id, timeout_s=180)
    job = svc.db.one("SELECT * FROM large_conversion_jobs WHERE id = CAST(:id AS uuid)", id=job_id)
    assert final.status == "completed" and job["pages_failed"] == 0, (job["status"], job["error_id"])
    markdown = svc.store.get_bytes(job["markdown_key"]).decode()
    assert [int(n) for n in re.findall(r"<!-- Page (\d+)", markdown)] == list(range(1, 7))
    assert svc.db.one("SELECT page_form FROM page_forms") is None, "one corrupt page switched the model's form"
    assert stack.bedrock.stats["converse_invalid"] == 1, "only page 2 was refused, once, on-demand"
