"""Per-user caps on what costs the deployment outside any budget (pure rule; issue 21.5).

A refusal is 429 with a stable id, names the cap and the setting an operator raises it with.
"""

from __future__ import annotations

from batchlane.domain.errors import LimitReached


def check_cap(*, what: str, count: int, limit: int, setting: str, error_id: str, wait: str) -> None:
    """Refuse one more of ``what`` when the owner already has ``limit`` of them."""
    if count >= limit:
        raise LimitReached(f"You have {count} {what}; the limit is {limit}. {wait}, or ask an operator to raise {setting}.", error_id=error_id)
