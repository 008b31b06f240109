"""Every `make bench` figure still runs: each figure module at its --smoke size (issue 23, point 8).

A figure that rots (a signature changed under it, a renamed setting) fails here, in seconds,
instead of in a newcomer's first `make bench`. What is asserted is only that each figure prints
a well-formed result with a measured value and baseline; the sizes are too small to judge speed.
"""

from __future__ import annotations

import importlib
import json
import math
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest

from batchlane_dev.bench.__main__ import FIGURE_MODULES
from tests.conftest import forget_everything

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def smoke_book(tmp_path, monkeypatch):
    """The real-book figures read BATCHLANE_REAL_BOOK: a generated book keeps the test offline (the real one is fetched by apt)."""
    from batchlane_dev.local.pdfgen import make_pdf

    book = tmp_path / "smoke-book.pdf"
    book.write_bytes(make_pdf(30, lines_per_page=30))
    monkeypatch.setenv("BATCHLANE_REAL_BOOK", str(book))


@pytest.mark.parametrize("module_name", FIGURE_MODULES)
def test_each_figure_module_prints_every_figure_at_its_smallest_size(module_name, smoke_book, migrated_url, monkeypatch):
    forget_everything(migrated_url)
    monkeypatch.setenv("DATABASE_URL", migrated_url)  # the figures' stacks use the session's PostgreSQL: no server start each
    module = importlib.import_module(module_name)
    results = list(module.figures(Namespace(only=[], quick=False, smoke=True)))
    assert results, f"{module_name} yielded no figure"
    for result in results:
        assert result["name"] in module.NAMES, f"{result['name']} is missing from {module_name}.NAMES (so --only cannot select it)"
        json.dumps(result)  # one JSON line per figure
        assert isinstance(result["value"], int | float) and math.isfinite(result["value"]), result
        assert result["unit"] and result["baseline_is"], result


def test_bench_stdout_is_one_json_object_a_line(smoke_book):
    """`make bench` output is for machines: nothing but the figures on stdout (logs go to stderr or a file)."""
    done = subprocess.run(
        [sys.executable, "-m", "batchlane_dev.bench", "--smoke", "--only", "split_20_pages", "--only", "collect_500_records"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    lines = done.stdout.splitlines()
    assert [json.loads(line)["name"] for line in lines] == ["split_20_pages", "collect_500_records"], done.stdout[-2000:]
