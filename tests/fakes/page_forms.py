"""batchlane.ports.PageFormRepository in memory: the contract of db/page_forms.py's Pg adapter (tests/contract)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from batchlane.domain.page_form import FORMS
from batchlane.rows import PageForm

SOURCES = ("doctor", "refusal")  # page_forms' CHECK on source


class FakePageForms:
    def __init__(self, state: Any) -> None:  # a fakes.FakeState
        self.state = state

    @property
    def _rows(self) -> dict[str, PageForm]:
        rows: dict[str, PageForm] = self.state.part("page_forms", dict)
        return rows

    def recorded_forms(self) -> dict[str, str]:
        return {model_id: row.page_form for model_id, row in self._rows.items()}

    def get(self, model_id: str) -> PageForm | None:
        return self._rows.get(model_id)

    def record_form(self, model_id: str, page_form: str, *, source: str, accepted: Mapping[str, Any] | None = None, detail: str | None = None) -> None:
        if page_form not in FORMS or source not in SOURCES:
            raise ValueError(f"page_forms refuses form {page_form!r} from {source!r}")  # the table's CHECKs
        self._rows[model_id] = PageForm(
            model_id=model_id, page_form=page_form, source=source, accepted=dict(accepted or {}), detail=detail, recorded_at=self.state.clock.now()
        )
