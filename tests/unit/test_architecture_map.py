"""docs/architecture.md stays a current map: read the tree, and fail on anything the map does not name.

Every runtime package and top-level module of the layer, every state machine file, every Lambda
function and every use-case module a handler imports must appear in "The map"; each row of "Where to
look for X" names a module that exists and a name it defines; the page stays readable in one sitting.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
LAYER = ROOT / "layers" / "batchlane" / "batchlane"
MAX_LINES = 400
PLUMBING = {"batchlane.handlers", "batchlane.runtime", "batchlane.observability"}


def _section(title: str) -> str:
    """The text under ``## <title>`` up to the next second-level heading."""
    text = DOC.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    assert match, f'docs/architecture.md has no "## {title}" section'
    return match.group(1)


def _named(section: str, name: str) -> bool:
    """``name`` in backticks, or a package's module (``folders/refs.py``) as ``refs.py`` in the package's row."""
    if f"`{name}`" in section:
        return True
    package, _, module = name.rpartition("/")
    if package and module:
        rows = [line for line in section.splitlines() if line.startswith(f"| `{package}/` |")]
        return any(f"`{module}`" in row for row in rows)
    return False


def _runtime_entries() -> list[str]:
    packages = [f"{p.name}/" for p in LAYER.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    modules = [p.name for p in LAYER.glob("*.py") if p.name != "__init__.py"]
    return sorted(packages + modules)


def _handler_modules(handler: Path) -> set[str]:
    """The batchlane modules a handler imports, as layer paths (``batch/collect.py``), plumbing left out."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(handler.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or not node.module or not node.module.startswith("batchlane."):
            continue
        if node.module in PLUMBING:
            continue
        candidates = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for dotted in candidates:
            parts = dotted.split(".")[1:]
            path = LAYER.joinpath(*parts).with_suffix(".py")
            if path.exists():
                found.add("/".join(parts) + ".py")
    return found


def test_the_doc_is_readable_in_one_sitting() -> None:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"docs/architecture.md has {len(lines)} lines; keep it to {MAX_LINES} (reasons go to docs/decisions/)"


def test_every_runtime_package_and_module_is_on_the_map() -> None:
    section = _section("The map")
    missing = [name for name in _runtime_entries() if not _named(section, name)]
    assert not missing, f"on the layer but not on the map of docs/architecture.md: {missing}"


def test_every_state_machine_is_on_the_map() -> None:
    section = _section("The map")
    machines = sorted(p.name for p in (ROOT / "statemachines").glob("*.asl.json"))
    assert machines, "no state machine files found"
    missing = [name for name in machines if not _named(section, name)]
    assert not missing, f"state machines not on the map: {missing}"


def test_every_function_and_the_module_its_handler_calls_are_on_the_map() -> None:
    section = _section("The map")
    handlers = sorted((ROOT / "functions").glob("*/handler.py"))
    assert handlers, "no functions found"
    missing: list[str] = []
    for handler in handlers:
        name = handler.parent.name
        if f"`{name}`" not in section:
            missing.append(f"function {name}")
        missing.extend(f"{module} (imported by functions/{name})" for module in sorted(_handler_modules(handler)) if not _named(section, module))
    assert not missing, f"not on the map of docs/architecture.md: {missing}"


def _defines(path: Path, name: str) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
    return False


def test_each_index_answer_names_a_module_and_a_name_that_exist() -> None:
    section = _section("Where to look for X")
    rows = [line for line in section.splitlines() if line.startswith("| ") and "→" in line]
    questions = " ".join(rows).lower()
    assert "pool window" in questions and "markdown accepted" in questions
    wrong: list[str] = []
    for row in rows:
        for module, name in re.findall(r"`([\w/]+\.py)` → `([\w]+)`", row):
            path = LAYER / module if not module.startswith("deployment/") else ROOT / module
            if not path.exists():
                wrong.append(f"{module} does not exist")
            elif not _defines(path, name):
                wrong.append(f"{module} defines no {name}")
    assert not wrong, f'"Where to look for X" in docs/architecture.md: {wrong}'
