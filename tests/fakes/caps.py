"""batchlane.ports.CapCounts in memory: the contract of db/caps.py's Pg adapter (tests/contract)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from batchlane.domain.status import FileStatus
from fakes.deliveries import FakeDeliveries
from fakes.jobs import _JobRows


class FakeCaps:
    def __init__(self, state: Any) -> None:  # a fakes.FakeState
        self.state = state

    def pending_uploads(self, owner_id: str) -> int:
        files: _JobRows = self.state.part("jobs", _JobRows)
        return sum(
            1 for f in files.files.values() if f.owner_id == owner_id and f.status == FileStatus.UPLOADED and f.deleted_at is None and f.source_bucket is None
        )

    def live_folder_jobs(self, owner_id: str) -> int:
        folders = self.state.parts.get("folder_jobs")
        return sum(1 for j in (folders.jobs.values() if folders else ()) if j.owner_id == owner_id and j.finished_at is None)

    def recent_test_deliveries(self, owner_id: str, *, event: str, hours: float) -> int:
        since = self.state.clock.now() - timedelta(hours=hours)
        return sum(
            1
            for d in FakeDeliveries(self.state).rows.values()
            if d.owner_id == owner_id and d.event == event and d.job_id is None and d.folder_job_id is None and d.created_at > since
        )
