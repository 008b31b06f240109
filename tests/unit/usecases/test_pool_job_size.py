"""The packer sizes lanes by bytes as well as records: heavy pages split into more lanes, none skipped.

Bedrock's quota "Batch inference job size" is the sum of a job's input files (5 GB for most
models; base64 pages count 4/3). Packing by records alone put every heavy page in one lane that
prepare then found over BATCH_CONVERSION_MAX_JOB_MB, after building every record, and sent all its
members on-demand at full price.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal

from bigpages import image_page, jpeg, merged, noise
from usecase_fakes import MODEL

from batchlane.batch.packer import pack_pool
from batchlane.batch.prepare import finish_prepare, plan_prepare, prepare_group
from batchlane.domain.limits import quota_bytes
from batchlane.filejob.source import store_chunk_sources
from batchlane.pdf import open_pdf, plan_chunks
from batchlane.ports import Services
from fakes import FakeUnitOfWork

PAGES, PER_CHUNK = 12, 2
MAX_JOB_MB = 2  # scaled down from 5 GB: about three chunks of two ~160 KB scans fit one job


def _heavy_job(svc: Services, uow: FakeUnitOfWork) -> str:
    """A job of scanned-looking pages (noise JPEGs: no encoder shrinks them), split as create_job does: its chunks'
    sources stored, their sizes recorded with the chunk rows, the job parked with a funds hold."""
    file_row = uow.jobs.insert_file(owner_id="owner-1", name="a.pdf", s3_key="uploads/owner-1/a.pdf", size_bytes=10)
    job = uow.jobs.insert_job(
        file_id=file_row.id, owner_id="owner-1", status="splitting", options={}, model_id=MODEL, total_pages=0, pages_per_chunk=PER_CHUNK, chunks=[]
    )
    pdf = merged([image_page(jpeg(noise((500, 500))), text=f"Scan {n}") for n in range(1, PAGES + 1)])
    spans = plan_chunks(PAGES, PER_CHUNK)
    sizes = store_chunk_sources(svc.store, job.id, open_pdf(pdf, max_pages=PAGES), spans)
    assert uow.jobs.finish_split(job.id, parked=True, total_pages=PAGES, chunks=spans, chunk_bytes=sizes) is not None
    uow.ledger.place_hold(job_id=job.id, owner_id="owner-1", amount_usd=Decimal(5), hours=30)
    return job.id


def _settings(svc: Services) -> Services:
    update = {"batch_conversion_max_job_mb": MAX_JOB_MB, "batch_conversion_min_records": 1, "batch_pool_window_minutes": 0}
    return dataclasses.replace(svc, settings=svc.settings.model_copy(update=update))


def test_heavy_pages_split_into_lanes_under_the_job_size_quota_and_none_is_skipped(svc_on_fakes: Services, fake_uow: FakeUnitOfWork) -> None:
    svc = _settings(svc_on_fakes)
    job_id = _heavy_job(svc, fake_uow)

    lanes = pack_pool(svc)["lanes"]

    assert len(lanes) > 1, "one lane of every heavy page would be over the job size quota"
    packed = sorted((m.job_id, m.chunk_index) for lane in lanes for m in fake_uow.lanes.members(fake_uow.lanes.get_row(lane["laneId"]).id))  # type: ignore[union-attr]
    assert packed == [(job_id, c) for c in range(PAGES // PER_CHUNK)], "every chunk in exactly one lane"
    for lane in lanes:  # prepare as the state machine runs it: each lane goes to Bedrock, none skips as job_too_large
        plan = plan_prepare(svc, lane["laneId"])
        for group in plan["chunks"]:
            prepare_group(svc, lane["laneId"], group)
        assert finish_prepare(svc, lane["laneId"])["action"] == "submit"
        row = fake_uow.lanes.get_row(lane["laneId"])
        assert row is not None and row.input_bytes is not None and row.input_bytes <= quota_bytes(MAX_JOB_MB)
