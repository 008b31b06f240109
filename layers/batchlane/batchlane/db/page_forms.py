"""The page form recorded per model (migration 0021): what ``auto`` follows (domain/page_form.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from batchlane.db.jobs import Runner
from batchlane.domain.page_form import FORMS
from batchlane.rows import PageForm


def record_doctor_form(db: Runner, event: Mapping[str, Any]) -> dict[str, Any]:
    """The migrate function's ``record_page_form`` action: validate the doctor's finding and store it."""
    model_id, form = str(event.get("modelId") or ""), str(event.get("pageForm") or "")
    if not model_id or form not in FORMS:
        raise ValueError(f"record_page_form needs modelId and pageForm in {FORMS}")
    accepted = event.get("accepted") if isinstance(event.get("accepted"), Mapping) else {}
    PgPageForms(db).record_form(model_id, form, source="doctor", accepted=accepted, detail="batchlane doctor --live")
    return {"modelId": model_id, "pageForm": form, "recorded": True}


class PgPageForms:
    """batchlane.ports.PageFormRepository on PostgreSQL, bound to one Database or Transaction."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner

    def recorded_forms(self) -> dict[str, str]:
        """Model id -> recorded form; {} when nothing was recorded."""
        return {str(row["model_id"]): str(row["page_form"]) for row in self.runner.run("SELECT model_id, page_form FROM page_forms")}

    def get(self, model_id: str) -> PageForm | None:
        """The model's recorded form with where it came from; None when nothing was recorded."""
        rows = self.runner.run("SELECT model_id, page_form, source, accepted, detail, recorded_at FROM page_forms WHERE model_id = :model", model=model_id)
        return PageForm.of(rows[0]) if rows else None

    def record_form(self, model_id: str, page_form: str, *, source: str, accepted: Mapping[str, Any] | None = None, detail: str | None = None) -> None:
        """Insert or replace the model's form: the last finding wins (a doctor run after a refusal settles it again)."""
        self.runner.run(
            """INSERT INTO page_forms (model_id, page_form, source, accepted, detail)
               VALUES (:model, :form, :source, CAST(:accepted AS jsonb), :detail)
               ON CONFLICT (model_id) DO UPDATE SET page_form = EXCLUDED.page_form, source = EXCLUDED.source,
                   accepted = EXCLUDED.accepted, detail = EXCLUDED.detail, recorded_at = now()""",
            model=model_id,
            form=page_form,
            source=source,
            accepted=json.dumps(dict(accepted or {})),
            detail=detail,
        )
