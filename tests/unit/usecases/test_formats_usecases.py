"""Formats beside PDF through the use cases on fakes (issue 43): the split converts a born-digital file with no
model call and the chunk processor completes its pages at $0; a picture becomes pages sent in the image form;
a file of another type fails with its id. Real files (tests/data/formats: docling's), the real converters."""

from __future__ import annotations

import io
from decimal import Decimal
from pathlib import Path

from PIL import Image
from usecase_fakes import MODEL

from batchlane import keys
from batchlane.domain import page_form as forms
from batchlane.domain import status as st
from batchlane.domain.status import JobStatus
from batchlane.filejob import page_form_choice
from batchlane.filejob.assemble import assemble_job
from batchlane.filejob.chunk import process_chunk
from batchlane.filejob.create import create_job
from batchlane.filejob.split import split_job
from batchlane.ports import Services
from fakes import FakeUnitOfWork

DATA = Path(__file__).resolve().parents[2] / "data" / "formats"
OWNER = "owner-formats"


def _upload(svc: Services, uow: FakeUnitOfWork, name: str, data: bytes) -> str:
    key = f"uploads/{OWNER}/{name}"
    svc.store.put_bytes(key, data)
    file_id = uow.jobs.insert_file(owner_id=OWNER, name=name, s3_key=key, size_bytes=len(data)).id
    return create_job(svc, file_id=file_id).job_id


def test_a_word_file_is_converted_at_the_split_and_completed_for_nothing(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _upload(svc_on_fakes, fake_uow, "word_sample.docx", (DATA / "word_sample.docx").read_bytes())
    split = split_job(svc_on_fakes, job_id)
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None and (split.status, split.total_pages, split.lane_decision) == ("pending", 2, "converter")
    assert (job.source_type, job.total_pages, job.status) == ("docx", 2, JobStatus.PENDING)
    assert fake_uow.ledger.get_hold(job_id).amount_usd == Decimal(0)  # type: ignore[union-attr]  # no model call: nothing to hold
    assert ("conversion", job_id) in svc_on_fakes.workflows.started  # type: ignore[attr-defined]
    assert svc_on_fakes.store.list_keys(keys.images_prefix(job_id)) == [keys.images_prefix(job_id) + "p1-1.png"]
    assert not svc_on_fakes.store.list_keys(f"jobs/{job_id}/source/chunk-0.pdf")  # its chunk is the converted Markdown, no PDF

    assert fake_uow.jobs.move_job(job_id, st.start()) is not None  # StartConversion
    done = process_chunk(svc_on_fakes, job_id, 0, worker_id="w")  # a model call would fail: NoModelRuntime
    assert done == {"jobId": job_id, "chunkIndex": 0, "status": "completed", "pagesFailed": 0, "pagesBatch": 0}
    pages = svc_on_fakes.store.get_json(keys.chunk_result_key(job_id, 0))["pages"]
    assert [(p["page"], p["status"], p["servedBy"], p["costUsd"]) for p in pages] == [(1, "converted", "converter", "0"), (2, "converted", "converter", "0")]
    assert fake_uow.ledger.ledger_rows(job_id) == []  # nothing spent, nothing booked

    assemble_job(svc_on_fakes, job_id)
    markdown = svc_on_fakes.store.get_bytes(keys.markdown_key(job_id)).decode()
    assert markdown.index("<!-- Page 1 -->") < markdown.index("](word_sample.images/p1-1.png)") < markdown.index("<!-- Page 2 -->")
    assert "\n# Let’s swim!\n" in markdown and "\n## Let’s eat\n" in markdown  # its own heading levels, no document pass


def test_a_png_scan_becomes_a_page_sent_in_the_image_form(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    out = io.BytesIO()
    Image.new("L", (850, 1100), 230).save(out, format="PNG")
    job_id = _upload(svc_on_fakes, fake_uow, "scan.png", out.getvalue())
    split = split_job(svc_on_fakes, job_id)
    job = fake_uow.jobs.get_job(job_id)
    assert job is not None and (split.status, split.total_pages, job.source_type) == ("pending", 1, "png")
    assert svc_on_fakes.store.get_bytes(keys.chunk_source_key(job_id, 0)).startswith(b"%PDF-")
    assert svc_on_fakes.store.get_bytes(keys.pages_source_key(job_id)).startswith(b"%PDF-")  # what the page view shows
    hold = fake_uow.ledger.get_hold(job_id)  # a vision call is held for like any PDF page on-demand: a chunk's window
    assert hold is not None and hold.amount_usd == 0 and hold.outcome is None  # at a time, opened when the chunk runs (decision 0039)
    config = page_form_choice.converter_config(fake_uow.page_forms, svc_on_fakes.settings, job.options, source_type=job.source_type)
    assert config.page_form == forms.IMAGE and config.model_id == MODEL
    assert page_form_choice.converter_config(fake_uow.page_forms, svc_on_fakes.settings, job.options).page_form == forms.PDF  # a PDF keeps the setting's


def test_a_file_of_another_type_fails_with_its_id_and_nothing_is_written(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    job_id = _upload(svc_on_fakes, fake_uow, "notes.txt", b"plain notes, not a document we convert\n")
    split = split_job(svc_on_fakes, job_id)
    assert (split.status, split.error_id) == ("failed", "FILE_TYPE_UNSUPPORTED")
    assert svc_on_fakes.store.list_keys(f"jobs/{job_id}/") == [] and ("conversion", job_id) not in svc_on_fakes.workflows.started  # type: ignore[attr-defined]
