"""Batch-pool figures: pool_200_documents, pack_100000_records.

* pool_200_documents — 200 generated documents of 5 pages, bulk opt-in (``batchLane``), through
  the offline stack: they wait in the pool (the packer is held while they are submitted, so all of
  them join one window), ride in as few Bedrock jobs as the record cap allows, and resume primed.
  Baseline: the SAME documents converted all on-demand in the same run (same stack, no opt-in).
  ``value`` is the pooled run's total cost; ``saving_pct`` the saving against the baseline (aim
  ≥ 49 %: batch is half price, minus what falls back on-demand); ``pages_lost`` must be 0.
* pack_100000_records — one run of the packer (batch.packer.pack_pool: the pool read in
  fair order, plan_pool, the lane and member inserts, the holds extended) over 2,000 parked jobs
  of 50 pages (100,000 records) inserted directly into an embedded PostgreSQL; workflows faked.
  Reported: seconds (untraced run) and peak Python memory (tracemalloc, a second identical run)
  plus the process's peak RSS. Baseline: the bare pool read (db/lanes.PgLanes.pool_chunks, the
  same 100,000 records in fair order) in the same run, so the ratio is what packing adds to
  reading. Aim (absolute, the issue's): under 60 s, ≤ 1024 MB.
"""

from __future__ import annotations

import os
import resource
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from batchlane_dev.bench import figure, size, wanted

NAMES = ("pool_200_documents", "pool_20_documents", "pool_4_documents", "pack_100000_records", "pack_10000_records", "pack_500_records")

TERMINAL = ("completed", "failed", "cancelled")


def _quiet() -> None:
    import logging

    logging.getLogger("batchlane").setLevel(logging.ERROR)
    os.environ["POWERTOOLS_LOG_LEVEL"] = "ERROR"


# -- pool_N_documents ------------------------------------------------------------------------
def _run_documents(svc: Any, documents: list[bytes], options: dict[str, Any]) -> list[str]:
    from batchlane_dev.local.jobs import submit_pdf

    return [submit_pdf(svc, data, name=f"doc-{i:04d}.pdf", owner_id="bench", options=options)["jobId"] for i, data in enumerate(documents)]


def _wait_all(svc: Any, job_ids: list[str], timeout_s: float) -> None:
    from batchlane.db import jobs as job_repo
    from batchlane_dev.local.jobs import wait_until

    wait_until(
        lambda: all((j := job_repo.PgJobs(svc.db).get_job(job_id)) is not None and j.status in TERMINAL for job_id in job_ids),
        timeout_s=timeout_s,
        poll_s=1,
        what="every document",
    )


def _totals(svc: Any, job_ids: list[str], pages: int) -> dict[str, Any]:
    from batchlane.db import jobs as job_repo

    jobs = [job_repo.PgJobs(svc.db).get_job(job_id) for job_id in job_ids]
    return {
        "cost": sum((Decimal(j.total_cost_usd) for j in jobs if j is not None), Decimal(0)),
        "completed": sum(1 for j in jobs if j is not None and j.status == "completed"),
        # a page is lost when its job did not complete or the page was not converted
        "pages_lost": sum(pages - (j.pages_converted if j is not None and j.status == "completed" else 0) + (j.pages_failed if j else 0) for j in jobs),
        "pages_batch": sum(j.pages_batch for j in jobs if j is not None),
    }


def pool_figure(documents: int, pages: int = 5) -> dict[str, Any]:
    from batchlane.runtime import services
    from batchlane_dev.local.bedrock.clock import scale_for_job
    from batchlane_dev.local.lambda_runtime import Invocation
    from batchlane_dev.local.pdfgen import make_pdf
    from batchlane_dev.local.stack import OfflineStack, StackOptions

    # The clock the demo uses for one job of this many records: as fast as this machine keeps the
    # emulated Bedrock job on its calibrated pace (a faster one falls behind, and the wait's timeout
    # stops it part-way: the saving then measures the machine, not the pool).
    scale = scale_for_job(documents * pages)
    window_s = 2.0
    env = {
        # every document is small: only the bulk opt-in parks it; the window is 2 s of real time
        "BATCH_POOL_WINDOW_MINUTES": str(window_s * scale / 60),
        "BATCH_CONVERSION_GRACE_HOURS": "24",
        "BATCHLANE_BUDGET_USD_PER_MONTH": "1000000",
        "BATCHLANE_MAX_LIVE_JOBS": "1000",  # 200 documents of one owner at once (default 20)
    }
    datas = [make_pdf(pages, title=f"document {i}") for i in range(documents)]
    with tempfile.TemporaryDirectory(prefix="bench-pool-") as workdir:
        options = StackOptions(workdir=Path(workdir), faults=f"time_scale={scale},job_hours=0.5", database_url=os.environ.get("DATABASE_URL"), extra_env=env)
        with OfflineStack(options) as stack:
            svc = services()
            # The baseline first: the same documents, no opt-in, all on-demand.
            started = time.perf_counter()
            baseline_ids = _run_documents(svc, datas, {})
            _wait_all(svc, baseline_ids, 3600)
            baseline_s = time.perf_counter() - started
            baseline = _totals(svc, baseline_ids, pages)
            # The pool: hold the packer while submitting, so every document joins one window.
            stack.registry.intercept("batch_packer", lambda event, call_real: Invocation(result={"claimed": []}))
            started = time.perf_counter()
            pooled_ids = _run_documents(svc, datas, {"batchLane": True})
            stack.registry.intercept("batch_packer", None)  # the schedule (every 2 s) packs once the window passed
            _wait_all(svc, pooled_ids, 3600)
            pooled_s = time.perf_counter() - started
            pooled = _totals(svc, pooled_ids, pages)
            lanes = svc.db.run(
                """SELECT DISTINCT b.id, b.member_count, b.record_count, b.end_state FROM lanes b
                   JOIN batch_members m ON m.lane_row_id = b.id WHERE m.job_id = ANY(CAST(:ids AS uuid[]))""",
                ids=pooled_ids,
            )
            assert stack.bedrock is not None
            bedrock_jobs_created = stack.bedrock.stats["jobs_created"]
    cost, base_cost = pooled["cost"], baseline["cost"]
    return figure(
        f"pool_{documents}_documents",
        float(cost),
        "usd",
        float(base_cost),
        baseline_is=f"the same {documents} documents all on-demand, same run",
        saving_pct=round(float((base_cost - cost) / base_cost * 100), 2) if base_cost else None,
        aim_saving_pct=49,
        documents=documents,
        pages_per_document=pages,
        pages_lost=pooled["pages_lost"],
        baseline_pages_lost=baseline["pages_lost"],
        pages_batch=pooled["pages_batch"],
        completed=pooled["completed"],
        bedrock_jobs=len(lanes),
        bedrock_jobs_created=bedrock_jobs_created,
        lane_members=sorted((int(r["member_count"]) for r in lanes), reverse=True),
        lane_end_states=sorted({str(r["end_state"]) for r in lanes}),
        seconds=round(pooled_s, 1),
        baseline_seconds=round(baseline_s, 1),
    )


# -- pack_N_records ---------------------------------------------------------------------------
def _insert_parked(db: Any, documents: int, pages: int, owners: int = 20) -> None:
    """``documents`` parked jobs of ``pages`` pages (one chunk each), with files and holds, in one statement; their
    pool window has passed, so the packer packs every record (full Bedrock jobs and the rest)."""
    db.run(
        """WITH f AS (
               INSERT INTO files (owner_id, name, s3_key, status)
               SELECT 'owner-' || (i % :owners), 'doc-' || i || '.pdf', 'uploads/doc-' || i || '.pdf', 'converting'
               FROM generate_series(1, :n) AS i RETURNING id, owner_id),
           j AS (
               INSERT INTO large_conversion_jobs (file_id, owner_id, status, options, model_id, total_pages, pages_per_chunk, chunk_count, pooled_at)
               SELECT id, owner_id, 'waiting_batch', '{"batchLane": true}'::jsonb, :model, :pages, :pages, 1, now() - interval '1 hour'
               FROM f RETURNING id, owner_id),
           c AS (
               INSERT INTO chunk_jobs (job_id, chunk_index, first_page, last_page, status)
               SELECT id, 0, 1, :pages, 'waiting_batch' FROM j RETURNING job_id)
           INSERT INTO funds_holds (job_id, owner_id, amount_usd, expires_at)
           SELECT id, owner_id, 1, now() + interval '1 day' FROM j""",
        n=documents,
        pages=pages,
        owners=owners,
        model="us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    )


def _unpack(db: Any) -> None:
    """Back to the parked state the run started from: no lanes, no member rows."""
    db.run("DELETE FROM batch_members")
    db.run("DELETE FROM lanes")


class _Workflows:
    def __init__(self) -> None:
        self.started: list[tuple[str, int]] = []

    def start_batch_lane(self, lane_id: str, members: list[str]) -> None:
        self.started.append((lane_id, len(members)))


def pack_figure(documents: int, pages: int = 50) -> dict[str, Any]:
    from batchlane.batch.packer import pack_pool
    from batchlane.config import Settings
    from batchlane.db import Database, connect_params_from_url
    from batchlane.db.lanes import PgLanes
    from batchlane.db.migrate import migrate
    from batchlane.db.uow import PgUnitOfWork
    from batchlane_dev.local import postgres

    settings = Settings(
        batch_conversion_enabled=True,
        batch_conversion_s3_bucket="bench",
        batch_conversion_role_arn="arn:aws:iam::123456789012:role/bench",
        batch_pool_window_minutes=15,
    )
    with tempfile.TemporaryDirectory(prefix="bench-pack-") as tmp:
        server, url = postgres.start(Path(tmp) / "pgdata")
        db = Database(connect_params_from_url(url))
        try:
            migrate(db)
            _insert_parked(db, documents, pages)
            db.run("ANALYZE")
            workflows = _Workflows()
            svc = SimpleNamespace(db=db, settings=settings, workflows=workflows, uow=lambda: PgUnitOfWork(db))  # what pack_pool uses of Services
            started = time.perf_counter()
            with db.transaction() as tx:
                read = len(PgLanes(tx).pool_chunks())
            read_s = time.perf_counter() - started
            started = time.perf_counter()
            result = pack_pool(svc)  # type: ignore[arg-type]
            seconds = time.perf_counter() - started
            lanes = len(result["lanes"])
            packed_records = sum(lane["pages"] for lane in result["lanes"])
            members = db.one("SELECT count(*) AS n FROM batch_members")["n"]  # type: ignore[index]
            executions = len(workflows.started)
            # the same run again, traced, for the peak Python memory
            _unpack(db)
            tracemalloc.start()
            pack_pool(svc)  # type: ignore[arg-type]
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        finally:
            db.close()
            postgres.stop(server, Path(tmp) / "pgdata")
    return figure(
        f"pack_{documents * pages}_records",
        seconds,
        "s",
        read_s,
        baseline_is="the bare pool read of the same records (pool_chunks), same run",
        aim_seconds=60,
        chunks_read=read,
        documents=documents,
        records=documents * pages,
        packed_records=packed_records,
        lanes=lanes,
        member_rows=int(members),
        executions_started=executions,
        peak_python_memory_mb=round(peak / 1e6, 2),
        peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        aim_peak_mb=1024,
    )


def figures(args: Any) -> Iterator[dict[str, Any]]:
    _quiet()
    documents = size(args, 200, 20, 4)
    if wanted(args, f"pool_{documents}_documents"):
        yield pool_figure(documents)
    count = size(args, 2000, 200, 10)
    if wanted(args, f"pack_{count * 50}_records"):
        yield pack_figure(count)
