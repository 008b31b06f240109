"""A dry run's asynchronous estimate, as stored (ports.estimates.EstimateRepository; decision 0035)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Estimate:
    """One estimates row (0037_estimates.sql): a dry run the API recorded and the estimate worker answers."""

    id: str
    owner_id: str
    kind: str  # file | folder
    status: str  # running, completed, failed (domain.status's ESTIMATE moves)
    request: dict[str, Any]  # file: {fileId, options}; folder: {spec, groups}
    progress: dict[str, Any]  # what the worker last said it is doing ({step, done, total})
    result: dict[str, Any] | None  # the dry run's answer, once completed
    error_id: str | None
    error_message: str | None
    created_at: datetime
    finished_at: datetime | None
    age_s: float  # seconds since it was created, by the store's clock (not a column)

    @classmethod
    def of(cls, row: dict[str, Any]) -> Estimate:
        values = {f.name: row[f.name] for f in fields(cls)}
        return cls(**{**values, "id": str(row["id"]), "progress": dict(row["progress"] or {}), "age_s": float(row["age_s"])})
