"""pandoc, run as a bounded subprocess: the converter of DOCX, ODT, EPUB and HTML, and the writer of DOCX and HTML.

Which binary: ``BATCHLANE_PANDOC`` if set; else the one pypandoc-binary (pinned) installed beside this
package; in the Lambda layer that binary is stored gzip-compressed (174 MB → 37 MB: the layer and a
function share 250 MB unzipped) and unpacked once per container to /tmp (docs/decisions/0029-formats-beside-pdf.md).
Every run is ``--sandbox`` (pandoc reads only the files named on its command line: an HTML page's
``<img src="http://…">`` or ``file:///etc/passwd`` is never fetched), bounded by a wall clock, a CPU
limit (an orphan dies by itself) and pandoc's own heap limit (``+RTS -M``).
"""

from __future__ import annotations

import gzip
import os
import resource
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pypandoc

from batchlane.domain.errors import InputError

PANDOC_ENV = "BATCHLANE_PANDOC"
_FILES = Path(pypandoc.__file__).resolve().parent / "files"
_unpack_lock = threading.Lock()


class PandocFailed(Exception):
    """pandoc ended without an answer: ``reason`` is ``deadline``, ``memory`` or ``error`` (its message)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"pandoc {reason}: {detail[:300]}")
        self.reason = reason


def pandoc_path(scratch: Path | None = None) -> str:
    """The pandoc binary to run (see the module docstring); InputError CONVERTER_MISSING when there is none."""
    if configured := os.environ.get(PANDOC_ENV):
        return configured
    plain = _FILES / "pandoc"
    if plain.is_file():
        return str(plain)
    packed = _FILES / "pandoc.gz"
    if packed.is_file():
        return str(_unpacked(packed, Path(scratch or tempfile.gettempdir())))
    raise InputError("The document converter (pandoc) is not installed in this deployment.", error_id="CONVERTER_MISSING")


def _unpacked(packed: Path, scratch: Path) -> Path:
    """The gzip-packed binary, unpacked once (atomic rename: a concurrent unpack never leaves half a file)."""
    target = scratch / f"batchlane-pandoc-{packed.stat().st_size}" / "pandoc"
    with _unpack_lock:
        if not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_suffix(f".{os.getpid()}.part")
            with gzip.open(packed, "rb") as src, partial.open("wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
            partial.chmod(0o755)
            partial.replace(target)
    return target


def run_pandoc(args: Sequence[str], *, seconds: float, memory_mb: int, stdin: bytes | None = None, cwd: Path | None = None) -> bytes:
    """pandoc ``args`` (sandboxed) → its stdout; PandocFailed past the wall clock, the heap or on an error."""
    command = [pandoc_path(), "+RTS", f"-M{memory_mb}m", "-RTS", "--sandbox", *args]
    cpu = max(int(seconds) + 1, 2)

    def limits() -> None:  # in the child, before exec: pandoc dies by itself if this process is killed first
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))

    try:
        done = subprocess.run(command, input=stdin, capture_output=True, timeout=seconds, cwd=cwd, preexec_fn=limits, check=False)
    except subprocess.TimeoutExpired as exc:
        raise PandocFailed("deadline", f"past {seconds} s") from exc
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace")
        if "Heap exhausted" in err or "heap overflow" in err.lower() or "out of memory" in err.lower():
            raise PandocFailed("memory", err)
        if done.returncode in (-9, -24, 137, 152):  # SIGKILL / SIGXCPU: the CPU limit
            raise PandocFailed("deadline", err)
        raise PandocFailed("error", err)
    return done.stdout


def pandoc_version() -> str:
    """``pandoc 3.9``: what the dry run and the decision record name."""
    out = subprocess.run([pandoc_path(), "--version"], capture_output=True, timeout=30, check=False).stdout.decode()
    return out.splitlines()[0] if out else "pandoc"


def ast_nodes(node: Any) -> Iterator[dict[str, Any]]:
    """Every node of a pandoc JSON AST (the dicts with a ``t``), depth first, in reading order."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "t" in item:
                yield item
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
