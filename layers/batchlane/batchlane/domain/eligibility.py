"""Which jobs can wait for the batch lane (README "Configuration")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def batch_eligible(options: Mapping[str, Any], total_pages: int, *, lane_configured: bool, min_pages: int) -> tuple[bool, str]:
    """Return (eligible, why). Jobs are hi-fi with parser auto unless the caller says otherwise."""
    if not lane_configured:
        return False, "lane_off"
    if not options.get("highFidelity", True):
        return False, "not_high_fidelity"
    if options.get("parser", "auto") not in (None, "auto"):
        return False, "parser_not_auto"
    if options.get("mathpix") or options.get("routeToMathpix"):
        return False, "mathpix_routing"
    if total_pages >= min_pages:
        return True, "large_job"
    if options.get("batchLane"):
        return True, "bulk_opt_in"
    return False, "too_few_pages"


def lane_opt_outs(options: Mapping[str, Any]) -> list[str]:
    """The options that keep a job out of the batch lane whatever its size (forcing on-demand, at
    full price): using them needs the priority permission (docs/deploy.md "Permissions")."""
    out = []
    if options.get("highFidelity", True) is False:
        out.append("highFidelity")
    if options.get("parser", "auto") not in (None, "auto"):
        out.append("parser")
    if options.get("mathpix") or options.get("routeToMathpix"):
        out.append("mathpix")
    return out
