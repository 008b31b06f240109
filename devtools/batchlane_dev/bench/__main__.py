"""Entry point of `make bench` (see batchlane_dev.bench)."""

from __future__ import annotations

import argparse
import importlib
import json
import sys

FIGURE_MODULES = (
    "batchlane_dev.bench.pdf",
    "batchlane_dev.bench.layer",
    "batchlane_dev.bench.batch",
    "batchlane_dev.bench.pool",
    "batchlane_dev.bench.money",
    "batchlane_dev.bench.demo",
    "batchlane_dev.bench.ondemand",
    "batchlane_dev.bench.folders",
    "batchlane_dev.bench.assembly",
    "batchlane_dev.bench.formats",
    "batchlane_dev.bench.simulate",
    "batchlane_dev.bench.tenants",
    "batchlane_dev.bench.one_document",
    "batchlane_dev.bench.realbook",  # last: it exits with a clear message when the book cannot be fetched
)


def main() -> int:
    parser = argparse.ArgumentParser(description="batchlane benchmarks: one JSON object per figure")
    parser.add_argument("--only", action="append", default=[], help="run only the figures with this name (repeatable), e.g. prepare_1000_pages")
    parser.add_argument("--skip", action="append", default=[], help="run every figure but this one (repeatable), e.g. folder_growth_10000_files")
    parser.add_argument("--quick", action="store_true", help="smaller inputs, for a rough run")
    parser.add_argument("--smoke", action="store_true", help="the smallest inputs: proves every figure still runs (tests/integration/test_bench_figures.py)")
    args = parser.parse_args()
    for module_name in FIGURE_MODULES:
        module = importlib.import_module(module_name)
        names = set(module.NAMES) - set(args.skip)
        if not names or (args.only and not set(args.only) & names):
            continue  # nothing wanted from this module: don't run it
        for result in module.figures(args):
            if result["name"] in args.skip or (args.only and result["name"] not in args.only):
                continue
            print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
