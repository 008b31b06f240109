"""One JSON shape for folder jobs (issues 24.4, 41.3): the posted spec, report.jsonl and the OpenAPI document are camelCase
only (decision 0031 removed the snake_case aliases), amounts decimal strings."""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from batchlane.domain.errors import InputError
from batchlane.folders.advance import report_line
from batchlane.folders.spec import FolderJobSpec, parse_spec
from batchlane.naming import camel
from batchlane.rows import FolderFile
from batchlane_dev.cli.folder_commands import folder_spec

OPENAPI = Path(__file__).resolve().parents[2] / "docs" / "api" / "openapi.yaml"
FOLDER = "s3://docs/legal/"
CAMEL = {
    "input": {"folder": FOLDER},
    "output": {"onExisting": "replace"},
    "policy": {"maxPagesPerDocument": 40, "maxRetries": 0},
    "notifications": {"callbackUrl": "https://example.com/hook", "callbackEvents": ["job.completed"], "callbackHeaders": {"X-Team": "legal"}},
}


def test_a_spec_posted_camel_case_is_understood() -> None:
    posted = parse_spec(CAMEL)
    assert posted.output.on_existing == "replace" and posted.policy.max_retries == 0 and posted.policy.max_pages_per_document == 40
    assert posted.notifications is not None and posted.notifications.callback_url == "https://example.com/hook"
    assert posted.notifications.callback_headers == {"X-Team": "legal"}


@pytest.mark.parametrize(
    "legacy",
    [
        {"input": {"folder": FOLDER}, "output": {"on_existing": "replace"}},
        {"input": {"folder": FOLDER}, "policy": {"max_retries": 0}},
        {"input": {"folder": FOLDER}, "notifications": {"callback_url": "https://example.com/hook"}},
    ],
)
def test_a_spec_posted_with_a_snake_case_name_is_refused_naming_it(legacy: dict[str, Any]) -> None:
    """The deprecated aliases are gone (issue 41.3): one spelling, and a wrong one says which field."""
    ((section, fields),) = ((k, v) for k, v in legacy.items() if k != "input")
    (name,) = fields
    with pytest.raises(InputError) as refused:
        parse_spec(legacy)
    said = str(refused.value)
    assert (refused.value.error_id == "SPEC_INVALID" and f"{section}.{name}" in said) or f"{section}.{camel(name)}" in said, said


def test_a_stored_spec_reads_back_whatever_the_names_it_was_stored_with() -> None:
    stored = parse_spec(CAMEL).model_dump(mode="json")  # the repository keeps the field names
    assert FolderJobSpec.model_validate(stored) == parse_spec(CAMEL)


def test_a_bad_value_is_refused_naming_the_camel_case_field() -> None:
    with pytest.raises(InputError) as bad:
        parse_spec({"input": {"folder": FOLDER}, "policy": {"maxRetries": 11}})
    assert bad.value.error_id == "SPEC_INVALID" and "maxRetries" in str(bad.value)


def test_the_cli_posts_the_camel_case_spec() -> None:
    spec = folder_spec(f"{FOLDER}", layout="flat", output="s3://docs/out/", include=(), exclude=(), replace=True)
    assert spec["output"] == {"layout": "flat", "folder": "s3://docs/out/", "onExisting": "replace"}
    assert parse_spec(spec).output.on_existing == "replace"


ROW = FolderFile(
    folder_job_id="fj-" + "0" * 24,
    source_key="legal/a.pdf",
    status="completed",
    output_key="legal/a.md",
    size_bytes=100,
    file_id=None,
    conversion_job_id=None,
    pages=12,
    pages_failed=1,
    attempts=1,
    error_id=None,
    error_message=None,
    lane="on_demand",
    lane_reason="deadline",
    cost_usd=Decimal("0.120000"),
    reported=False,
    waits_for_pages=None,
    started_at=None,
    finished_at=None,
)


def test_a_report_line_is_camel_case_only_with_its_cost_a_decimal_string() -> None:
    line = json.loads(json.dumps(report_line(ROW, "docs"), sort_keys=True))
    assert (line["pagesFailed"], line["laneReason"], line["costUsd"], line["outputUris"]) == (1, "deadline", "0.120000", ["s3://docs/legal/a.md"])
    assert (line["error"], line["outputKeys"]) == (None, ["legal/a.md"])
    failed = report_line(dataclasses.replace(ROW, status="failed", error_id="PDF_ENCRYPTED", error_message="locked"), "docs")
    assert failed["error"]["code"] == "PDF_ENCRYPTED" and failed["error"]["nextStep"].startswith("Remove the password")  # one error object
    assert [k for k in line if "_" in k] == []  # no snake_case name beside any more


def _schemas() -> dict[str, Any]:
    return yaml.safe_load(OPENAPI.read_text())["components"]["schemas"]  # type: ignore[no-any-return]


def _field_names(node: Any, path: str = "") -> list[str]:
    """Every property name the document declares, with where it is (data maps have no ``properties``)."""
    found = []
    if isinstance(node, dict):
        for name in node.get("properties") or {}:
            found.append(f"{path}.{name}")
        for key, value in node.items():
            found += _field_names(value, f"{path}/{key}")
    elif isinstance(node, list):
        for value in node:
            found += _field_names(value, path)
    return found


def test_every_field_the_openapi_document_declares_is_camel_case() -> None:
    assert [f for f in _field_names(yaml.safe_load(OPENAPI.read_text())) if "_" in f.rsplit(".", 1)[-1]] == []


def _aliases(model: type[BaseModel]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        kind = field.annotation
        nested = next((a for a in getattr(kind, "__args__", (kind,)) if isinstance(a, type) and issubclass(a, BaseModel)), None)
        out[camel(name)] = _aliases(nested) if nested else None
    return out


def _declared(schema: dict[str, Any]) -> dict[str, Any]:
    return {name: (_declared(prop) if "properties" in prop else None) for name, prop in schema["properties"].items()}


def test_the_published_spec_schema_names_exactly_the_fields_the_api_reads() -> None:
    assert _declared(_schemas()["FolderJobSpec"]) == _aliases(FolderJobSpec)


def test_the_published_report_line_schema_names_exactly_the_camel_case_keys_written() -> None:
    schema = _schemas()["FolderReportLine"]
    written = set(report_line(ROW, "docs"))
    assert set(schema["properties"]) == written == set(schema["required"])
