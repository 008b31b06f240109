"""demo_1200_pages: the whole offline demo (stack up, convert, report, stack down).

Baseline: the same pages through the on-demand lane only, in the same run — so the ratio
says what the batch lane's detour (prepare, batch job, collect, primed chunks) costs in
wall-clock time offline.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console

from batchlane_dev.bench import figure, size
from batchlane_dev.local.demo import run_demo


def _run(pages: int, *, batch_lane: bool) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        report = run_demo(
            pages=pages, out_dir=Path(out), batch_lane=batch_lane, database_url=os.environ.get("DATABASE_URL"), console=Console(file=open(os.devnull, "w"))
        )
    return time.perf_counter() - started, report


NAMES = ("demo_1200_pages", "demo_300_pages", "demo_60_pages")  # what figures() yields (full, --quick and --smoke sizes)


def figures(args: Any) -> Iterator[dict[str, Any]]:
    logging.getLogger("batchlane").setLevel(logging.ERROR)
    pages = size(args, 1200, 300, 60)
    baseline, base_report = _run(pages, batch_lane=False)
    value, report = _run(pages, batch_lane=True)
    yield figure(
        f"demo_{pages}_pages",
        value,
        "s",
        baseline,
        baseline_is="same pages, on-demand lane only",
        status=report["status"],
        pages_failed=report["pages_failed"],
        saving_pct=report["saving_pct"],
        baseline_status=base_report["status"],
    )
