"""Code run in a new interpreter of this environment, where nothing the test session imported is loaded."""

from __future__ import annotations

import subprocess
import sys


def in_a_fresh_interpreter(code: str, *, timeout_s: float = 120) -> None:
    """Run ``code`` with ``python -c``: what a module imports at its own import, or what a process that
    never loaded moto does, shows only there. An ``assert`` in ``code`` that fails (its message on the
    test's stderr) fails the test."""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=timeout_s)
