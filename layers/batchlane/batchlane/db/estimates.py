"""estimates: a dry run recorded by the API and answered by the estimate worker (0037_estimates.sql)."""

from __future__ import annotations

import json
from typing import Any

from batchlane.db.connection import Row
from batchlane.db.jobs import Runner
from batchlane.domain.status import Entity, EstimateStatus, Transition
from batchlane.rows import Estimate

_AGE = "extract(epoch FROM now() - created_at)::double precision AS age_s"


def _one(row: Row | None) -> Estimate | None:
    return Estimate.of(row) if row is not None else None


class PgEstimates:
    """batchlane.ports.EstimateRepository on PostgreSQL, bound to one Database or Transaction."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner

    def add(self, *, estimate_id: str, owner_id: str, kind: str, request: dict[str, Any]) -> Estimate:
        row = self.runner.one(
            "INSERT INTO estimates (id, owner_id, kind, request) VALUES (CAST(:id AS uuid), :owner, :kind, CAST(:request AS jsonb))"
            f" RETURNING *, {_AGE}",
            id=estimate_id,
            owner=owner_id,
            kind=kind,
            request=json.dumps(request),
        )
        assert row is not None
        return Estimate.of(row)

    def get(self, estimate_id: str) -> Estimate | None:
        return _one(self.runner.one(f"SELECT *, {_AGE} FROM estimates WHERE id = CAST(:id AS uuid)", id=estimate_id))

    def running(self, owner_id: str, *, younger_than_s: float) -> int:
        row = self.runner.one(
            "SELECT count(*) AS n FROM estimates WHERE owner_id = :owner AND status = :running"
            " AND created_at > now() - make_interval(secs => CAST(:age AS double precision))",
            owner=owner_id,
            running=EstimateStatus.RUNNING,
            age=younger_than_s,
        )
        return int(row["n"]) if row else 0

    def report(self, estimate_id: str, progress: dict[str, Any]) -> bool:
        row = self.runner.one(
            "UPDATE estimates SET progress = CAST(:progress AS jsonb) WHERE id = CAST(:id AS uuid) AND status = :running RETURNING id",
            id=estimate_id,
            progress=json.dumps(progress),
            running=EstimateStatus.RUNNING,
        )
        return row is not None

    def finish(
        self, estimate_id: str, move: Transition, *, result: dict[str, Any] | None = None, error_id: str | None = None, error_message: str | None = None
    ) -> bool:
        if move.entity is not Entity.ESTIMATE:
            raise ValueError(f"{move.entity}.{move.name} is not a transition of an estimate")
        row = self.runner.one(
            """UPDATE estimates SET status = :to, result = CAST(:result AS jsonb), error_id = :error_id, error_message = :message, finished_at = now()
               WHERE id = CAST(:id AS uuid) AND status = ANY(CAST(:from_ AS text[])) RETURNING id""",
            id=estimate_id,
            to=move.target,
            from_=move.from_states,
            result=json.dumps(result) if result is not None else None,
            error_id=error_id,
            message=error_message,
        )
        return row is not None

    def purge(self, owner_id: str, *, older_than_s: float) -> int:
        rows = self.runner.run(
            "DELETE FROM estimates WHERE owner_id = :owner AND created_at < now() - make_interval(secs => CAST(:age AS double precision)) RETURNING id",
            owner=owner_id,
            age=older_than_s,
        )
        return len(rows)
