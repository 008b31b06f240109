"""Fair share by owner: the order in which parked jobs are claimed for the batch lane.

Round robin across owners with waiting work, weighted by what each already has in flight:
an owner's k-th waiting job has turn k + (their batch jobs preparing or submitted), and the
claimer takes the lowest turns first (ties: oldest first). A user with 50 parked jobs gets
one place per round like a user with one. docs/operations.md "Budgets, caps and fair sharing".
"""

from __future__ import annotations

from batchlane.db.connection import Row
from batchlane.db.jobs import Runner

IN_FLIGHT_STATES = ("preparing", "submitted", "stopping")  # as batch/rows.py: what holds a place in the quota


def parked_jobs_in_turn(tx: Runner, *, limit: int = 500) -> list[Row]:
    """Parked jobs with no batch row yet, locked (SKIP LOCKED: a cancel or process-now in flight keeps its job), in fair order."""
    return tx.run(
        """WITH waiting AS (
                SELECT j.id, j.owner_id, j.created_at,
                       row_number() OVER (PARTITION BY j.owner_id ORDER BY j.created_at, j.id) AS turn
                FROM large_conversion_jobs j
                WHERE j.status = 'waiting_batch' AND NOT EXISTS (SELECT 1 FROM conversion_batch_jobs b WHERE b.job_id = j.id)),
              busy AS (
                SELECT j.owner_id, count(*) AS n FROM conversion_batch_jobs b JOIN large_conversion_jobs j ON j.id = b.job_id
                WHERE b.state = ANY(CAST(:in_flight AS text[])) GROUP BY j.owner_id)
           SELECT j.id, j.model_id, j.owner_id FROM large_conversion_jobs j
           JOIN waiting w ON w.id = j.id
           LEFT JOIN busy ON busy.owner_id = w.owner_id
           WHERE j.status = 'waiting_batch'
           ORDER BY w.turn + COALESCE(busy.n, 0), w.created_at, j.id
           LIMIT :limit
           FOR UPDATE OF j SKIP LOCKED""",
        in_flight=list(IN_FLIGHT_STATES),
        limit=limit,
    )
