"""One JSON convention: camelCase, like the API's own fields (docs/operations.md "One JSON shape", decision 0031).

Objects first built with snake_case keys (a folder job's stored spec, the demo's report) are answered
camelCase. Keys starting with ``_`` (internal options) and the keys of data maps (``DATA_MAPS``: the user's
options and headers, object keys, file types, environment names) are left as they are.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

# Maps whose keys are data, not field names (the user's options and headers, object keys, file types): kept as they are.
DATA_MAPS = frozenset({"options", "failing", "by_type", "byType", "callback_headers", "callbackHeaders", "headers", "env"})


def camel(key: str) -> str:
    if key.startswith("_"):
        return key
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def api_case(value: Any) -> Any:
    """Every dict key camelCase, recursively (values untouched; the keys of ``DATA_MAPS`` kept)."""
    if isinstance(value, dict):
        return {camel(str(k)): v if k in DATA_MAPS else api_case(v) for k, v in value.items()}
    if isinstance(value, list):
        return [api_case(v) for v in value]
    return value


def money(value: Any) -> str | None:
    """An amount of USD as the API writes it: a decimal string (``"0.671317"``, ``"0"``), never a float."""
    if value is None:
        return None
    if isinstance(value, Decimal):
        return format(value, "f")  # as stored (numeric(12,6) answers "0.120000"), like the API's own fields
    amount = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    return format(amount.normalize(), "f") if amount else "0"


def _is_money(key: str) -> bool:
    return key.endswith(("Usd", "_usd"))


def api_json(value: Any) -> Any:
    """:func:`api_case`, and every amount (a key ending ``Usd``) a decimal string: the API's shape for an object a
    report first built with snake_case keys and floats (the demo's report, a folder job's figures)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = camel(str(key))
            if key in DATA_MAPS:
                out[name] = item
            elif _is_money(str(key)) and isinstance(item, (int, float, Decimal)) and not isinstance(item, bool):
                out[name] = money(item)
            else:
                out[name] = api_json(item)
        return out
    if isinstance(value, list):
        return [api_json(v) for v in value]
    return value
