"""formats: how fast each type goes through intake, and what its model calls cost a document (issue 43).

Each real document of tests/data/formats (docling's test files) and a 4-page TIFF scan (pages rendered by
pdfium, frames joined by Pillow) goes through what the split runs for it: ``identify``, then the converter in
the bounded child (pandoc, python-pptx, openpyxl) or, for a picture, the wrap into a PDF of a page per frame.
Per type: documents and pages per second, and the model cost per document: $0 for a born-digital one (no model
call), a picture's pages at the dry run's per-page estimate, on-demand (filejob/estimate.py). The figure's value
is documents per second over the whole set; the baseline is the bounded child doing nothing, measured in the
same run (the floor every document pays: a fork from the fork server and a pipe).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium

from batchlane.claude import ConverterConfig
from batchlane.config import Settings
from batchlane.domain.cost import PriceTable
from batchlane.domain.file_types import FileType
from batchlane.filejob.estimate import PageCounts, expected_usage
from batchlane.formats.convert_document import convert_document
from batchlane.formats.detect import IDENTIFY_BOUND, identify, wrap_image
from batchlane.pdf.bounded import run_bounded
from batchlane_dev.bench import figure, size
from batchlane_dev.local.pdfgen import make_pdf

DATA = Path(__file__).resolve().parents[3] / "tests" / "data" / "formats"
NAMES = ("formats",)


def _tiff(path: Path, pages: int) -> Path:
    document = pdfium.PdfDocument(make_pdf(pages))
    frames = [document[k].render(scale=150 / 72).to_pil().convert("L") for k in range(pages)]
    frames[0].save(path, save_all=True, append_images=frames[1:], compression="tiff_lzw", dpi=(150, 150))
    return path


def _one(path: Path, scratch: Path) -> tuple[str, int, float]:
    """(type, pages, seconds) of one file through the split's intake."""
    started = time.perf_counter()
    found = identify(path, path.name)
    assert isinstance(found, FileType), found
    if found.is_image:
        data = wrap_image(path, max_pages=5000)
        pages = len(pdfium.PdfDocument(data))
    else:
        pages = len(convert_document(path, found.name, folder="b.images", scratch=scratch, max_pages=5000).sections)
    return found.name, pages, time.perf_counter() - started


def _page_cost(prices: PriceTable, model_id: str, settings: Settings) -> Decimal:
    """The dry run's on-demand estimate for one scanned page (filejob/estimate.py)."""
    scan = PageCounts(pages=1, blank=0, scans=1, text_chars=0)
    return prices.cost(model_id, expected_usage(scan, config=ConverterConfig.from_settings(settings), settings=settings).on_demand)


def figures(args: Any) -> Iterator[dict[str, Any]]:
    repeat = size(args, 3, 1, 1)
    settings = Settings()
    prices = PriceTable(settings.batchlane_prices)
    model_id = settings.batchlane_model_id
    with tempfile.TemporaryDirectory(prefix="bench-formats-") as tmp:
        root = Path(tmp)
        every = sorted(p for p in DATA.iterdir() if p.suffix != ".md")
        one_each = [next(p for p in every if p.suffix == suffix) for suffix in sorted({p.suffix for p in every})]
        files = size(args, every, every, one_each)
        files.append(_tiff(root / "scan.tiff", size(args, 4, 2, 1)))
        floor = statistics.median(_noop_seconds() for _ in range(size(args, 9, 3, 1)))
        per_type: dict[str, dict[str, float]] = {}
        total_s, documents = 0.0, 0
        for path in files:
            runs = []
            for k in range(repeat):
                scratch = root / f"{path.stem}-{k}"
                scratch.mkdir()
                runs.append(_one(path, scratch))
            kind, pages, seconds = runs[0][0], runs[0][1], statistics.median(r[2] for r in runs)
            entry = per_type.setdefault(kind, {"documents": 0, "pages": 0, "seconds": 0.0})
            entry["documents"] += 1
            entry["pages"] += pages
            entry["seconds"] += seconds
            total_s += seconds
            documents += 1
    page_cost = _page_cost(prices, model_id, settings)
    by_type = {
        kind: {
            "documents": int(e["documents"]),
            "pages": int(e["pages"]),
            "documentsPerSecond": round(e["documents"] / e["seconds"], 2),
            "pagesPerSecond": round(e["pages"] / e["seconds"], 2),
            "modelCostUsdPerDocument": "0" if kind not in ("png", "jpeg", "webp", "tiff") else str(page_cost * Decimal(e["pages"]) / Decimal(e["documents"])),
        }
        for kind, e in sorted(per_type.items())
    }
    yield figure(
        "formats",
        documents / total_s,
        "documents/s",
        1 / floor,
        baseline_is="the bounded child doing nothing (a fork and a pipe), a document's floor",
        byType=by_type,
        modelCostBasis=f"born-digital: no model call; a picture's pages at the dry run's on-demand estimate ({model_id})",
    )


def _noop_seconds() -> float:
    started = time.perf_counter()
    run_bounded(len, b"", bound=IDENTIFY_BOUND)
    return time.perf_counter() - started
