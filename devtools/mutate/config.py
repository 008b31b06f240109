"""Write `make mutate`'s setup.cfg from devtools/mutate/setup.cfg.in: the checkout's path in, and ``only_mutate``
replaced when paths are given (``MUTATE_PATHS``), so one package can be mutated alone in minutes, not the whole hour.

    python devtools/mutate/config.py ROOT [PATH_GLOB ...] > .batchlane/mutate/setup.cfg
"""

from __future__ import annotations

import sys
from pathlib import Path

TEMPLATE = Path(__file__).with_name("setup.cfg.in")


def render(template: str, root: str, paths: list[str]) -> str:
    """The template with ``@ROOT@`` set; with ``paths``, its ``only_mutate`` list is exactly those globs."""
    text = template.replace("@ROOT@", root)
    if not paths:
        return text
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith("only_mutate ="))
    end = start + 1
    while end < len(lines) and lines[end].startswith((" ", "\t")) and lines[end].strip():
        end += 1
    return "".join([*lines[: start + 1], *(f"    {path}\n" for path in paths), *lines[end:]])


if __name__ == "__main__":
    sys.stdout.write(render(TEMPLATE.read_text(), sys.argv[1], sys.argv[2:]))
