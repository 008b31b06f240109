"""The options a job stores are what its user asked for: no underscore key, whatever the caller sent (issue 23.3).

The job's own state (primed answers, lane cost, pause, process now, a retry's scope) is in typed columns."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from batchlane.api.app import ConvertOptions
from batchlane.domain.errors import InputError
from batchlane.filejob.create import normalise_options

ASKED: list[dict[str, Any]] = [
    {},
    {"batchLane": True, "parser": "auto", "highFidelity": True},
    {"modelId": "m", "assembly": "none", "mathpix": False, "callbackUrl": "https://example.org/hook", "callbackEvents": ["job.completed"]},
]


@pytest.mark.parametrize("raw", ASKED)
def test_the_options_the_api_validates_hold_no_underscore_key(raw: dict[str, Any]) -> None:
    validated = ConvertOptions.model_validate(raw).model_dump(by_alias=True, exclude_unset=True)
    stored = normalise_options(validated)
    assert not [key for key in {**validated, **stored} if key.startswith("_")], stored


def test_the_bulk_opt_in_has_one_name_its_first_spelling_is_refused() -> None:
    """Issue 41.3: the `_batchLane` alias is gone with the snake_case ones (decision 0031); one name, batchLane."""
    assert ConvertOptions.model_validate({"batchLane": True}).model_dump(by_alias=True, exclude_unset=True) == {"batchLane": True}
    with pytest.raises(ValueError):
        ConvertOptions.model_validate({"_batchLane": True})
    with pytest.raises(InputError) as refused:
        normalise_options({"_batchLane": True})  # in-process callers (CLI, folders, bench) too
    assert refused.value.error_id == "OPTIONS_INVALID"


@pytest.mark.parametrize("internal", ["_batchPrimed", "_batchCostUsd", "_pauseSettled", "_processNow", "_maxPages", "_retry", "_budgetResumes"])
def test_a_caller_cannot_set_the_jobs_state_through_its_options(internal: str) -> None:
    with pytest.raises(InputError) as refused:
        normalise_options({internal: True})
    assert refused.value.error_id == "OPTIONS_INVALID"
    with pytest.raises(ValueError):  # pydantic's ValidationError: extra keys are forbidden
        ConvertOptions.model_validate({internal: True})


def test_the_docs_and_the_console_name_the_options_as_they_are_stored() -> None:
    """No doc describes a job's state as an ``options._`` key (it has columns since 0030), and the console sends the
    bulk opt-in as ``batchLane``, not its first spelling (issue 44.5)."""
    root = Path(__file__).resolve().parents[2]
    docs = {path.name: found for path in sorted((root / "docs").rglob("*.md")) if (found := re.findall(r"options\._\w+", path.read_text(encoding="utf-8")))}
    assert docs == {}
    console = {
        path.name: found
        for path in sorted((root / "console" / "src").rglob("*.js"))
        if (found := re.findall(r"\b_batchLane\b", path.read_text(encoding="utf-8")))
    }
    assert console == {}
