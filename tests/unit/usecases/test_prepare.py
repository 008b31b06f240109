"""Prepare on fakes: one record per non-blank page, exactly the on-demand request; too few records skip the lane."""

from __future__ import annotations

import dataclasses
import json

from usecase_fakes import MODEL

from batchlane import keys
from batchlane.batch.abandon import abandon
from batchlane.batch.prepare import finish_prepare, plan_prepare, prepare_chunk
from batchlane.conversion.source import store_chunk_sources
from batchlane.converter import ConverterConfig, build_page_request
from batchlane.db import batch_rows as rows
from batchlane.db import jobs as job_repo
from batchlane.domain import status as st
from batchlane.pdf import open_pdf, plan_chunks
from batchlane.runtime import Services
from batchlane_dev.local.pdfgen import make_pdf

PAGES, PER_CHUNK, BLANK_EVERY = 12, 5, 4  # pages 4, 8 and 12 are blank


def _parked_with_sources(svc: Services) -> str:
    document = open_pdf(make_pdf(PAGES, blank_every=BLANK_EVERY), max_pages=100)
    spans = plan_chunks(PAGES, PER_CHUNK)
    with svc.db.transaction() as tx:
        file_row = job_repo.insert_file(tx, owner_id="owner-1", name="p.pdf", s3_key="uploads/owner-1/p.pdf", size_bytes=10)
        job = job_repo.insert_job(
            tx,
            file_id=str(file_row.id),
            owner_id="owner-1",
            status="waiting_batch",
            options={},
            model_id=MODEL,
            total_pages=PAGES,
            pages_per_chunk=PER_CHUNK,
            chunks=spans,
        )
        rows.insert_preparing(tx, job_id=str(job.id), model_id=MODEL, deadline_hours=26)
    store_chunk_sources(svc.store, str(job.id), document, spans)
    return str(job.id)


def _prepare(svc: Services, job_id: str) -> dict:
    plan = plan_prepare(svc, job_id)
    assert plan["proceed"] is True and plan["chunks"] == [0, 1, 2]
    for chunk in plan["chunks"]:
        prepare_chunk(svc, job_id, chunk)
    return finish_prepare(svc, job_id)


def test_prepare_writes_one_record_per_non_blank_page_exactly_as_on_demand_would_send_it(svc: Services) -> None:
    svc = dataclasses.replace(svc, settings=svc.settings.model_copy(update={"batch_conversion_min_records": 1}))
    job_id = _parked_with_sources(svc)

    assert _prepare(svc, job_id) == {"action": "submit", "reason": None, "records": 9}

    manifest = svc.store.get_json(keys.batch_manifest_key(job_id))
    non_blank = [n for n in range(1, PAGES + 1) if n % BLANK_EVERY]
    expected_ids = {f"c{(n - 1) // PER_CHUNK}-p{n}" for n in non_blank}
    assert set(manifest["promptHashes"]) == expected_ids and manifest["recordCount"] == 9
    records = [json.loads(line) for shard in manifest["shards"] for line in svc.store.get_bytes(shard["key"]).splitlines()]
    assert {r["recordId"] for r in records} == expected_ids
    # the record for page 5 is the request the chunk processor would send for it, byte for byte
    page_5 = next(r for r in records if r["recordId"] == "c0-p5")
    pdf_5 = next(p for p in open_pdf(make_pdf(PAGES, blank_every=BLANK_EVERY), max_pages=100).pages(plan_chunks(PAGES, PER_CHUNK)[0]) if p.number == 5)
    request = build_page_request(chunk_index=0, page_number=5, pdf_bytes=pdf_5.pdf_bytes, config=ConverterConfig.from_settings(svc.settings, {}))
    assert page_5["modelInput"] == request.model_input()
    assert manifest["promptHashes"]["c0-p5"] == request.prompt_hash
    row = rows.get_row(svc.db, job_id)
    assert row is not None and (row.state, row.record_count) == ("preparing", 9)


def test_too_few_records_skip_the_lane_with_the_reason_on_the_row(svc: Services) -> None:
    job_id = _parked_with_sources(svc)  # 9 records, under the default minimum of 100
    decision = _prepare(svc, job_id)
    assert decision == {"action": "skip", "reason": "too_few_records", "records": 9}
    assert abandon(svc, job_id, reason=decision["reason"]) == {"closed": True, "endState": "skipped"}
    row = rows.get_row(svc.db, job_id)
    assert row is not None and (row.state, row.end_state, row.reason) == ("closed", "skipped", "too_few_records")


def test_a_job_cancelled_before_prepare_closes_its_row_and_prepares_nothing(svc: Services) -> None:
    job_id = _parked_with_sources(svc)
    job_repo.move_job(svc.db, job_id, st.cancel())
    assert plan_prepare(svc, job_id) == {"proceed": False, "chunks": [], "why": "not_preparing"}
    row = rows.get_row(svc.db, job_id)
    assert row is not None and (row.state, row.end_state, row.reason) == ("closed", "skipped", "job_cancelled")
