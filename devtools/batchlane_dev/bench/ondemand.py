"""The on-demand path against the emulated account quota (issue 5).

The figures and their parameters: docs/benchmarks.md "Module notes".
"""

from __future__ import annotations

import logging
import math
import os
import re
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from batchlane.db import jobs as job_repo
from batchlane.db import ledger
from batchlane.runtime import services
from batchlane_dev.bench import figure, size, wanted
from batchlane_dev.local.jobs import submit_pdf, wait_for_job
from batchlane_dev.local.pdfgen import make_pdf
from batchlane_dev.local.stack import PROCESS_FUNCTIONS, OfflineStack, StackOptions

SMALL_JOB_FAULTS = "throttle_rpm=60,converse_latency_ms=400,output_ms_per_token=2"
SMALL_JOB_PACE = {"BATCHLANE_ONDEMAND_RPM": "40", "BATCHLANE_ONDEMAND_BURST": "19"}
MANY_JOBS_RPM = 600
MANY_JOBS_FAULTS = f"throttle_rpm={MANY_JOBS_RPM},converse_latency_ms=300,output_ms_per_token=0.2"
_MARKER = re.compile(r"<!-- Page (\d+)(?::[^>]*)? -->")


def _stack(workdir: str, faults: str, env: dict[str, str], *, warm: int) -> OfflineStack:
    """Chunk Lambdas in worker processes (their CPU work must not share the emulator's GIL),
    ``warm`` of them through their init phase first: on AWS, concurrent cold starts run on
    machines of their own, here they would queue for two cores."""
    options = StackOptions(
        workdir=Path(workdir),
        faults=faults,
        database_url=os.environ.get("DATABASE_URL"),
        batch_lane=False,
        extra_env=env,
        process_functions=PROCESS_FUNCTIONS,
        warm_workers=warm,
    )
    return OfflineStack(options)


def _timed_job(pages: int, env: dict[str, str]) -> tuple[float, dict[str, Any]]:
    data = make_pdf(pages)
    with tempfile.TemporaryDirectory(prefix="batchlane-bench-") as workdir, _stack(workdir, SMALL_JOB_FAULTS, env, warm=1) as stack:
        svc = services()
        started = time.perf_counter()
        job_id = submit_pdf(svc, data, name=f"bench-{pages}.pdf", owner_id="bench")["jobId"]
        final = wait_for_job(svc, job_id, timeout_s=900, poll_s=0.05)
        elapsed = time.perf_counter() - started
        assert stack.bedrock is not None
        rows = [r for r in ledger.PgLedger(svc.db).ledger_rows(job_id) if r.source == "chunk"]
        return elapsed, {
            "status": final.status,
            "requests": stack.bedrock.stats["converse_ok"],
            "throttled": stack.bedrock.stats["converse_throttled"],
            "input_tokens_per_page": round(sum(r.input_tokens for r in rows) / pages, 1),
        }


def twenty_pages(pages: int) -> dict[str, Any]:
    baseline, base = _timed_job(pages, {"BATCHLANE_PAGES_PER_REQUEST": "1", "BATCHLANE_CHUNK_CONCURRENCY": "1", "BATCHLANE_GLOBAL_CONCURRENCY": "0"})
    before_s, before = _timed_job(pages, {**SMALL_JOB_PACE, "BATCHLANE_CHUNK_MAX_PARALLEL": "0"})
    value, tuned = _timed_job(pages, SMALL_JOB_PACE)
    return figure(
        f"ondemand_{pages}_pages",
        value,
        "s",
        baseline,
        baseline_is="one page a request, one request at a time, same emulated quota",
        faults=SMALL_JOB_FAULTS,
        settings=SMALL_JOB_PACE,
        lambdas="job_create and chunk processor in worker processes, 1 warm",
        status=tuned["status"],
        requests=tuned["requests"],
        baseline_requests=base["requests"],
        throttled_requests=tuned["throttled"],
        input_tokens_per_page=tuned["input_tokens_per_page"],
        full_groups_s=round(before_s, 3),
        full_groups_requests=before["requests"],
        full_groups_input_tokens_per_page=before["input_tokens_per_page"],
        input_tokens_vs_full_groups=round(tuned["input_tokens_per_page"] / before["input_tokens_per_page"], 4),
    )


def _pages_in(markdown: str) -> tuple[set[int], int]:
    found = {int(m.group(1)) for m in _MARKER.finditer(markdown)}
    return found, markdown.count(": failed (")


def many_documents(sizes: list[int]) -> dict[str, Any]:
    env = {
        "BATCHLANE_ONDEMAND_RPM": str(MANY_JOBS_RPM * 0.95),
        "BATCHLANE_ONDEMAND_BURST": str(MANY_JOBS_RPM // 60 - 1),  # 570 + 9 + 1 = 580: 20 requests (2 s) of headroom for arrival jitter
        "BATCHLANE_GLOBAL_CONCURRENCY": "48",
        "BATCHLANE_PAGES_PER_CHUNK": "100",
    }
    pdfs = [make_pdf(n, blank_every=25) for n in sizes]
    chunks = sum(math.ceil(n / int(env["BATCHLANE_PAGES_PER_CHUNK"])) for n in sizes)
    with tempfile.TemporaryDirectory(prefix="batchlane-bench-") as workdir, _stack(workdir, MANY_JOBS_FAULTS, env, warm=chunks) as stack:
        svc = services()
        assert stack.bedrock is not None
        stats = stack.bedrock.stats
        first_ok: list[float] = []
        last_ok = [0.0, 0]
        samples: list[tuple[float, int]] = []
        done = threading.Event()

        def watch() -> None:
            while not done.wait(0.05):
                ok = stats["converse_ok"]
                if ok and not first_ok:
                    first_ok.append(time.perf_counter())
                if ok != last_ok[1]:
                    last_ok[:] = [time.perf_counter(), ok]
                    samples.append((last_ok[0], ok))

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        started = time.perf_counter()
        submitters = []
        job_ids: list[str] = []
        lock = threading.Lock()

        def submit(index: int, data: bytes) -> None:
            job_id = submit_pdf(svc, data, name=f"doc-{index}.pdf", owner_id=f"bench-{index}")["jobId"]
            with lock:
                job_ids.append(job_id)

        for index, data in enumerate(pdfs):  # all at once, as 23 users uploading together
            thread = threading.Thread(target=submit, args=(index, data))
            thread.start()
            submitters.append(thread)
        for thread in submitters:
            thread.join()
        finals = [wait_for_job(svc, job_id, timeout_s=1800, poll_s=0.5) for job_id in job_ids]
        elapsed = time.perf_counter() - started
        done.set()
        watcher.join()
        lost = failed = 0
        for job_id in job_ids:
            job = job_repo.PgJobs(svc.db).get_job(job_id)
            assert job is not None
            if not job.markdown_key:
                lost += job.total_pages
                continue
            found, failed_here = _pages_in(svc.store.get_bytes(job.markdown_key).decode())
            lost += len(set(range(1, job.total_pages + 1)) - found)
            failed += failed_here
        window_min = max(last_ok[0] - first_ok[0], 1e-9) / 60 if first_ok else float("inf")
        achieved_rpm = (last_ok[1] - 1) / window_min if first_ok else 0.0
        return figure(
            f"ondemand_{len(sizes)}_documents",
            achieved_rpm,
            "requests/min",
            MANY_JOBS_RPM,
            baseline_is="the emulated account quota (throttle_rpm)",
            quota_fraction=round(achieved_rpm / MANY_JOBS_RPM, 4),
            sustained_quota_fraction=round(_sustained_rpm(samples) / MANY_JOBS_RPM, 4),
            pages_lost=lost,
            pages_failed=failed,
            throttled_requests=stats["converse_throttled"],
            accepted_requests=stats["converse_ok"],
            documents=len(sizes),
            pages=sum(sizes),
            jobs_completed=sum(1 for f in finals if f.status == "completed"),
            wall_s=round(elapsed, 1),
            converting_s=round(window_min * 60, 1),
            faults=MANY_JOBS_FAULTS,
            settings=env,
            lambdas=f"job_create and chunk processor in worker processes, {chunks} warm",
        )


def _sustained_rpm(samples: list[tuple[float, int]]) -> float:
    """Accepted requests a minute between the 10th and the 90th percentile of accepted requests
    (leaves out the ramp-up, while the first chunks split their PDFs, and the last stragglers)."""
    if len(samples) < 10:
        return 0.0
    total = samples[-1][1]
    low = next(s for s in samples if s[1] >= total * 0.1)
    high = next(s for s in samples if s[1] >= total * 0.9)
    return (high[1] - low[1]) / max(high[0] - low[0], 1e-9) * 60


NAMES = ("ondemand_20_pages", "ondemand_10_pages", "ondemand_3_pages", "ondemand_23_documents", "ondemand_3_documents")  # full, --quick, --smoke


def figures(args: Any) -> Iterator[dict[str, Any]]:
    logging.getLogger("batchlane").setLevel(logging.ERROR)
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
    small = size(args, 20, 10, 3)
    if wanted(args, f"ondemand_{small}_pages"):
        yield twenty_pages(small)
    low, high, count = size(args, (100, 300, 23), (20, 60, 23), (3, 6, 3))
    if wanted(args, f"ondemand_{count}_documents"):
        yield many_documents([low + (high - low) * i // (count - 1) for i in range(count)])
