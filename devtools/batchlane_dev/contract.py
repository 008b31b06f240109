"""The one JSON shape, checked: an API answer or a CLI ``--json`` object against docs/api/openapi.yaml (issue 41.3).

The document's components are the schemas (OpenAPI 3.0: ``nullable``), every object closed
(``additionalProperties: false``) with its required fields; openapi-schema-validator (the validator
openapi-spec-validator is built on) checks an instance against them. The offline API server uses
:func:`response_errors` to check every answer it gives in tests (``StackOptions.check_contract``).
"""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from openapi_schema_validator import OAS30Validator, oas30_format_checker
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

SPEC_PATH = Path(__file__).resolve().parents[2] / "docs" / "api" / "openapi.yaml"
_BASE = "urn:batchlane:openapi"


@cache
def spec() -> dict[str, Any]:
    return yaml.safe_load(SPEC_PATH.read_text())  # type: ignore[no-any-return]


def _absolute(node: Any) -> Any:
    """Every local ``$ref`` made absolute, so a schema taken out of the document still resolves."""
    if isinstance(node, dict):
        return {k: (_BASE + v if k == "$ref" and isinstance(v, str) and v.startswith("#") else _absolute(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [_absolute(v) for v in node]
    return node


@cache
def _document() -> dict[str, Any]:
    return _absolute(copy.deepcopy(spec()))  # type: ignore[no-any-return]


@cache
def _registry() -> Registry:
    return Registry().with_resource(_BASE, Resource.from_contents(_document(), default_specification=DRAFT4))


def schema_errors(instance: Any, schema: dict[str, Any]) -> list[str]:
    """Where ``instance`` breaks ``schema`` (a schema of the document, its refs local to it), one line each."""
    validator = OAS30Validator(_absolute(schema), registry=_registry(), format_checker=oas30_format_checker)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}" for e in validator.iter_errors(instance)]


def component_errors(instance: Any, name: str) -> list[str]:
    """Where ``instance`` breaks ``components/schemas/<name>``."""
    if name not in spec()["components"]["schemas"]:
        raise KeyError(f"docs/api/openapi.yaml has no schema {name}")
    return schema_errors(instance, {"$ref": f"#/components/schemas/{name}"})


@cache
def _operations() -> list[tuple[re.Pattern[str], str, dict[str, Any]]]:
    out = []
    for template, item in spec()["paths"].items():
        pattern = re.compile("^" + re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(template)) + "$")
        for method, operation in item.items():
            if method in ("get", "post", "put", "delete", "patch"):
                out.append((pattern, method.upper(), operation))
    return out


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target: Any = spec()
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def response_schema(method: str, path: str, status: int) -> tuple[str, dict[str, Any] | None] | None:
    """(media type, schema) the document gives the answer to ``method path`` with ``status``; None: not documented.
    A JSON answer with no schema answers (media type, None)."""
    for pattern, verb, operation in _operations():
        if verb == method and pattern.match(path):
            responses = operation["responses"]
            response = responses.get(str(status)) or (responses.get("default") if status >= 500 else None)
            if response is None:
                return None
            content = _resolve(response).get("content") or {}
            for media, body in content.items():
                return media, body.get("schema")
            return "", None
    if status in (401, 404):  # a route that does not exist (ROUTE_NOT_FOUND), or no caller at all: the error object
        return "application/json", {"$ref": "#/components/schemas/Error"}
    return None


def response_errors(method: str, path: str, status: int, body: bytes) -> list[str]:
    """What is wrong with an API answer by the document: an undocumented status or route, or a body off its schema."""
    if not path.startswith("/api/"):
        return []
    found = response_schema(method, path, status)
    if found is None:
        return [f"{method} {path} answered {status}, which docs/api/openapi.yaml does not document"]
    media, schema = found
    if media != "application/json" or schema is None:
        return []
    try:
        instance = json.loads(body or b"null")
    except ValueError:
        return [f"{method} {path} {status}: the body is not JSON"]
    return [f"{method} {path} {status}: {e}" for e in schema_errors(instance, schema)]
