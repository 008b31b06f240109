"""The JSON shape is described, and closed (issue 41.3): every object docs/api/openapi.yaml declares (an API answer, a
request body, a CLI --json object) lists its properties with ``additionalProperties: false`` and says which are
required; a map whose keys are data (headers, object keys) says what its values are. batchlane_dev.contract checks
answers against it: the offline API in tests, and every CLI command's --json (tests/e2e/test_cli_json.py)."""

from __future__ import annotations

from typing import Any

import pytest
from openapi_spec_validator import validate

from batchlane_dev.contract import component_errors, response_errors, spec


def _objects(node: Any, where: str = "") -> list[tuple[str, dict[str, Any]]]:
    found = []
    if isinstance(node, dict):
        if node.get("type") == "object":
            found.append((where, node))
        for key, value in node.items():
            found += _objects(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _objects(value, f"{where}/{i}")
    return found


def test_the_document_is_valid_openapi():
    validate(spec())


def test_every_object_is_closed_and_says_which_properties_are_required():
    open_objects = [w for w, o in _objects(spec()) if "properties" in o and o.get("additionalProperties") is not False]
    assert open_objects == [], "objects that accept any extra property"
    # OpenAPI 3.0 allows no empty `required`: an object whose every field is optional (a request's options) says so
    unsaid = [w for w, o in _objects(spec()) if "properties" in o and "required" not in o and not o.get("x-every-field-optional")]
    assert unsaid == [], "objects that do not say which properties are always there"
    undeclared = [w for w, o in _objects(spec()) if "properties" not in o and not isinstance(o.get("additionalProperties"), dict)]
    assert undeclared == [], "objects that declare neither their properties nor what a data map holds"


def test_an_error_is_one_object_under_error_with_a_code_and_a_message():
    assert component_errors({"error": {"code": "PDF_EMPTY", "message": "The file is empty."}}, "Error") == []
    assert component_errors({"code": "PDF_EMPTY", "message": "The file is empty."}, "Error") != []  # the old top-level shape
    assert component_errors({"error": {"code": "X", "message": "m"}, "errorId": "X"}, "Error") != []  # nothing beside it


@pytest.mark.parametrize(
    ("answer", "wrong"),
    [
        ({"usdPerMonth": 3500.0}, "a float where the API writes a decimal string"),
        ({"eta_seconds": 0}, "a snake_case name"),
    ],
)
def test_an_answer_off_its_schema_is_named(answer: dict[str, Any], wrong: str):
    assert response_errors("GET", "/api/v1/budget", 200, __import__("json").dumps(answer).encode()), wrong


def test_the_cancel_and_process_now_answers_are_their_schemas():
    """The use cases' outcomes as the API writes them, against CancelOutcome and ProcessNowOutcome: the lane's state is
    ``laneState`` in both (issue 44.4), and nothing the schema does not name."""
    from batchlane.batch.process_now import ProcessNowOutcome
    from batchlane.operations.cancel import CancelOutcome

    job, file = "9e007a19-6fa8-4c8c-a84b-d6ac0ccfda31", "0c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"
    cancelled = CancelOutcome(job, file, "waiting_batch", hold_released=True, lane_state="submitted", batch_stop_requested=True).to_json()
    assert cancelled["laneState"] == "submitted"
    assert component_errors(cancelled, "CancelOutcome") == []
    resumed = ProcessNowOutcome(job, file, "preparing", "left_batch_lane", resumed=True).to_json()
    assert resumed["laneState"] == "preparing"
    assert component_errors(resumed, "ProcessNowOutcome") == []
