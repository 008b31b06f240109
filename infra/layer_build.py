"""Build the Lambda layer (the ``batchlane`` package + its runtime dependencies) without Docker.

    python -m infra.layer_build [OUTDIR]      # prints the folder to zip / hand to CDK

Dependencies come from ``layers/requirements.txt`` as wheels for the Lambda platform
(``manylinux2014_aarch64``, CPython 3.12) through ``pip install --platform ...
--only-binary=:all:``: pip picks the same wheels on any build machine, so no Docker
and no compiler are needed. The package is copied whole (the offline stack, the CLI and the
benchmarks live in ``devtools/batchlane_dev`` and never ship), without tests and bytecode. Every file gets
the same mtime and pip's machine-specific bits (``bin/`` scripts with this machine's
shebang, ``RECORD``/``INSTALLER``/``direct_url.json``) are dropped, so the same inputs
give the same bytes.

The result is cached under ``OUTDIR/<hash>/`` where the hash covers the requirements,
the package sources and the target platform; a repeated synth reuses it in no time.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = REPO_ROOT / "layers" / "requirements.txt"
PACKAGE_SRC = REPO_ROOT / "layers" / "batchlane" / "batchlane"
DEFAULT_OUT = REPO_ROOT / "build" / "layer"

PLATFORM = "manylinux2014_aarch64"
PYTHON_VERSION = "3.12"
# Never shipped: tests, bytecode.
EXCLUDED_DIRS = frozenset({"tests", "__pycache__"})
EXCLUDED_SUFFIXES = (".pyc", ".pyo")
FIXED_MTIME = 315532800  # 1980-01-01, the earliest time a zip entry can carry
_MARKER = ".complete"


class LayerBuildError(RuntimeError):
    """The layer could not be built (usually: pip could not reach PyPI)."""


def _package_files(src: Path = PACKAGE_SRC) -> list[Path]:
    files = []
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if not path.is_file() or path.name.endswith(EXCLUDED_SUFFIXES):
            continue
        if any(part in EXCLUDED_DIRS for part in rel.parts[:-1]):
            continue
        files.append(path)
    return files


def source_hash(requirements: Path = REQUIREMENTS, src: Path = PACKAGE_SRC) -> str:
    """What decides the layer's content: requirements, target platform, package files."""
    digest = hashlib.sha256()
    digest.update(f"{PLATFORM}|{PYTHON_VERSION}|v2-pandoc-gz\n".encode())
    digest.update(requirements.read_bytes())
    for path in _package_files(src):
        digest.update(str(path.relative_to(src)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _pip_install(requirements: Path, target: Path) -> None:
    cmd = [
        sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
        "--target", str(target), "--platform", PLATFORM, "--implementation", "cp",
        "--python-version", PYTHON_VERSION, "--only-binary=:all:", "-r", str(requirements),
    ]  # fmt: skip
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise LayerBuildError(f"pip could not build the Lambda layer (does this machine reach PyPI?).\ncommand: {' '.join(cmd)}\n{result.stderr[-3000:]}")


def _strip_machine_specific(site: Path) -> None:
    shutil.rmtree(site / "bin", ignore_errors=True)
    for pattern in (
        "*.dist-info/RECORD",
        "*.dist-info/INSTALLER",
        "*.dist-info/direct_url.json",
        "*.dist-info/REQUESTED",
    ):
        for path in site.glob(pattern):
            path.unlink()
    for cache in list(site.rglob("__pycache__")):
        shutil.rmtree(cache, ignore_errors=True)


def _pack_pandoc(site: Path) -> None:
    """pandoc (174 MB, pypandoc-binary's) stored gzip-compressed (~37 MB): the layer plus a function must stay
    under Lambda's 250 MB unzipped; batchlane.formats.pandoc unpacks it to /tmp once per container. Written with
    no name and mtime 0, so the same binary gives the same bytes (decision 0029)."""
    binary = site / "pypandoc" / "files" / "pandoc"
    if not binary.is_file():
        return
    with binary.open("rb") as src, (binary.parent / "pandoc.gz").open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as out:
        shutil.copyfileobj(src, out, 1 << 20)
    binary.unlink()


def _copy_package(dest: Path) -> None:
    for path in _package_files():
        target = dest / "batchlane" / path.relative_to(PACKAGE_SRC)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


def _normalise(root: Path) -> None:
    for path in sorted(root.rglob("*"), reverse=True):
        if path.is_file():
            path.chmod(0o644)
        os.utime(path, (FIXED_MTIME, FIXED_MTIME), follow_symlinks=False)


def build_layer(out_root: Path = DEFAULT_OUT) -> Path:
    """Return a folder holding ``python/…`` for ``lambda.Code.from_asset``; build it if needed."""
    if not PACKAGE_SRC.is_dir():
        raise LayerBuildError(f"the shared package is missing: {PACKAGE_SRC}")
    key = source_hash()
    final = out_root / key
    if (final / _MARKER).exists():
        return final

    out_root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=out_root))
    try:
        site = staging / "python"
        _pip_install(REQUIREMENTS, site)
        _strip_machine_specific(site)
        _pack_pandoc(site)
        _copy_package(site)
        _normalise(site)
        (staging / _MARKER).write_text(key)
        shutil.rmtree(final, ignore_errors=True)
        staging.rename(final)  # atomic: a half-built folder is never reused
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    # Keep the cache small: older builds are no longer referenced by any synth.
    for old in out_root.iterdir():
        if old.is_dir() and old != final and not old.name.startswith("."):
            shutil.rmtree(old, ignore_errors=True)
    return final


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0]).resolve() if args else DEFAULT_OUT
    try:
        print(build_layer(out))
    except LayerBuildError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
