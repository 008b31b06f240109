"""The per-module table of a `make mutate` run, as docs/testing.md "Score" shows it.

Reads what mutmut 3 left in ``mutants/`` (one ``<module>.py.meta`` per mutated file: each mutant's exit code)
and sorts the codes with mutmut's own ``status_by_exit_code``, so the table counts what ``mutmut results`` would.

    .venv/bin/python devtools/mutate/table.py .batchlane/mutate/mutants
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from mutmut.stats import status_by_exit_code

COLUMNS = (("killed", "killed"), ("survived", "survived"), ("timeout", "timeout"), ("no tests", "reached by no fast test"))


def counts(mutants: Path) -> dict[str, Counter[str]]:
    """Each mutated module's mutants by status, keyed by its path under ``mutants/`` (``batchlane/...``)."""
    table: dict[str, Counter[str]] = {}
    for meta in sorted(mutants.rglob("*.py.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"].values()
        if codes:
            table[str(meta.relative_to(mutants)).removesuffix(".meta")] = Counter(status_by_exit_code[code] for code in codes)
    return table


def markdown(table: dict[str, Counter[str]]) -> str:
    rows = ["| module | mutants | " + " | ".join(title for _, title in COLUMNS) + " |", "|---" * (len(COLUMNS) + 2) + "|"]
    total: Counter[str] = Counter()
    for module, by_status in table.items():
        total.update(by_status)
        rows.append(f"| `{module}` | {sum(by_status.values())} | " + " | ".join(str(by_status[status]) for status, _ in COLUMNS) + " |")
    rows.append(f"| **all** | {sum(total.values())} | " + " | ".join(str(total[status]) for status, _ in COLUMNS) + " |")
    others = {status: n for status, n in total.items() if status not in dict(COLUMNS)}
    killed = total["killed"]
    summary = f"\n{killed:,} of {sum(total.values()):,} killed: {100 * killed / max(1, sum(total.values())):.1f}%"
    return "\n".join(rows) + summary + (f" (also: {others})" if others else "")


if __name__ == "__main__":
    print(markdown(counts(Path(sys.argv[1] if len(sys.argv) > 1 else ".batchlane/mutate/mutants"))))
