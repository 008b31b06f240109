"""One naming convention for every ``--json`` output: the API's camelCase (docs/operations.md).

The CLI's commands print what the API answers, already camelCase. ``demo --json`` builds
its report in Python (snake_case): it is printed camelCase too, with the old snake_case
fields alongside for one release (``LEGACY_UNTIL``), so scripts written against them keep
working while they move.
"""

from __future__ import annotations

from typing import Any

LEGACY_UNTIL = "0.3.0"  # the release that drops the snake_case fields of `demo --json`


def camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def api_case(value: Any) -> Any:
    """Every dict key camelCase, recursively (values untouched)."""
    if isinstance(value, dict):
        return {camel(str(k)): api_case(v) for k, v in value.items()}
    if isinstance(value, list):
        return [api_case(v) for v in value]
    return value


def with_legacy_fields(value: Any) -> Any:
    """camelCase keys, plus each snake_case key that differs, at every level (deprecated, one release)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            converted = with_legacy_fields(item)
            out[camel(str(key))] = converted
            if camel(str(key)) != key:
                out[str(key)] = converted
        return out
    if isinstance(value, list):
        return [with_legacy_fields(v) for v in value]
    return value
