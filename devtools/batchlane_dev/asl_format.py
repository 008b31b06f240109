"""The one layout of ``statemachines/*.asl.json``: 2-space indent, lists of plain values on one line, real characters.

``python -m batchlane_dev.asl_format`` rewrites the files in place (key order kept);
``tests/unit/test_statemachines.py`` fails when a file is not in this layout.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from deployment.topology import STATEMACHINES_DIR

# A bare ${name} (a number or a JSON block substituted later) is not JSON: carried through as a tagged string.
_BARE_PLACEHOLDER = re.compile(r'(?<!")\$\{([A-Za-z0-9_]+)\}(?!")')
_TAG = "\x00placeholder:"


def _dump(value: Any, depth: int = 0) -> str:
    pad = "  " * depth
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{pad}  {json.dumps(key, ensure_ascii=False)}: {_dump(item, depth + 1)}" for key, item in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list):
        if all(not isinstance(item, (dict, list)) for item in value):
            return "[" + ", ".join(_dump(item) for item in value) + "]"
        return "[\n" + ",\n".join(f"{pad}  {_dump(item, depth + 1)}" for item in value) + "\n" + pad + "]"
    if isinstance(value, str) and value.startswith(_TAG):
        return "${" + value[len(_TAG) :] + "}"
    return json.dumps(value, ensure_ascii=False)


def formatted(text: str) -> str:
    """``text`` (an ASL file, placeholders and all) in the one layout."""
    data = json.loads(_BARE_PLACEHOLDER.sub(lambda m: json.dumps(_TAG + m.group(1)), text))
    return _dump(data) + "\n"


def main() -> int:
    for path in sorted(STATEMACHINES_DIR.glob("*.asl.json")):
        text = path.read_text(encoding="utf-8")
        if (new := formatted(text)) != text:
            path.write_text(new, encoding="utf-8")
            print(f"reformatted {path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
