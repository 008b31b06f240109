"""Counts behind the per-user caps on what costs outside the budget (issue 21.5; docs/operations.md
"Per-user caps"): registered uploads not yet converted, live folder jobs, recent test deliveries."""

from __future__ import annotations

from batchlane.db.jobs import Runner


def _count(db: Runner, sql: str, **params: object) -> int:
    row = db.one(sql, **params)
    return int(row["n"]) if row else 0


class PgCaps:
    """batchlane.ports.CapCounts on PostgreSQL, bound to one Database or Transaction."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner

    def pending_uploads(self, owner_id: str) -> int:
        """Files the owner registered (presigned POSTs handed out) and never converted nor deleted."""
        return _count(
            self.runner,
            "SELECT count(*) AS n FROM files WHERE owner_id = :owner AND status = 'uploaded' AND deleted_at IS NULL AND source_bucket IS NULL",
            owner=owner_id,
        )

    def live_folder_jobs(self, owner_id: str) -> int:
        """The owner's folder jobs not finished (enumerating or processing)."""
        return _count(self.runner, "SELECT count(*) AS n FROM folder_jobs WHERE owner_id = :owner AND finished_at IS NULL", owner=owner_id)

    def recent_test_deliveries(self, owner_id: str, *, event: str, hours: float) -> int:
        """Test deliveries (``event``, no job) the owner asked for in the last ``hours``: each starts a retry ladder."""
        return _count(
            self.runner,
            """SELECT count(*) AS n FROM webhook_deliveries
               WHERE owner_id = :owner AND event = :event AND job_id IS NULL AND folder_job_id IS NULL AND created_at > now() - make_interval(secs => :secs)""",
            owner=owner_id,
            event=event,
            secs=hours * 3600,
        )
