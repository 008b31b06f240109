"""layer_zip_mb and import_<handler>: what a cold start pays.

* layer_zip_mb — the Lambda layer (built by infra/layer_build.py for arm64 / Python 3.12,
  without Docker) zipped as CDK uploads it; baseline: the zipped runtime dependencies
  alone, so the ratio says what our package adds.
* import_<function> — seconds to import each handler module in a fresh interpreter (median
  of 3), against a fresh ``import boto3`` (the floor every Lambda pays). Measured with this
  machine's Python and the venv's copies of the same pinned packages: the layer itself is
  built for arm64 / 3.12 and cannot be imported here.
"""

from __future__ import annotations

import io
import os
import statistics
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from batchlane_dev.bench import figure, size, wanted
from deployment.topology import FUNCTIONS, REPO_ROOT, handler_path


def _zipped_size(root: Path, *, skip: str | None = None) -> int:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if path.is_file() and not (skip and skip in rel.parts):
                archive.write(path, rel.as_posix())
    return buffer.tell()


def layer_figure() -> dict[str, Any]:
    sys.path.insert(0, str(REPO_ROOT))
    from infra.layer_build import build_layer

    site = build_layer() / "python"
    total = _zipped_size(site)
    deps = _zipped_size(site, skip="batchlane")
    return figure(
        "layer_zip_mb", total / 2**20, "MB", deps / 2**20, baseline_is="the zipped runtime dependencies alone", lambda_limit_mb=50, unzipped_limit_mb=250
    )


def _import_seconds(code: str, repeat: int = 3) -> float:
    env = {**os.environ, "AWS_REGION": "us-east-1", "POWERTOOLS_TRACE_DISABLED": "true", "PYTHONDONTWRITEBYTECODE": "1"}
    timer = f"import time, importlib.util as u; t = time.perf_counter(); {code}; print(time.perf_counter() - t)"
    runs = [
        float(subprocess.run([sys.executable, "-c", timer], capture_output=True, text=True, check=True, env=env).stdout.strip().splitlines()[-1])
        for _ in range(repeat)
    ]
    return statistics.median(runs)


def import_figures(args: Any) -> Iterator[dict[str, Any]]:
    repeat = size(args, 3, 3, 1)
    baseline = _import_seconds("import boto3", repeat)
    for spec in size(args, FUNCTIONS, FUNCTIONS, FUNCTIONS[:1]):
        if not wanted(args, f"import_{spec.name}"):
            continue
        path = handler_path(spec.name)
        load = f"s = u.spec_from_file_location('h', {str(path)!r}); m = u.module_from_spec(s); s.loader.exec_module(m)"
        yield figure(f"import_{spec.name}", _import_seconds(load, repeat), "s", baseline, baseline_is="import boto3 in a fresh interpreter")


NAMES = ("layer_zip_mb", *(f"import_{spec.name}" for spec in FUNCTIONS))  # what figures() yields


def figures(args: Any) -> Iterator[dict[str, Any]]:
    if wanted(args, "layer_zip_mb"):
        yield layer_figure()
    if wanted(args, *(f"import_{spec.name}" for spec in FUNCTIONS)):
        yield from import_figures(args)
