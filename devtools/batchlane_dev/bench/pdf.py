"""split_1000_pages: our split (validation + one-page PDFs + blank detection) vs the raw pypdf split."""

from __future__ import annotations

import io
import statistics
import time
from collections.abc import Iterator
from typing import Any

from pypdf import PdfReader, PdfWriter

from batchlane.pdf import open_pdf
from batchlane_dev.bench import figure, size
from batchlane_dev.local.pdfgen import make_pdf


def raw_pypdf_split(data: bytes) -> int:
    reader = PdfReader(io.BytesIO(data))
    count = 0
    for page in reader.pages:
        writer = PdfWriter()
        writer.add_page(page)
        writer.write(io.BytesIO())
        count += 1
    return count


def our_split(data: bytes, pages_per_chunk: int = 50) -> int:
    document = open_pdf(data, max_pages=100_000)
    return sum(1 for span in document.chunks(pages_per_chunk) for _ in document.pages(span))


def _median_time(fn: Any, *args: Any, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


NAMES = ("split_1000_pages", "split_200_pages", "split_20_pages")  # what figures() yields (full, --quick, --smoke sizes)


def figures(args: Any) -> Iterator[dict[str, Any]]:
    pages = size(args, 1000, 200, 20)
    data = make_pdf(pages, blank_every=25, lines_per_page=30)
    assert our_split(data) == raw_pypdf_split(data) == pages
    baseline = _median_time(raw_pypdf_split, data)
    value = _median_time(our_split, data)
    yield figure(f"split_{pages}_pages", value, "s", baseline, baseline_is="raw pypdf split of the same file", pages=pages, pdf_bytes=len(data))
