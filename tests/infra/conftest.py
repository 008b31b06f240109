"""Synthesize the CDK app once per test session, as `make synth` does (cdk.json context).

Needs no AWS account and no Docker. The Lambda layer is built with pip from PyPI the
first time (cached under build/layer/ afterwards); if that fails the tests fail with
pip's message — they are never skipped.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
for path in (HERE.parents[1], HERE):  # the repo root (package `infra`) and the test helpers
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from infra_testlib import Synth, synth_app, synth_from_template  # noqa: E402

from infra import nag  # noqa: E402
from infra.layer_build import LayerBuildError, build_layer  # noqa: E402

FOLDER_SOURCE = "customer-docs/contracts/"  # the folder source the session's synth is given (context folderSources)


def _run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of this pytest run that every xdist worker sees (the workers' common parent)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextmanager
def _run_lock(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[Path]:
    """One worker at a time: the layer build and the synth are done once per run, not per worker."""
    folder = _run_dir(tmp_path_factory)
    with open(folder / f"{name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield folder


@pytest.fixture(scope="session")
def layer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with _run_lock(tmp_path_factory, "layer"):
        try:
            return build_layer()
        except LayerBuildError as exc:  # a clear failure, never a skip
            pytest.fail(f"could not build the Lambda layer: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory, layer_dir: Path) -> Synth:
    with _run_lock(tmp_path_factory, "synth") as folder:
        outdir = folder / "cdk.out.shared"
        done = outdir / "synth-done.json"
        if done.exists():  # another worker synthesized this run's app: its template and cdk-nag acknowledgments
            shared = json.loads(done.read_text())
            nag.ACKNOWLEDGED[:] = [tuple(entry) for entry in shared["acknowledged"]]
            return synth_from_template(outdir, layer_dir, shared["template"])
        # With a folder source configured, so the folder-job grants are in the template (cdk.json has none).
        result = synth_app(outdir, layer_dir, extra_context={"folderSources": [FOLDER_SOURCE]})
        done.write_text(json.dumps({"template": result.template, "acknowledged": nag.ACKNOWLEDGED}))
        return result
