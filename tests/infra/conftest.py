"""Synthesize the CDK app once per test session, as `make synth` does (cdk.json context).

Needs no AWS account and no Docker. The Lambda layer is built with pip from PyPI the
first time (cached under build/layer/ afterwards); if that fails the tests fail with
pip's message — they are never skipped.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
for path in (HERE.parents[1], HERE):  # the repo root (package `infra`) and the test helpers
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from infra_testlib import Synth, synth_app  # noqa: E402

from infra.layer_build import LayerBuildError, build_layer  # noqa: E402

FOLDER_SOURCE = "customer-docs/contracts/"  # the folder source the session's synth is given (context folderSources)


@pytest.fixture(scope="session")
def layer_dir() -> Path:
    try:
        return build_layer()
    except LayerBuildError as exc:  # a clear failure, never a skip
        pytest.fail(f"could not build the Lambda layer: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory, layer_dir: Path) -> Synth:
    # With a folder source configured, so the folder-job grants are in the template (cdk.json has none).
    return synth_app(tmp_path_factory.mktemp("cdk.out"), layer_dir, extra_context={"folderSources": [FOLDER_SOURCE]})
