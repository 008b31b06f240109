"""`batchlane demo --folder DIR`: a local folder through a folder job on the offline stack, end to end.

Uploads DIR to the offline stack's folder bucket under ``folders/<DIR name>/``, runs a folder
job over it (layout alongside) through the API, then copies the job's output folder (Markdown
next to each PDF, ``_batchlane/<job_id>/`` with the report and manifest) to
``out/<DIR name>/``, the same tree as the bucket's. On a stack `batchlane local up` started
it uses that one, so running the command twice converts nothing the second time (the same
spec is the same job); otherwise it starts and stops a stack of its own.
"""

from __future__ import annotations

import os
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from rich.console import Console

from batchlane.runtime import services
from batchlane_dev.cli.folder_commands import FOLDER_TERMINAL, describe, folder_spec, offline_s3, upload_to_offline_stack
from batchlane_dev.cli.jobs_commands import ApiClient, local_identity
from batchlane_dev.local.bedrock.clock import scale_for_job
from batchlane_dev.local.daemon import find_stack, use_running_stack
from batchlane_dev.local.stack import FOLDER_BUCKET, OfflineStack, StackOptions
from batchlane_dev.report import job_report


def run_folder_demo(
    directory: Path,
    *,
    out_dir: Path = Path("out"),
    workdir: Path | None = None,
    faults: str = "",
    user: str | None = None,
    dry_run: bool = False,
    console: Console | None = None,
) -> dict[str, Any]:
    console = console or Console(stderr=True)
    if not directory.is_dir():
        raise ValueError(f"{directory} is not a folder")
    with ExitStack() as cleanup:
        running, found, _ = find_stack(workdir)
        if running:
            env = use_running_stack(found)["env"]
            console.print(f"using the offline stack of `batchlane local up` ({found})")
        else:
            tmp = cleanup.enter_context(tempfile.TemporaryDirectory(prefix="batchlane-folder-demo-"))
            # The batch clock sized to the folder's pages as `batchlane demo` sizes it to its document: the
            # pool may put them all in one Bedrock job, which must keep its calibrated pace on this machine.
            # No pool window of its own: a folder's files start their window together once it has started
            # its last file (db/lanes.PgLanes.note_pooled), however slowly the uploads and splits run here.
            faults = faults or f"time_scale={scale_for_job(_pages_in(directory)):.0f}"
            stack = cleanup.enter_context(OfflineStack(StackOptions(workdir=Path(tmp), faults=faults)))
            env = stack.env
        api = ApiClient(env["BATCHLANE_API_URL"], f"local:{local_identity(user)}")  # the caller's job: `jobs status fj-…` finds it
        s3 = offline_s3(env)
        uri = upload_to_offline_stack(env, directory, user=api.local_user())  # into the caller's own home
        prefix = uri.removeprefix(f"s3://{FOLDER_BUCKET}/")
        spec = folder_spec(uri, layout=None, output=None, include=(), exclude=(), replace=False)
        if dry_run:
            return api.estimate("/api/v1/folder-jobs?dry_run=true", spec, quiet=True)  # already says dryRun
        started = time.monotonic()
        job = api.call("POST", "/api/v1/folder-jobs", spec)
        console.print(f"folder job {job['id']} over s3://{FOLDER_BUCKET}/{prefix}")
        last = ""
        while not (job["status"] in FOLDER_TERMINAL and job.get("finishedAt")):
            time.sleep(0.5)
            job = api.call("GET", f"/api/v1/folder-jobs/{job['id']}")
            if (line := describe(job)) != last:
                console.print(line)
                last = line
        local = out_dir / directory.resolve().name
        _download(s3, prefix, local)
        return _report(job, local, round(time.monotonic() - started, 2))


def _download(s3: Any, prefix: str, target: Path) -> None:
    """The job's output folder as the bucket holds it: Markdown, report and manifest (not the PDFs)."""
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=FOLDER_BUCKET, Prefix=prefix):
        for item in page.get("Contents", []):
            key = item["Key"]
            if key.lower().endswith(".pdf"):
                continue
            path = target / key[len(prefix) :]
            path.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(FOLDER_BUCKET, key, str(path))


def _pages_in(directory: Path) -> int:
    """The pages of the folder's PDFs, each read under the product's bounds (an unreadable one counts 0: the folder job reports it)."""
    from batchlane_dev.local.demo import page_count

    return sum(page_count(path) for path in directory.rglob("*") if path.is_file() and path.suffix.lower() == ".pdf")


def _pool_lanes(svc: Any, job_ids: list[str]) -> int:
    """The distinct Bedrock jobs (lanes of the pool) that carried any page of the folder's conversions."""
    row = svc.db.one("SELECT count(DISTINCT lane_row_id) AS n FROM batch_members WHERE job_id = ANY(CAST(:ids AS uuid[]))", ids=job_ids)
    return int(row["n"]) if row else 0


def _conversion_ids(folder_jobs: Any, job_id: str) -> list[str]:
    """Every file's conversion job, read through the folder-job repository a page at a time."""
    ids: list[str] = []
    after: str | None = None
    while page := folder_jobs.list_files(job_id, after=after, limit=1000):
        ids += [f.conversion_job_id for f in page if f.conversion_job_id]
        after = page[-1].source_key
    return ids


def _report(job: dict[str, Any], local: Path, seconds: float) -> dict[str, Any]:
    """The JSON the demo prints: files, pages, the batch lane's share and the money, from each file's conversion."""
    svc = services()
    conversion_ids = _conversion_ids(svc.uow().folder_jobs, str(job["id"]))
    reports = [job_report(svc, conversion_id) for conversion_id in conversion_ids]
    total = sum(r["total_cost_usd"] for r in reports)
    all_on_demand = sum(r["all_on_demand_cost_usd"] for r in reports)
    files = job["files"]
    return {
        "job_id": job["id"],
        "status": job["status"],
        "files": {k: files[k] for k in ("discovered", "completed", "failed", "skipped", "excluded")},
        "pages": {"total": sum(r["pages"] for r in reports), "completed": job["pages"]["completed"], "failed": job["pages"]["failed"]},
        "batch": {
            "bedrock_jobs": _pool_lanes(svc, conversion_ids),
            "records": sum(r["batch"]["records"] for r in reports),
            "accepted": sum(r["batch"]["accepted"] for r in reports),
        },
        "total_cost_usd": round(total, 6),
        "all_on_demand_cost_usd": round(all_on_demand, 6),
        "saving_usd": round(all_on_demand - total, 6),  # negative: a loss
        "saving_pct": round((all_on_demand - total) / all_on_demand * 100, 2) if all_on_demand > 0 else 0.0,
        "manifest_path": os.fspath(local / "_batchlane" / job["id"] / "manifest.json"),
        "report_path": os.fspath(local / "_batchlane" / job["id"] / "report.jsonl"),
        "output_dir": os.fspath(local),
        "seconds": seconds,
    }
