"""The packer sizes lanes by bytes as well as records: heavy pages split into more lanes, none skipped.

Bedrock's quota "Batch inference job size" is the sum of a job's input files (5 GB for most
models; base64 pages count 4/3). Packing by records alone put every heavy page in one lane that
prepare then found over BATCH_CONVERSION_MAX_JOB_MB, after building every record, and sent all its
members on-demand at full price.
"""

from __future__ import annotations

import dataclasses

from bigpages import image_page, jpeg, merged, noise
from usecase_fakes import new_job

from batchlane.batch.packer import pack_pool
from batchlane.batch.prepare import finish_prepare, plan_prepare, prepare_group
from batchlane.conversion.source import store_chunk_sources
from batchlane.db import batch_rows as rows
from batchlane.pdf import open_pdf, plan_chunks
from batchlane.runtime import Services

PAGES, PER_CHUNK = 12, 2
MAX_JOB_MB = 2  # scaled down from 5 GB: about three chunks of two ~160 KB scans fit one job


def _heavy_job(svc: Services) -> str:
    """A parked job of scanned-looking pages (noise JPEGs: no encoder shrinks them), split as create_job does."""
    job_id = new_job(svc, pages=PAGES, pages_per_chunk=PER_CHUNK)
    pdf = merged([image_page(jpeg(noise((500, 500))), text=f"Scan {n}") for n in range(1, PAGES + 1)])
    sizes = store_chunk_sources(svc.store, job_id, open_pdf(pdf, max_pages=PAGES), plan_chunks(PAGES, PER_CHUNK))
    for index, size in sizes.items():  # what finish_split records with the chunk rows
        svc.db.run("UPDATE chunk_jobs SET source_bytes = :s WHERE job_id = CAST(:j AS uuid) AND chunk_index = :i", s=size, j=job_id, i=index)
    return job_id


def _settings(svc: Services) -> Services:
    tables = [r["tablename"] for r in svc.db.run("SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations'")]
    svc.db.run(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")  # the pool is the whole database's
    update = {"batch_conversion_max_job_mb": MAX_JOB_MB, "batch_conversion_min_records": 1, "batch_pool_window_minutes": 0}
    return dataclasses.replace(svc, settings=svc.settings.model_copy(update=update))


def test_heavy_pages_split_into_lanes_under_the_job_size_quota_and_none_is_skipped(svc: Services) -> None:
    svc = _settings(svc)
    job_id = _heavy_job(svc)

    lanes = pack_pool(svc)["lanes"]

    assert len(lanes) > 1, "one lane of every heavy page would be over the job size quota"
    packed = sorted((m.job_id, m.chunk_index) for lane in lanes for m in rows.members(svc.db, rows.get_row(svc.db, lane["laneId"]).id))  # type: ignore[union-attr]
    assert packed == [(job_id, c) for c in range(PAGES // PER_CHUNK)], "every chunk in exactly one lane"
    for lane in lanes:  # prepare as the state machine runs it: each lane goes to Bedrock, none skips as job_too_large
        plan = plan_prepare(svc, lane["laneId"])
        for group in plan["chunks"]:
            prepare_group(svc, lane["laneId"], group)
        assert finish_prepare(svc, lane["laneId"])["action"] == "submit"
        row = rows.get_row(svc.db, lane["laneId"])
        assert row is not None and row.input_bytes is not None and row.input_bytes <= MAX_JOB_MB * 1024 * 1024
