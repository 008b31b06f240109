"""PageFormRepository's contract, on the fake and on PostgreSQL: a model's form is recorded once per model, the
last finding wins, and ``auto`` reads every recorded form at once."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest

from batchlane.rows import PageForm

MINUTE = timedelta(minutes=1)


def _model() -> str:
    return f"model-{uuid.uuid4()}"  # the PostgreSQL side is shared by every test: a model of its own


def test_a_model_with_nothing_recorded_has_no_form(uow: Any) -> None:
    model = _model()
    assert uow.page_forms.get(model) is None
    assert model not in uow.page_forms.recorded_forms()


def test_a_doctors_finding_reads_back_whole(uow: Any, now: datetime) -> None:
    model = _model()
    accepted = {"pdf": {"onDemand": True, "batch": False}, "image": {"onDemand": True, "batch": True}}
    uow.page_forms.record_form(model, "image", source="doctor", accepted=accepted, detail="batchlane doctor --live")

    form = uow.page_forms.get(model)
    assert isinstance(form, PageForm)
    assert (form.model_id, form.page_form, form.source, form.accepted, form.detail) == (model, "image", "doctor", accepted, "batchlane doctor --live")
    assert abs(form.recorded_at - now) < MINUTE
    assert uow.page_forms.recorded_forms()[model] == "image"


def test_the_last_finding_wins_and_a_refusal_keeps_no_accepted_map(uow: Any) -> None:
    model, other = _model(), _model()
    uow.page_forms.record_form(model, "pdf", source="doctor", accepted={"pdf": {"onDemand": True}}, detail="doctor")
    uow.page_forms.record_form(other, "pdf", source="doctor")
    uow.page_forms.record_form(model, "image", source="refusal", detail="documents are not supported")

    form = uow.page_forms.get(model)
    assert form is not None
    assert (form.page_form, form.source, form.accepted, form.detail) == ("image", "refusal", {}, "documents are not supported")
    recorded = uow.page_forms.recorded_forms()
    assert (recorded[model], recorded[other]) == ("image", "pdf")  # one row per model, the other model untouched


@pytest.mark.parametrize(("form", "source"), [("auto", "doctor"), ("png", "refusal"), ("pdf", "guess")])
def test_a_form_or_source_outside_the_tables_checks_is_refused(uow: Any, form: str, source: str) -> None:
    model = _model()
    with pytest.raises(Exception):  # the CHECK's error (pg8000's) or the fake's ValueError
        uow.page_forms.record_form(model, form, source=source)
    assert uow.page_forms.get(model) is None


def test_a_form_recorded_inside_a_block_that_raises_is_not_kept(uow: Any) -> None:
    model = _model()
    with pytest.raises(RuntimeError), uow:
        uow.page_forms.record_form(model, "image", source="refusal")
        raise RuntimeError("the step failed")
    assert uow.page_forms.get(model) is None
