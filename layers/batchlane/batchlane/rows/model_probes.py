"""The page form a model takes on this account, as found and stored (ports.model_probes.PageFormRepository)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class PageForm:
    """One page_forms row (0021_page_forms.sql): the form a model takes on this account, and who found it."""

    model_id: str
    page_form: str  # pdf, image (domain.page_form.FORMS)
    source: str  # doctor (batchlane doctor --live), refusal (a call Bedrock refused for its form)
    accepted: dict[str, Any]  # the doctor's findings per form; {} for a refusal
    detail: str | None
    recorded_at: datetime

    @classmethod
    def of(cls, row: dict[str, Any]) -> PageForm:
        values: dict[str, Any] = {f.name: row[f.name] for f in fields(cls)}
        return cls(**{**values, "accepted": dict(row["accepted"] or {})})
