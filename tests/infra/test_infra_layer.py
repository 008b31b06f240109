"""The layer: the package and its pinned runtime dependencies for Lambda arm64 / CPython 3.12."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from infra import layer_build
from infra.layer_build import REQUIREMENTS, build_layer


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        stat = path.lstat()
        digest.update(f"{path.relative_to(root)}|{int(stat.st_mtime)}|{oct(stat.st_mode)}".encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def test_requirements_are_pinned() -> None:
    lines = [ln.strip() for ln in REQUIREMENTS.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert lines and all(re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[0-9][A-Za-z0-9.\-]*", ln) for ln in lines), lines


def test_layer_holds_the_package_and_nothing_of_the_offline_stack_cli_or_tests(layer_dir: Path) -> None:
    site = layer_dir / "python"
    assert (site / "batchlane" / "__init__.py").is_file()
    assert (site / "batchlane" / "contract.py").is_file()  # the few names the running code shares with the deployment
    assert not any((site / "batchlane" / name).exists() for name in ("local", "cli", "bench"))
    assert not list(site.rglob("__pycache__")) and not list(site.rglob("*.pyc"))
    assert not [p for p in (site / "batchlane").rglob("*") if p.is_dir() and p.name == "tests"]
    assert not (site / "bin").exists()  # console scripts carry this machine's interpreter path


def test_layer_dependencies_are_built_for_lambda_arm64_python_312(layer_dir: Path) -> None:
    site = layer_dir / "python"
    compiled = list(site.rglob("*.so"))
    assert compiled, "expected compiled wheels (pydantic-core)"
    assert any("cpython-312-aarch64-linux-gnu" in p.name for p in compiled)
    assert not [p for p in compiled if "x86_64" in p.name or "cpython-311" in p.name]
    for requirement in REQUIREMENTS.read_text().split():
        if "==" in requirement:
            name, version = requirement.split("==")
            dist = name.replace("-", "_").lower()
            assert list(site.glob(f"{dist}-{version}.dist-info")), requirement


def test_layer_build_is_reproducible_and_cached(layer_dir: Path, tmp_path: Path) -> None:
    again = build_layer(tmp_path / "fresh")
    current = build_layer()  # the session's layer (rebuilt only if the package changed meanwhile)
    assert again.name == current.name == layer_build.source_hash()
    assert _tree_digest(again / "python") == _tree_digest(current / "python")
    assert build_layer(tmp_path / "fresh") == again  # cached: no rebuild


def test_layer_carries_no_deployment_description(layer_dir: Path) -> None:
    """The topology and its grants (deployment/) are read by infra, devtools and tests: no Lambda runs them."""
    site = layer_dir / "python"
    assert not [p.name for p in site.rglob("*.py") if p.stem.startswith("topology")]
    assert not (site / "deployment").exists() and not (site / "batchlane" / "deployment").exists()
    importers = [p for p in (site / "batchlane").rglob("*.py") if re.search(r"^\s*(from|import) (deployment|batchlane\.topology)", p.read_text(encoding="utf-8"), re.M)]
    assert importers == []  # a module that did would fail to import in Lambda


def test_the_layer_with_the_format_converters_fits_a_lambda_unzipped(layer_dir: Path) -> None:
    """Lambda's limit is 250 MB unzipped for a function and all its layers (issue 43). pandoc (174 MB as
    pypandoc-binary ships it) is stored gzip-compressed and unpacked to /tmp on first use (decision 0029);
    python-pptx, openpyxl and lxml ship as they are. The functions' own code is a few KB each."""
    site = layer_dir / "python"
    total = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
    assert total < 200 * 2**20, f"the layer unzips to {total / 2**20:.0f} MB: too close to Lambda's 250 MB"
    packed = site / "pypandoc" / "files" / "pandoc.gz"
    assert packed.is_file() and 20 * 2**20 < packed.stat().st_size < 60 * 2**20
    assert not (site / "pypandoc" / "files" / "pandoc").exists()  # never both
    for package in ("pptx", "openpyxl", "lxml"):
        assert (site / package / "__init__.py").is_file(), package
