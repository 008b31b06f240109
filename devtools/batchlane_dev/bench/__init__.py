"""`make bench`: one JSON object per line per figure, each against a baseline measured in the same run.

Every figure is ``{"name", "value", "unit", "baseline", "ratio", ...details}`` with
``ratio = value / baseline``. Modules listed in ``FIGURE_MODULES`` expose
``figures(args) -> Iterator[dict]``; ``python -m batchlane_dev.bench --only NAME`` runs one.
"""

from __future__ import annotations

from typing import Any


def figure(name: str, value: float, unit: str, baseline: float, **details: Any) -> dict[str, Any]:
    return {
        "name": name,
        "value": round(value, 4),
        "unit": unit,
        "baseline": round(baseline, 4),
        "ratio": round(value / baseline, 4) if baseline else None,
        **details,
    }


def size(args: Any, full: Any, quick: Any, smoke: Any) -> Any:
    """The input size for this run: ``--smoke`` (the smallest that still runs every step, for the test that keeps
    each figure alive), ``--quick`` (a smoke run a reader can trust roughly), or the full figure."""
    if getattr(args, "smoke", False):
        return smoke
    return quick if getattr(args, "quick", False) else full


def wanted(args: Any, *names: str) -> bool:
    """True when ``--only`` is absent or names one of ``names``, and ``--skip`` does not name them all (so unwanted
    figures are not computed)."""
    only = getattr(args, "only", None) or []
    left = set(names) - set(getattr(args, "skip", None) or [])
    return bool(left) and (not only or bool(set(only) & left))
