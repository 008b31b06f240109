"""Real-book figures: split_real_book and prepare_real_book, in pages/s (ratio = speed-up).

The book, where it comes from and what is measured: docs/benchmarks.md "Module notes".
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batchlane_dev.bench import figure, size, wanted
from batchlane_dev.bench.pdf import raw_pypdf_split


@dataclass(frozen=True)
class RealBook:
    package: str
    version: str
    member: str  # the PDF's path inside the .deb
    sha256: str
    licence: str

    @property
    def file_name(self) -> str:
        return f"{Path(self.member).stem}-{self.version}.pdf"


PGF_MANUAL = RealBook(
    package="texlive-pictures-doc",
    version="2022.20230122-3",  # Debian 12 (bookworm)
    member="./usr/share/doc/texlive-doc/generic/pgf/pgfmanual.pdf",
    sha256="ac16c575526ff7038733ef7cbe86a0570b0ee9cc077af9d4ae468b7a6eaf0fc7",
    licence="GNU FDL 1.2 or LPPL 1.3c (the PGF manual, Till Tantau et al.)",
)

NAMES = ("split_real_book", "prepare_real_book")
# The lane's prepare children at a time on this machine: its 2 cores (the Map allows 8, each a Lambda of its own).
PREPARE_WORKERS = 2


class BookUnavailable(RuntimeError):
    pass


def cache_dir() -> Path:
    return Path(os.environ.get("BATCHLANE_BENCH_CACHE") or Path.home() / ".cache" / "batchlane" / "bench")


def real_book(book: RealBook = PGF_MANUAL) -> Path:
    """The book's PDF on disk: from the cache, else fetched with apt-get download + dpkg-deb and checked."""
    override = os.environ.get("BATCHLANE_REAL_BOOK")
    if override:
        return Path(override)
    target = cache_dir() / book.file_name
    if target.exists() and _sha256(target) == book.sha256:
        return target
    missing = [tool for tool in ("apt-get", "dpkg-deb") if shutil.which(tool) is None]
    if missing:
        raise BookUnavailable(
            f"the real-book figures need {book.package}={book.version} from Debian, fetched with apt-get download and dpkg-deb; "
            f"{', '.join(missing)} not found on this machine. Set BATCHLANE_REAL_BOOK=/path/to/a/book.pdf to use another PDF."
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as workdir:
        download = subprocess.run(["apt-get", "download", f"{book.package}={book.version}"], cwd=workdir, capture_output=True, text=True)
        debs = list(Path(workdir).glob("*.deb"))
        if download.returncode != 0 or not debs:
            raise BookUnavailable(
                f"apt-get download {book.package}={book.version} failed ({download.stderr.strip()[-300:]}). "
                "Run `apt-get update` first, or set BATCHLANE_REAL_BOOK=/path/to/a/book.pdf."
            )
        partial = Path(workdir) / "book.pdf"
        with partial.open("wb") as out:
            tar_stream = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(debs[0])], stdout=subprocess.PIPE)
            assert tar_stream.stdout is not None
            subprocess.run(["tar", "-xO", book.member], stdin=tar_stream.stdout, stdout=out, check=True)
            tar_stream.stdout.close()
            tar_stream.wait()
        if _sha256(partial) != book.sha256:
            raise BookUnavailable(f"{book.member} from {book.package}={book.version} does not have the expected SHA-256")
        partial.replace(target)
    return target


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def job_creation_split(data: bytes, pages_per_chunk: int = 50) -> int:
    """What job creation does to the file before anything else: validate it, write one PDF per chunk."""
    from batchlane.pdf import open_pdf

    document = open_pdf(data, max_pages=100_000)
    return sum(len(document.chunk_pdf(span)) for span in document.chunks(pages_per_chunk))


def prepare_split(data: bytes, pages_per_chunk: int = 50) -> tuple[int, float, float]:
    """The per-page split of prepare alone, with the size fit: (pages, wall s, CPU s); chunk PDFs made first, outside the clock."""
    from batchlane.pdf import open_chunk, open_pdf
    from batchlane.pdf.fit import fit

    document = open_pdf(data, max_pages=100_000)
    sources = [(span, document.chunk_pdf(span)) for span in document.chunks(pages_per_chunk)]
    started, cpu = time.perf_counter(), time.process_time()
    count = sum(1 for span, chunk in sources for _ in map(fit, open_chunk(chunk, span).pages(span)))
    return count, time.perf_counter() - started, time.process_time() - cpu


def _excerpt(data: bytes, pages: int) -> bytes:
    """The first ``pages`` pages (for --quick), written by pdfium."""
    from batchlane.pdf import ChunkSpan, open_pdf

    return open_pdf(data, max_pages=100_000).chunk_pdf(ChunkSpan(0, 1, pages))


def _baseline(data: bytes, pages: int) -> dict[str, Any]:
    """The raw pypdf split, timed by the wall clock and by this process's CPU clock."""
    started, cpu = time.perf_counter(), time.process_time()
    assert raw_pypdf_split(data) == pages
    wall_s, cpu_s = time.perf_counter() - started, time.process_time() - cpu
    return {"pages_per_s": pages / wall_s, "baseline_cpu_pages_per_s": round(pages / cpu_s, 1), "baseline_s": round(wall_s, 1)}


def figures(args: Any) -> Iterator[dict[str, Any]]:
    """Each figure right after its own baseline: on a shared machine the load moves within minutes.
    ``value`` and ``ratio`` are wall-clock pages/s; ``cpu_ratio`` compares CPU time (what load disturbs least)."""
    from batchlane.pdf import open_pdf
    from batchlane_dev.bench.batch import _quiet, run_prepares

    _quiet()
    try:
        path = real_book()
    except BookUnavailable as exc:
        raise SystemExit(f"bench real-book figures: {exc}") from exc
    data = path.read_bytes()
    excerpt = size(args, None, 200, 20)
    if excerpt:
        data = _excerpt(data, excerpt)
    pages = open_pdf(data, max_pages=100_000).page_count
    common = {
        "book": path.name,
        "pages": pages,
        "pdf_mb": round(len(data) / 2**20, 1),
        "licence": PGF_MANUAL.licence if path.name == PGF_MANUAL.file_name else None,
    }
    baseline_is = "raw pypdf split of the same file (open, then one one-page PDF per page), pages/s"
    aim = "value >= 350 and ratio >= 4"
    if wanted(args, "split_real_book"):
        base = _baseline(data, pages)
        runs = []
        for _ in range(3):
            started, cpu = time.perf_counter(), time.process_time()
            chunk_bytes = job_creation_split(data)
            runs.append((time.perf_counter() - started, time.process_time() - cpu))
        wall, cpu_s = sorted(runs)[1]  # the median run
        yield figure(
            "split_real_book",
            pages / wall,
            "pages/s",
            base.pop("pages_per_s"),
            baseline_is=baseline_is,
            **common,
            seconds=round(wall, 3),
            cpu_pages_per_s=round(pages / cpu_s, 1),
            cpu_ratio=round(pages / cpu_s / base["baseline_cpu_pages_per_s"], 2),
            **base,
            chunk_pdfs_mb=round(chunk_bytes / 2**20, 1),
            load_average=round(os.getloadavg()[0], 1),
            aim=aim,
        )
    if wanted(args, "prepare_real_book"):
        base = _baseline(data, pages)
        count, split_s, split_cpu_s = prepare_split(data)
        assert count == pages
        # batch_prepare in worker processes (Lambda environments; moto and the emulator stay in this process,
        # another machine on AWS), its chunk steps PREPARE_WORKERS at a time as the lane's Map runs them; then
        # one worker (what one Lambda's vCPU does), and the old in-process run (everything under one GIL).
        run, one, in_process = run_prepares(data, (PREPARE_WORKERS, 1, 0))
        yield figure(
            "prepare_real_book",
            pages / run["prepare_s"],
            "pages/s",
            base.pop("pages_per_s"),
            baseline_is=baseline_is,
            **common,
            seconds=round(run["prepare_s"], 3),
            cpu_pages_per_s=round(pages / run["prepare_cpu_s"], 1),
            cpu_ratio=round(pages / run["prepare_cpu_s"] / base["baseline_cpu_pages_per_s"], 2),
            **base,
            records=run["records"],
            chunks=run["chunks"],
            decision=run["decision"],
            input_mb=round((run["input_bytes"] or 0) / 2**20, 1),
            workers=run["workers"],
            emulator_cpu_s=round(run["emulator_cpu_s"], 1),
            one_worker_pages_per_s=round(pages / one["prepare_s"], 1),
            one_worker_cpu_pages_per_s=round(pages / one["prepare_cpu_s"], 1),
            in_process_pages_per_s=round(pages / in_process["prepare_s"], 1),
            in_process_cpu_pages_per_s=round(pages / in_process["prepare_cpu_s"], 1),
            split_pages_per_s=round(pages / split_s, 1),
            split_cpu_pages_per_s=round(pages / split_cpu_s, 1),
            load_average=round(os.getloadavg()[0], 1),
            aim=aim,
        )
