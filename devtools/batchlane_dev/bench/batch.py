"""Batch-lane figures: prepare_1000_pages, collect_50000_records, event_to_resume.

* prepare_1000_pages — the whole prepare (every chunk's capture + JSONL shards to S3, then
  the manifest), run serially in one process against the offline stack's S3; baseline:
  the raw pypdf split of the same file. Aim: ratio ≤ 3.
* collect_50000_records — the collector's streaming read + join + spool + results of
  50,000 output records (10 .jsonl.out files, about 2 KB of Markdown each); baseline: a
  bare ``json.loads`` of every line of the same files. Both run in a child process so
  ``peak_rss_mb`` is the collector's own (the emulated S3 holds the data in the parent).
  Aim: peak_rss_mb ≤ 512.
* event_to_resume — median seconds from the terminal Bedrock event (first terminal status
  recorded on the lane) to the job back in pending, over several jobs in the
  offline stack. Baseline: 300 s, the 5-minute poll the push replaces (nominal, not
  measured: a poller finds a finished job after half its interval on average, so 300 s
  is its worst case and 150 s its mean).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from batchlane_dev.bench import figure, size, wanted
from batchlane_dev.bench.pdf import raw_pypdf_split

LANE_ENV = {"BATCH_CONVERSION_MIN_PAGES": "40", "BATCH_CONVERSION_MIN_RECORDS": "10", "BATCHLANE_PAGES_PER_CHUNK": "50"}


def _quiet() -> None:
    import logging

    logging.getLogger("batchlane").setLevel(logging.ERROR)
    os.environ["POWERTOOLS_LOG_LEVEL"] = "ERROR"


def prepare_figure(pages: int) -> dict[str, Any]:
    from batchlane_dev.local.pdfgen import make_pdf

    data = make_pdf(pages, blank_every=25, lines_per_page=30)
    baseline = min(_timed(raw_pypdf_split, data) for _ in range(2))
    run = run_prepare(data)
    return figure(
        f"prepare_{pages}_pages",
        run["prepare_s"],
        "s",
        baseline,
        baseline_is="raw pypdf split of the same file",
        records=run["records"],
        chunks=run["chunks"],
        decision=run["decision"],
        chunk_sources_s=round(run["chunk_sources_s"], 3),
        chunk_sources_note="split into chunk PDFs at job creation, not part of prepare",
    )


def run_prepare(data: bytes, *, workers: int = 0) -> dict[str, Any]:
    """Create a job for ``data`` in the offline stack, then time the whole prepare (every chunk, then the manifest).
    ``workers``: see :func:`run_prepares`."""
    return run_prepares(data, (workers,))[0]


def run_prepares(data: bytes, modes: tuple[int, ...]) -> list[dict[str, Any]]:
    """One prepare of ``data`` per mode, each of a job of its own, in one offline stack.

    Mode 0: every chunk serially in this process, beside moto and the Bedrock emulator (their request
    handling then takes this process's CPU and GIL too). Mode N: ``batch_prepare`` invoked in warm worker
    processes (Lambda execution environments, lambda_runtime.WorkerPool), its chunk steps N at a time as the
    lane's Map runs its children; moto stays in this process, as on AWS S3 is another machine.
    ``prepare_cpu_s`` is then the workers' CPU, ``emulator_cpu_s`` this process's."""
    from batchlane import keys
    from batchlane.batch.prepare import finish_prepare, prepare_chunk
    from batchlane.db import lanes as rows
    from batchlane.filejob.source import store_chunk_sources
    from batchlane.pdf import open_pdf
    from batchlane.runtime import services
    from batchlane_dev.local.jobs import submit_pdf
    from batchlane_dev.local.lambda_runtime import Invocation
    from batchlane_dev.local.stack import OfflineStack, StackOptions

    results = []
    for workers in modes:  # a stack each: a second job of the same file in one stack is not prepared as the first
        with tempfile.TemporaryDirectory() as workdir:
            options = StackOptions(workdir=Path(workdir), faults="time_scale=36000", database_url=os.environ.get("DATABASE_URL"), extra_env=LANE_ENV)
            options.schedule_speedup = 1e-6  # nothing runs but what we call
            if workers:
                options.process_functions = frozenset({"batch_prepare"})
                options.max_workers = options.warm_workers = workers
            with OfflineStack(options) as stack:
                # Keep the real lane out of the way: this figure drives prepare by hand.
                stack.registry.intercept("batch_packer", lambda event, call_real: Invocation(result={"claimed": []}))
                svc = services()
                pids = sorted(stack.registry.workers._executor()._processes) if stack.registry.workers else []  # type: ignore[attr-defined]
                job_id = submit_pdf(svc, data, name="bench.pdf", owner_id="bench")["jobId"]
                found = svc.db.run(
                    "SELECT chunk_index, last_page - first_page + 1 AS pages FROM chunk_jobs WHERE job_id = CAST(:id AS uuid) ORDER BY 1", id=job_id
                )
                chunks = [c["chunk_index"] for c in found]
                lane_id = str(uuid.uuid4())
                lane = [(job_id, int(c["chunk_index"]), int(c["pages"])) for c in found]
                rows.PgLanes(svc.db).insert_lane(lane_id=lane_id, model_id=svc.settings.batchlane_model_id, deadline_hours=26, chunks=lane)
                worker_cpu = _cpu_of(pids)
                started, cpu_started = time.perf_counter(), time.process_time()
                if workers:
                    records, decision = _prepare_in_workers(stack, lane_id, workers)
                else:
                    records = sum(prepare_chunk(svc, lane_id, job_id, index, "m0")["records"] for index in chunks)
                    decision = finish_prepare(svc, lane_id)
                prepare_s, own_cpu_s = time.perf_counter() - started, time.process_time() - cpu_started
                if decision.get("action") != "submit":
                    raise RuntimeError(f"prepare with {workers} workers decided {decision}")
                results.append(
                    {
                        "prepare_s": prepare_s,
                        "prepare_cpu_s": _cpu_of(pids) - worker_cpu if workers else own_cpu_s,
                        "emulator_cpu_s": own_cpu_s if workers else None,
                        "workers": workers,
                        "records": records,
                        "chunks": len(chunks),
                        "decision": decision["action"],
                        "input_bytes": svc.store.get_json(keys.batch_manifest_key(lane_id))["inputBytes"],
                    }
                )
                # Job creation split the PDF into chunk PDFs before prepare ran: time that too.
                started = time.perf_counter()
                document = open_pdf(data, max_pages=100_000)
                store_chunk_sources(svc.store, "bench-chunk-sources", document, document.chunks(svc.settings.batchlane_pages_per_chunk))
                results[-1]["chunk_sources_s"] = time.perf_counter() - started
    return results


def _prepare_in_workers(stack: Any, lane_id: str, workers: int) -> tuple[int, dict[str, Any]]:
    """The lane's prepare as its state machine runs it (plan, the chunk steps ``workers`` at a time, finish),
    each step a ``batch_prepare`` invocation; a step that fails fails the figure."""
    from concurrent.futures import ThreadPoolExecutor

    def step(event: dict[str, Any]) -> dict[str, Any]:
        answer = stack.registry.invoke("batch_prepare", {"laneId": lane_id, **event})
        if answer.error_type:
            raise RuntimeError(f"batch_prepare {event}: {answer.error_type}: {answer.error_message}")
        return answer.result  # type: ignore[no-any-return]

    plan = step({"step": "plan"})
    with ThreadPoolExecutor(workers) as pool:
        records = sum(r["records"] for r in pool.map(lambda group: step({"step": "chunk", "group": group}), plan["chunks"]))
    return records, step({"step": "finish"})


def _cpu_of(pids: list[int]) -> float:
    """User + system CPU seconds of these (live) processes, from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of the line)
    return total / ticks


def _timed(fn: Any, *args: Any) -> float:
    started = time.perf_counter()
    fn(*args)
    return time.perf_counter() - started


# -- collect ---------------------------------------------------------------------------
_CHILD = r"""
import json, os, sys, tempfile, time
from pathlib import Path
from batchlane.aws.clients import client
from batchlane.aws.s3 import S3Store
mode, bucket, prefix, manifest_key, where = sys.argv[1:6]
store = S3Store(client("s3"), bucket)
keys = sorted(k for k in store.list_keys(prefix) if k.endswith(".jsonl.out"))
if where == "memory":  # the same objects, copied before the clock to a store where a request costs nothing
    class MemoryStore:
        bucket = bucket
        def __init__(self, objects): self.objects = objects
        def get_bytes(self, key): return self.objects[key]
        def get_json(self, key): return json.loads(self.objects[key])
        def iter_lines(self, key): return iter(self.objects[key].splitlines())
        def put_bytes(self, key, data, content_type="application/octet-stream"): self.objects[key] = bytes(data)
    store = MemoryStore({key: store.get_bytes(key) for key in [*keys, manifest_key]})
if mode != "baseline":  # imported before the clock: the baseline imports nothing either (a Lambda pays it once, at init)
    from batchlane.batch.collect import LaneManifest, collect_outputs
profile = None
if os.environ.get("BATCHLANE_BENCH_PROFILE"):  # cProfile the timed part; the top 25 by cumulative time go to stderr
    import cProfile
    profile = cProfile.Profile()
    profile.enable()
started = time.perf_counter()
if mode == "baseline":
    n = 0
    for key in keys:
        for line in store.get_bytes(key).splitlines():
            json.loads(line); n += 1
    out = {"records": n}
else:
    manifest = LaneManifest.of(store.get_json(manifest_key))
    targets = [(tag, job, int(c)) for tag, job in manifest.members.items() for c in manifest.chunks.get(tag, {})]
    with tempfile.TemporaryDirectory() as spool:
        tally = collect_outputs(store, keys, manifest=manifest, targets=targets, spool_dir=Path(spool))  # what batch.collect runs
    out = {"records": tally.seen, "accepted": tally.counts["accepted"]}
out["seconds"] = time.perf_counter() - started
if profile is not None:
    import pstats
    profile.disable()
    pstats.Stats(profile, stream=sys.stderr).sort_stats("tottime").print_stats(25)
# VmHWM (peak resident set) of this process alone; ru_maxrss would include the parent's
# high-water mark inherited across fork.
out["peak_rss_mb"] = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) / 1024
print(json.dumps(out))
"""


def collect_figure(records: int, files: int = 10) -> dict[str, Any]:
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    from batchlane_dev.local.stack import _free_port

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request on stderr: the server's cost, not collect's
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "AWS_ENDPOINT_URL": url, "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1"}
        s3 = boto3.client("s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id="bench", aws_secret_access_key="bench")
        bucket, job_id = "bench", "00000000-0000-0000-0000-000000000050"
        s3.create_bucket(Bucket=bucket)
        prefix = f"batch/{job_id}/output/benchjob/"
        hashes: dict[str, str] = {}
        chunks: dict[str, list[str]] = {}
        per_file = records // files
        text = ("## A heading\n\n" + "Some converted Markdown text with a table | a | b |\n" * 36)[:2000]
        for f in range(files):
            lines = []
            for i in range(per_file):
                page = f * per_file + i + 1
                record_id = f"c{(page - 1) // 50}-p{page}"
                hashes[record_id] = "h" * 64
                chunks.setdefault(str((page - 1) // 50), []).append(record_id)
                output = {
                    "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
                    "stopReason": "end_turn",
                    "usage": {"inputTokens": 1600, "outputTokens": 500},
                }
                lines.append(json.dumps({"recordId": record_id, "modelInput": {"messages": []}, "modelOutput": output}))
            s3.put_object(Bucket=bucket, Key=f"{prefix}shard-{f:04d}.jsonl.out", Body="\n".join(lines).encode())
        manifest_key = f"batch/{job_id}/manifest.json"
        s3.put_object(Bucket=bucket, Key=manifest_key, Body=json.dumps({"jobId": job_id, "modelId": "m", "promptHashes": hashes, "chunks": chunks}).encode())
        runs = {}
        for where in ("memory", "s3"):
            for mode in ("baseline", "collect"):
                result = subprocess.run(
                    [sys.executable, "-c", _CHILD, mode, bucket, prefix, manifest_key, where], env=env, capture_output=True, text=True, check=True
                )
                if os.environ.get("BATCHLANE_BENCH_PROFILE"):
                    print(f"--- cProfile of {mode} ({where})", result.stderr, sep="\n", file=sys.stderr)
                runs[f"{mode}_{where}"] = json.loads(result.stdout.strip().splitlines()[-1])
            assert runs[f"collect_{where}"]["accepted"] == runs[f"baseline_{where}"]["records"] == records
    finally:
        server.stop()
    moto_ratio = runs["collect_s3"]["seconds"] / runs["baseline_s3"]["seconds"]
    return figure(
        f"collect_{records}_records",
        runs["collect_memory"]["seconds"],
        "s",
        runs["baseline_memory"]["seconds"],
        baseline_is="bare json.loads of every line of the same files; both from the same in-memory copy (moto's S3 figures beside)",
        peak_rss_mb=round(runs["collect_s3"]["peak_rss_mb"], 1),
        baseline_peak_rss_mb=round(runs["baseline_s3"]["peak_rss_mb"], 1),
        peak_rss_is="streaming from moto's S3 (the in-memory runs hold every file)",
        moto_s3_seconds=round(runs["collect_s3"]["seconds"], 3),
        moto_s3_baseline_seconds=round(runs["baseline_s3"]["seconds"], 3),
        moto_s3_ratio=round(moto_ratio, 2),
        files=files,
        results_objects=len({(page - 1) // 50 for page in range(1, records + 1)}),
        aim="ratio <= 3, peak_rss_mb <= 512",
    )


def event_to_resume_figure(jobs: int) -> dict[str, Any]:
    from batchlane.runtime import services
    from batchlane_dev.local.jobs import submit_pdf, wait_for_job
    from batchlane_dev.local.pdfgen import make_pdf
    from batchlane_dev.local.stack import OfflineStack, StackOptions
    from batchlane_dev.report import job_report

    samples = []
    with tempfile.TemporaryDirectory() as workdir:
        options = StackOptions(workdir=Path(workdir), faults="time_scale=36000,job_hours=0.5", database_url=os.environ.get("DATABASE_URL"), extra_env=LANE_ENV)
        with OfflineStack(options):
            svc = services()
            data = make_pdf(60)
            for _ in range(jobs):
                job_id = submit_pdf(svc, data, name="bench.pdf", owner_id="bench")["jobId"]
                wait_for_job(svc, job_id, timeout_s=300)
                seconds = job_report(svc, job_id)["timings"]["event_to_resume_s"]
                if seconds is not None:
                    samples.append(seconds)
    return figure(
        "event_to_resume",
        statistics.median(samples),
        "s",
        300.0,
        baseline_is="nominal 5-minute poll interval the push replaces (not measured)",
        samples=len(samples),
        max_s=max(samples),
    )


NAMES = (
    "prepare_1000_pages",
    "prepare_200_pages",
    "collect_50000_records",
    "collect_5000_records",
    "prepare_50_pages",
    "collect_500_records",
    "event_to_resume",
)  # what figures() yields (full, --quick and --smoke sizes)


def figures(args: Any) -> Iterator[dict[str, Any]]:
    _quiet()
    pages, records = size(args, (1000, 50_000), (200, 5000), (50, 500))
    if wanted(args, f"prepare_{pages}_pages"):
        yield prepare_figure(pages)
    if wanted(args, f"collect_{records}_records"):
        yield collect_figure(records)
    if wanted(args, "event_to_resume"):
        yield event_to_resume_figure(size(args, 7, 3, 1))
