"""The counts behind the per-user caps (db/caps.py) and the API's per-user rate limits (db/rate_limits.py)."""

from __future__ import annotations

from typing import Protocol


class CapCounts(Protocol):
    """The counts behind the per-user caps on what costs outside the budget (db/caps.py)."""

    def pending_uploads(self, owner_id: str) -> int:
        """Files the owner registered (presigned POSTs handed out) and never converted nor deleted; a folder file is not one."""
        ...

    def live_folder_jobs(self, owner_id: str) -> int:
        """The owner's folder jobs not finished (a cancelled one whose files still finish counts)."""
        ...

    def recent_test_deliveries(self, owner_id: str, *, event: str, hours: float) -> int:
        """Deliveries of ``event`` with no job nor folder job (tests) the owner asked for in the last ``hours``."""
        ...


class RateLimits(Protocol):
    """The API's per-user token buckets (db/rate_limits.py): a bucket starts full and refills at ``rate_per_s`` up to ``burst``."""

    def take(self, owner_id: str, *, cost: float, rate_per_s: float, burst: float) -> float:
        """Take ``cost`` tokens from the owner's bucket: 0 when admitted, else the seconds until that many have refilled
        (nothing taken; with no refill rate, an hour)."""
        ...
