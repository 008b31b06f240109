"""One JSON convention: camelCase, like the API's own fields (docs/operations.md "One JSON shape").

Objects first built with snake_case keys (folder jobs, the demo's report) are answered camelCase, with
each old snake_case name beside it until release ``LEGACY_UNTIL``, so clients reading them keep working
while they move. Keys starting with ``_`` (internal options) and the keys of data maps (``DATA_MAPS``: the
user's options and headers, object keys, file types) are left as they are.
"""

from __future__ import annotations

from typing import Any

LEGACY_UNTIL = "0.3.0"  # the release that drops the deprecated snake_case names
# Maps whose keys are data, not field names (the user's options and headers, object keys, file types): kept as they are.
DATA_MAPS = frozenset({"options", "failing", "by_type", "byType", "callback_headers", "callbackHeaders", "headers"})


def camel(key: str) -> str:
    if key.startswith("_"):
        return key
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def api_case(value: Any) -> Any:
    """Every dict key camelCase, recursively (values untouched)."""
    if isinstance(value, dict):
        return {camel(str(k)): v if k in DATA_MAPS else api_case(v) for k, v in value.items()}
    if isinstance(value, list):
        return [api_case(v) for v in value]
    return value


def with_legacy_fields(value: Any) -> Any:
    """camelCase keys, plus each snake_case key that differs, at every level (deprecated until ``LEGACY_UNTIL``)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            converted = item if key in DATA_MAPS else with_legacy_fields(item)
            out[camel(str(key))] = converted
            if camel(str(key)) != key:
                out[str(key)] = converted
        return out
    if isinstance(value, list):
        return [with_legacy_fields(v) for v in value]
    return value
