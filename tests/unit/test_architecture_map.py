"""docs/architecture.md stays a current map: read the tree, and fail on anything the map does not name.

Every runtime package and top-level module of the layer, every state machine file, every Lambda
function and every use-case module a handler imports must appear in "The map" (with the use-case function it
calls); each row of "Where to look for X" names a module that exists and a name it defines; the page stays
readable in one sitting. Every file, module and name the docs cite exists (docs/*.md and the decisions), and every
``docs/x.md "Section"`` a docstring cites is a heading or a paragraph's bold lead of that page.
"""

from __future__ import annotations

import ast
import os
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


# --- What the docs cite exists (issue 44.5): files, modules and the names in them ---------------------------------------
# The map, the module notes, the decisions, and every other page of docs/.
CITING_DOCS = [*sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "decisions").glob("0*.md"))]
_SKIP_DIRS = {".venv", ".venv-checkov", "node_modules", ".git", "cdk.out", "build", ".batchlane", "__pycache__"}
_NOT_PYTHON = {"py", "md", "sql", "json", "yaml", "txt", "jsonl", "toml", "asl", "png", "pdf", "in", "cfg", "js", "out", "html", "css"}


def _python_files() -> list[Path]:
    found = []
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS]  # node_modules and the virtualenvs are never walked (checkov's holds a ports.py)
        found += [Path(folder) / name for name in names if name.endswith(".py")]
    return found


def _find(cited: str, files: list[Path]) -> Path | None:
    """A cited ``path.py``: from the repository's root, the layer's package, or as the end of exactly one file's path."""
    for base in (ROOT, LAYER, ROOT / "devtools" / "batchlane_dev"):
        if (base / cited).is_file():
            return base / cited
    ends = [p for p in files if p.as_posix().endswith(f"/{cited}")]
    return ends[0] if len(ends) == 1 or (ends and "/" not in cited) else None  # a bare name in its package's row: any


def _defines_dotted(path: Path, name: str) -> bool:
    """``name`` at the module's top level, or ``Class.member`` (a method or a class attribute)."""
    owner, _, member = name.rpartition(".")
    body = ast.parse(path.read_text(encoding="utf-8")).body
    if not owner:
        return any(
            (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name)
            or (isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.target.id == name)
            or (isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets))
            for n in body
        )
    for node in body:
        if isinstance(node, ast.ClassDef) and node.name == owner:
            return any(
                (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == member)
                or (isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.target.id == member)
                or (isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == member for t in n.targets))
                for n in node.body
            )
    return False


def _python_path(dotted: str) -> tuple[Path, str] | None:
    """``batchlane.filejob.retry.end_retry`` → (the module's file, ``end_retry``); a package or module alone → (file, "")."""
    parts = dotted.split(".")
    roots = {"batchlane": LAYER.parent, "batchlane_dev": ROOT / "devtools"}
    for cut in range(len(parts), 0, -1):
        base = roots[parts[0]].joinpath(*parts[:cut])
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            if path.is_file():
                return path, ".".join(parts[cut:])
    return None


def cited_but_missing(text: str, files: list[Path]) -> list[str]:
    """What ``text`` cites that the tree does not have: ``a/b.py`` files, ``pkg/module.Name`` and "``a/b.py`` ``Name``"
    pairs, and ``batchlane.pkg.module(.Name)`` paths."""
    wrong: list[str] = []
    for cited in re.findall(r"`([\w./-]+\.py)`", text):
        if _find(cited, files) is None:
            wrong.append(f"{cited}: no such file")
    for cited, name in re.findall(r"`([\w./-]+\.py)` `([A-Za-z_][\w.]*)`", text):
        path = _find(cited, files)
        if path is not None and not _defines_dotted(path, name):
            wrong.append(f"{cited} defines no {name}")
    for module, name in re.findall(r"`(\w+(?:/\w+)+)\.([A-Za-z_]\w*(?:\.\w+)?)`", text):
        if {name.split(".")[0], name.rsplit(".", 1)[-1]} & _NOT_PYTHON:
            continue
        path = _find(f"{module}.py", files)
        if path is None:
            wrong.append(f"{module}.py: no such file")
        elif not _defines_dotted(path, name):
            wrong.append(f"{module}.py defines no {name}")
    for dotted in re.findall(r"\b(batchlane(?:_dev)?(?:\.[A-Za-z_]\w*)+)", text):
        found = _python_path(dotted)
        if found is None:
            wrong.append(f"{dotted}: no such module")
        elif found[1] and not _defines_dotted(found[0], found[1]):
            wrong.append(f"{dotted}: {found[0].relative_to(ROOT).as_posix()} defines no {found[1]}")
    return wrong


def test_the_files_and_names_the_docs_cite_exist() -> None:
    files = _python_files()
    wrong = {doc.name: found for doc in CITING_DOCS if (found := cited_but_missing(doc.read_text(encoding="utf-8"), files))}
    assert wrong == {}


def test_the_citation_check_fails_on_planted_drift() -> None:
    files = _python_files()
    assert cited_but_missing("`deployment/topology_grants.py`", files) == ["deployment/topology_grants.py: no such file"]
    assert cited_but_missing("`filejob/chunk.py` `process_chunks`", files) == ["filejob/chunk.py defines no process_chunks"]
    assert cited_but_missing("`api/results.owned_job`", files) == ["api/results.py defines no owned_job"]
    assert cited_but_missing("(batchlane.operations.process_now)", files) == [
        "batchlane.operations.process_now: layers/batchlane/batchlane/operations/__init__.py defines no process_now"
    ]
    assert cited_but_missing("`deployment/grants.py`, `db/limiter.py` `PgLimiter`, `domain/pace.pace_ahead`, batchlane.filejob.retry.end_retry", files) == []


def test_each_functions_row_names_the_use_case_its_handler_calls() -> None:
    """The map's row of a function names every use-case function its handler imports (not only the module)."""
    section = _section("The map")
    wrong: list[str] = []
    for handler in sorted((ROOT / "functions").glob("*/handler.py")):
        row = next((line for line in section.splitlines() if line.startswith(f"| `{handler.parent.name}` |")), "")
        for node in ast.walk(ast.parse(handler.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("batchlane.") and node.module not in PLUMBING:
                found = _python_path(node.module)
                for alias in node.names:
                    module_file = found[0] if found else None
                    is_function = module_file is not None and any(
                        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == alias.name
                        for n in ast.parse(module_file.read_text(encoding="utf-8")).body
                    )
                    if is_function and f"`{alias.name}`" not in row:
                        wrong.append(f"{handler.parent.name} calls {alias.name}")
    assert wrong == []


# --- Docstrings cite sections that exist -------------------------------------------------------------------------------
_CITATION = re.compile(r"(docs/[\w/.-]+\.md),? (\"[^\"\n]+\"(?:,? (?:and )?\"[^\"\n]+\")*)")
# Citations whose section another issue writes, each with why; the list only shrinks (an entry that resolves fails).
PENDING_SECTIONS: dict[tuple[str, str, str], str] = {}  # issue 41 wrote docs/operations.md "One JSON shape", which naming.py cites


def _sections(doc: Path) -> list[str]:
    """Headings, and the bold lead of a paragraph (``**Pause at the hold.**``): what a docstring may cite."""
    text = doc.read_text(encoding="utf-8")
    heads = [re.sub(r"[`*]", "", line.lstrip("#").strip()) for line in text.splitlines() if line.startswith("#")]
    return heads + [lead.rstrip(".:") for lead in re.findall(r"^\*\*([^*\n]+)\*\*", text, flags=re.M)]


def uncited_sections(source: str) -> list[tuple[str, str]]:
    """(doc, section) for each ``docs/x.md "Section"`` in ``source`` whose doc has no such section."""
    wrong = []
    for doc_name, quoted in _CITATION.findall(source):
        doc = ROOT / doc_name
        sections = _sections(doc) if doc.is_file() else []
        wrong += [(doc_name, cited) for cited in re.findall(r"\"([^\"]+)\"", quoted) if not any(s == cited or s.startswith(cited) for s in sections)]
    return wrong


def test_docstrings_cite_sections_that_exist() -> None:
    found: dict[tuple[str, str, str], str] = {}
    for base in ("layers", "functions", "devtools", "infra", "deployment"):
        for path in sorted((ROOT / base).rglob("*.py")):
            for doc_name, section in uncited_sections(path.read_text(encoding="utf-8")):
                found[(path.relative_to(ROOT).as_posix(), doc_name, section)] = "missing"
    assert set(found) == set(PENDING_SECTIONS)


def test_the_section_check_fails_on_a_planted_pointer() -> None:
    assert uncited_sections('"""Why: docs/architecture.md "Module notes"."""') == [("docs/architecture.md", "Module notes")]
    assert uncited_sections('"""See docs/operations.md, "Pause at the hold" and docs/deploy.md "Permissions"."""') == []
