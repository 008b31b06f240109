"""Folder-job figures.

``enumerate_100000_objects``: the enumerator (classify + insert + checkpoint, real PostgreSQL)
over 100,000 keys served page by page (1,000 a page) by an in-memory lister, against the
bare listing of the same pages: objects listed and queued per second, and peak Python memory
(tracemalloc), which must not grow with the folder. S3's own ListObjectsV2 latency is not in
it (moto's in-memory S3 would measure moto, not S3).

``folder_1000_files``: 1,000 generated PDFs of 1–40 pages in nested folders through a folder
job on the offline stack, end to end, against ONE single-file conversion of the same total
pages in the same run: the difference per file is the folder job's overhead (enumeration,
queueing, per-file intake, report).
"""

from __future__ import annotations

import functools
import random
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from batchlane.ports import ListedPage
from batchlane_dev.bench import figure, size, wanted

NAMES = (
    "enumerate_100000_objects",
    "enumerate_10000_objects",
    "enumerate_2000_objects",
    "folder_1000_files",
    "folder_50_files",
    "folder_3_files",
    *(f"folder_growth_{n}_files" for n in (5, 10, 100, 1000, 10_000)),
)
GROWTH_SIZES = (5, 10, 100, 1000, 10_000)


class _GeneratedFolder:
    """A folder of ``count`` keys (nested, 1 in 10 not a PDF), listed 1,000 at a time; nothing held but the page."""

    def __init__(self, count: int) -> None:
        self.count = count

    def list_page(self, bucket: str, prefix: str, *, token: str | None, recursive: bool, max_keys: int) -> ListedPage:
        start = int(token or 0)
        end = min(start + max_keys, self.count)
        objects = [(f"{prefix}{i % 97:02d}/{i % 13:02d}/doc-{i:07d}.{'txt' if i % 10 == 9 else 'pdf'}", 1000 + i) for i in range(start, end)]
        return ListedPage(objects, str(end) if end < self.count else None)

    def list_keys(self, bucket: str, prefix: str) -> list[str]:
        return []

    def head(self, bucket: str, key: str) -> None:
        return None  # no earlier report: nothing written yet

    def iter_lines(self, bucket: str, key: str) -> Iterator[bytes]:
        from batchlane.domain.errors import NotFound

        raise NotFound(key)


def _enumerate(count: int) -> Iterator[dict[str, Any]]:
    from batchlane.config import Settings
    from batchlane.db import Database, connect_params_from_url
    from batchlane.db.migrate import migrate
    from batchlane.db.uow import PgUnitOfWork
    from batchlane.folders.enumerate import enumerate_step
    from batchlane.folders.spec import folder_job_id, parse_spec
    from batchlane_dev.local import postgres

    lister = _GeneratedFolder(count)
    started = time.perf_counter()
    token: str | None = None
    listed = 0
    while True:
        page = lister.list_page("b", "in/", token=token, recursive=True, max_keys=1000)
        listed += len(page.objects)
        token = page.next_token
        if token is None:
            break
    baseline = listed / (time.perf_counter() - started)

    with tempfile.TemporaryDirectory(prefix="bench-folders-") as tmp:
        server, url = postgres.start(Path(tmp) / "pgdata")
        db = Database(connect_params_from_url(url))
        try:
            migrate(db)
            spec = parse_spec({"input": {"folder": "s3://b/in/"}})
            job_id = folder_job_id(spec, "bench")
            uow, settings = PgUnitOfWork(db), Settings(batchlane_folder_list_pages_per_step=10)
            uow.folder_jobs.add(job_id=job_id, owner_id="bench", name=None, spec=spec.model_dump(mode="json"), source=("b", "in/"), target=("b", "in/"))
            bus = SimpleNamespace(publish=lambda detail_type, detail: None)  # the job's "listed" event goes nowhere here
            tracemalloc.start()
            started = time.perf_counter()
            while not enumerate_step(uow, lambda owner_id: lister, bus, settings, job_id)["enumerationDone"]:  # type: ignore[arg-type, return-value]
                pass
            seconds = time.perf_counter() - started
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            counts = uow.folder_jobs.counts(job_id)
            excluded = uow.folder_jobs.get(job_id).excluded_count  # type: ignore[union-attr]
        finally:
            db.close()
            postgres.stop(server, Path(tmp) / "pgdata")
    rate = count / seconds
    yield figure(
        f"enumerate_{count}_objects",
        rate,
        "objects/s",
        baseline,
        baseline_is="the bare listing of the same pages (no classification, no insert)",
        files_queued=counts.queued,
        excluded_not_pdf=excluded,
        seconds=round(seconds, 2),
        peak_python_memory_mb=round(peak / 1e6, 2),
        s3="in-memory lister (1,000 keys a page): S3 latency not included",
    )


def _folder(files: int) -> Iterator[dict[str, Any]]:
    import boto3

    from batchlane.folders import usecases
    from batchlane.runtime import services
    from batchlane_dev.local.jobs import submit_pdf, wait_for_job, wait_until
    from batchlane_dev.local.pdfgen import make_pdf
    from batchlane_dev.local.stack import FOLDER_BUCKET, REGION, OfflineStack, StackOptions

    rng = random.Random(files)
    sizes = [rng.randint(1, 40) for _ in range(files)]
    with tempfile.TemporaryDirectory(prefix="bench-folder-") as tmp:
        # The baseline converts all the folder's pages as one file: past the default page and live-page caps and, at
        # list prices, past the default monthly budget; the bench measures speed, so those limits are lifted for both.
        limits = {"BATCHLANE_MAX_PAGES": "50000", "BATCHLANE_MAX_LIVE_PAGES": "1000000", "BATCHLANE_BUDGET_USD_PER_MONTH": "1000000"}
        options = StackOptions(workdir=Path(tmp), faults="time_scale=36000", batch_lane=False, extra_env={"BATCHLANE_FOLDER_MAX_IN_FLIGHT": "50", **limits})
        with OfflineStack(options) as stack:
            svc = services()
            started = time.perf_counter()
            single = submit_pdf(svc, make_pdf(sum(sizes)), name="all.pdf", owner_id="bench")
            single_done = wait_for_job(svc, single["jobId"], timeout_s=7200)
            baseline = time.perf_counter() - started
            if single_done.status != "completed":
                raise RuntimeError(f"the baseline conversion ended {single_done.status}: no baseline to compare with")

            s3 = boto3.client("s3", endpoint_url=stack.env["AWS_ENDPOINT_URL"], region_name=REGION)
            for i, pages in enumerate(sizes):
                s3.put_object(Bucket=FOLDER_BUCKET, Key=f"users/bench/{i % 10}/{i % 7}/doc-{i:04d}.pdf", Body=make_pdf(pages))
            started = time.perf_counter()
            job, _ = usecases.submit(svc, "bench", {"input": {"folder": f"s3://{FOLDER_BUCKET}/users/bench/"}})
            wait_until(lambda: _finished(svc, job["id"]), timeout_s=7200, poll_s=1, what="the folder job")
            seconds = time.perf_counter() - started
            done = usecases.status(svc, "bench", job["id"])
            failures = Counter(f["error_id"] for f in usecases.files(svc, "bench", job["id"], status_filter="failed")["files"])
    yield figure(
        f"folder_{files}_files",
        seconds,
        "s",
        baseline,
        baseline_is=f"one single-file conversion of the same {sum(sizes)} pages in the same run",
        files=files,
        pages=sum(sizes),
        completed=done["files"]["completed"],
        failed=done["files"]["failed"],
        failed_by_error=dict(failures),
        overhead_per_file_s=round((seconds - baseline) / files, 4),
    )


class _StatementCounter:
    """Counts every SQL statement the process sends (pg8000's ``Connection.run``: the handlers run in this process)."""

    def __init__(self) -> None:
        import itertools

        import pg8000.native

        self._count = itertools.count()
        self._seen = 0
        self._class = pg8000.native.Connection
        self._original = self._class.run
        counter = self._count
        original = self._original

        def run(con: Any, *args: Any, **kwargs: Any) -> Any:
            next(counter)
            return original(con, *args, **kwargs)

        self._class.run = run  # type: ignore[method-assign]

    def read(self) -> int:
        """Statements since the last read."""
        total = next(self._count)  # itertools.count has no peek: this read counts itself, taken off below
        seen, self._seen = self._seen, total + 1
        return total - seen

    def close(self) -> None:
        self._class.run = self._original  # type: ignore[method-assign]


def _finished(svc: Any, job_id: str) -> bool:
    row = svc.uow().folder_jobs.get(job_id)
    return row is not None and row.finished_at is not None


def _growth(sizes: tuple[int, ...]) -> Iterator[dict[str, Any]]:
    """Wall time and SQL statements per file for folders of each size (one page a file: the folder job's own
    cost, not the conversion's), against ONE single-file conversion of a one-page file in the same stack."""
    import boto3

    from batchlane.folders import usecases
    from batchlane.runtime import services
    from batchlane_dev.local.jobs import submit_pdf, wait_for_job, wait_until
    from batchlane_dev.local.pdfgen import make_pdf
    from batchlane_dev.local.stack import FOLDER_BUCKET, REGION, OfflineStack, StackOptions, owner_home

    page = make_pdf(1)
    counter = _StatementCounter()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-growth-") as tmp:
            options = StackOptions(workdir=Path(tmp), faults="time_scale=36000", batch_lane=False, extra_env={"BATCHLANE_FOLDER_MAX_IN_FLIGHT": "50"})
            with OfflineStack(options) as stack:
                svc = services()
                counter.read()
                started = time.perf_counter()
                single = submit_pdf(svc, page, name="one.pdf", owner_id="bench")
                if wait_for_job(svc, single["jobId"], timeout_s=600).status != "completed":
                    raise RuntimeError("the one-file baseline did not complete")
                single_s, single_statements = time.perf_counter() - started, counter.read()
                s3 = boto3.client("s3", endpoint_url=stack.env["AWS_ENDPOINT_URL"], region_name=REGION)
                for files in sizes:
                    prefix = f"{owner_home('bench')}growth-{files}/"
                    for i in range(files):
                        s3.put_object(Bucket=FOLDER_BUCKET, Key=f"{prefix}{i % 10}/doc-{i:05d}.pdf", Body=page)
                    counter.read()
                    started = time.perf_counter()
                    job, _ = usecases.submit(svc, "bench", {"input": {"folder": f"s3://{FOLDER_BUCKET}/{prefix}"}})
                    job_id = job["id"]
                    wait_until(functools.partial(_finished, svc, job_id), timeout_s=14_400, poll_s=1, what="the folder job")
                    seconds, statements = time.perf_counter() - started, counter.read()
                    done = usecases.status(svc, "bench", job_id)
                    yield figure(
                        f"folder_growth_{files}_files",
                        seconds / files,
                        "s/file",
                        single_s,
                        baseline_is="one single-file conversion of the same one-page file in the same stack",
                        files=files,
                        completed=done["files"]["completed"],
                        failed=done["files"]["failed"],
                        statements_per_file=round(statements / files, 1),
                        baseline_statements=single_statements,
                        statements_note="every SQL statement this process sent while the job ran, schedules included",
                        folder_max_in_flight=50,
                    )
    finally:
        counter.close()


def figures(args: Any) -> Iterator[dict[str, Any]]:
    count = size(args, 100_000, 10_000, 2000)
    if wanted(args, f"enumerate_{count}_objects"):
        yield from _enumerate(count)
    files = size(args, 1000, 50, 3)
    if wanted(args, f"folder_{files}_files"):
        yield from _folder(files)
    # 10,000 files is about an hour of one core (docs/benchmarks.md "Folder growth"): --skip folder_growth_10000_files
    growth = size(args, (100, 1000, 10_000), (10, 100), (5,))
    named = tuple(n for n in GROWTH_SIZES if f"folder_growth_{n}_files" in (getattr(args, "only", None) or []))
    growth = tuple(n for n in (named or growth) if f"folder_growth_{n}_files" not in (getattr(args, "skip", None) or []))
    if growth and wanted(args, *(f"folder_growth_{n}_files" for n in growth)):
        yield from _growth(growth)
