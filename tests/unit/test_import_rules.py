"""Who may import what (docs/architecture.md, "The map"): read from the source with ``ast``, no import executed.

- ``batchlane.domain`` imports the standard library and itself only;
- ``batchlane.rows`` (the records repositories return) likewise: the standard library and itself only;
- boto3 / botocore only under ``batchlane.aws``;
- pg8000 only under ``batchlane.db``;
- pypdfium2 only under ``batchlane.pdf``, where every pdfium call holds ``PDFIUM_LOCK`` (tests/unit/test_pdfium_lock.py);
- the runtime package (the Lambda layer) never imports the developer tooling (``batchlane_dev``);
- the use cases (``batchlane.api``, ``.batch``, ``.filejob``, ``.folders``, ``.operations``, ``.webhooks``) see
  ports only: no use-case module imports ``batchlane.db``, ``batchlane.aws`` or ``batchlane.runtime`` (the composition
  root), nor any module that does, however far down; nor reaches for ``svc.db`` or a unit of work's ``runner``.
  They take a ``batchlane.ports.Services`` and its unit of work (``svc.uow()``), so their unit tests run on the
  in-memory fakes with no server. Only the entry points build the services: functions/, devtools, and the API's
  routes (``API_ENTRY_POINTS``);
- SQL (a string constant starting ``SELECT ``, ``UPDATE ``, ``INSERT INTO``, ``DELETE FROM``) sits only under
  ``batchlane.db`` (the on-demand limiter's lease SQL too: db/limiter.py, behind the ``Limiter`` protocol).

Each rule is also checked against a planted violation, so a rule that cannot fail is caught here.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "layers" / "batchlane" / "batchlane"

# Modules that still break a rule, each with the rule it breaks. It only shrinks; an entry that no
# longer breaks its rule fails the test, so the list never hides a fixed module.
KNOWN_VIOLATIONS: dict[str, str] = {}


def imported_modules(source: str, module: str) -> set[str]:
    """Absolute names of every module ``source`` imports (relative imports resolved against ``module``)."""
    names: set[str] = set()
    package = module.rsplit(".", 1)[0]  # the package a relative import starts from ("x.y.__init__" -> "x.y")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base)
                names.add(f"{prefix}.{node.module}" if node.module else prefix)
                if not node.module:
                    names.update(f"{prefix}.{alias.name}" for alias in node.names)
            elif node.module:
                names.add(node.module)
    return names


def _top(name: str) -> str:
    return name.split(".", 1)[0]


USE_CASE_PACKAGES = tuple(f"batchlane.{p}." for p in ("api", "batch", "filejob", "folders", "operations", "webhooks"))
# The API's Lambda entry: the routes and their middleware call runtime.services() and hand it to the use cases.
API_ENTRY_POINTS = frozenset({"batchlane.api.app", "batchlane.api.folder_routes", "batchlane.api.throttle"})
# What a use case never reaches: the adapters and the composition root that builds them.
OUTSIDE_THE_PORTS = ("batchlane.db", "batchlane.aws", "batchlane.runtime")


def is_use_case(module: str) -> bool:
    return module.startswith(USE_CASE_PACKAGES) and module not in API_ENTRY_POINTS


def outside_the_ports(name: str) -> bool:
    return any(name == top or name.startswith(f"{top}.") for top in OUTSIDE_THE_PORTS)


def reaches_the_database(source: str) -> bool:
    """``svc.db`` (any name's ``.db`` where the name is ``svc``) or a ``.runner`` attribute: the database itself, past the ports."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and (node.attr == "runner" or (node.attr == "db" and isinstance(node.value, ast.Name) and node.value.id == "svc")):
            return True
    return False


def broken_rules(module: str, imports: set[str], source: str = "") -> set[str]:
    """The rules ``module`` (a dotted name under ``batchlane``) breaks with ``imports`` (and its ``source``)."""
    broken = set()
    if is_use_case(module) and (any(outside_the_ports(name) for name in imports) or reaches_the_database(source)):
        broken.add("use-cases-through-ports")
    tops = {_top(name) for name in imports}
    if module.startswith("batchlane.domain"):
        outside = {name for name in imports if _top(name) not in sys.stdlib_module_names and not name.startswith("batchlane.domain")}
        if outside:
            broken.add("domain-stdlib-only")
    if module.startswith("batchlane.rows"):
        if {name for name in imports if _top(name) not in sys.stdlib_module_names and not name.startswith("batchlane.rows")}:
            broken.add("rows-stdlib-only")
    if tops & {"boto3", "botocore"} and not module.startswith("batchlane.aws"):
        broken.add("boto3-only-in-aws")
    if "pg8000" in tops and not module.startswith("batchlane.db"):
        broken.add("pg8000-only-in-db")
    if "pypdfium2" in tops and not module.startswith("batchlane.pdf"):
        broken.add("pdfium-only-in-pdf")
    if "batchlane_dev" in tops:
        broken.add("runtime-not-dev")
    return broken


def runtime_sources() -> dict[str, str]:
    return {".".join(path.relative_to(RUNTIME.parent).with_suffix("").parts): path.read_text(encoding="utf-8") for path in sorted(RUNTIME.rglob("*.py"))}


def runtime_modules() -> dict[str, set[str]]:
    return {module: imported_modules(source, module) for module, source in runtime_sources().items()}


def test_the_runtime_package_keeps_the_import_rules() -> None:
    sources = runtime_sources()
    assert len(sources) > 50, "the runtime package was not found"
    found = {module: ",".join(sorted(rules)) for module, source in sources.items() if (rules := broken_rules(module, imported_modules(source, module), source))}
    assert found == KNOWN_VIOLATIONS


@pytest.mark.parametrize(
    ("module", "source", "rule"),
    [
        ("batchlane.domain.cost", "import pydantic\n", "domain-stdlib-only"),
        ("batchlane.domain.cost", "from batchlane.db import jobs\n", "domain-stdlib-only"),
        ("batchlane.domain.cost", "from ..config import Settings\n", "domain-stdlib-only"),
        ("batchlane.rows.jobs", "from batchlane.domain.status import Transition\n", "rows-stdlib-only"),
        ("batchlane.rows.lanes", "from ..ports.lanes import LaneRepository\n", "rows-stdlib-only"),
        ("batchlane.batch.submit", "import boto3\n", "boto3-only-in-aws"),
        ("batchlane.api.uploads", "from botocore.exceptions import ClientError\n", "boto3-only-in-aws"),
        ("batchlane.filejob.chunk", "import pg8000.native\n", "pg8000-only-in-db"),
        ("batchlane.runtime", "from batchlane_dev.local import stack\n", "runtime-not-dev"),
        ("batchlane.filejob.dryrun", "import pypdfium2\n", "pdfium-only-in-pdf"),
        ("batchlane.batch.collect", "from batchlane.db import lanes\n", "use-cases-through-ports"),
        ("batchlane.api.usecases", "from ..db.read_model import PgReads\n", "use-cases-through-ports"),
        ("batchlane.folders.advance", "def f(svc):\n    return svc.db.run('x')\n", "use-cases-through-ports"),
        ("batchlane.operations.cancel", "def f(uow):\n    return uow.runner\n", "use-cases-through-ports"),
        ("batchlane.filejob.chunk", "from batchlane.runtime import Services\n", "use-cases-through-ports"),
        ("batchlane.webhooks.deliver", "from ..aws.signing_secret import SecretsManagerSigningSecret\n", "use-cases-through-ports"),
        ("batchlane.api.usecases", "from batchlane.runtime import services\n", "use-cases-through-ports"),
    ],
)
def test_each_rule_fails_on_a_planted_violation(module: str, source: str, rule: str) -> None:
    assert rule in broken_rules(module, imported_modules(source, module), source)


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("batchlane.domain.cost", "import decimal\nfrom .prices import PRICES\n"),
        ("batchlane.rows.money", "from decimal import Decimal\nfrom batchlane.rows.jobs import JobRow\n"),
        ("batchlane.aws.s3", "import boto3\nfrom botocore.exceptions import ClientError\n"),
        ("batchlane.db.connection", "import pg8000.native\n"),
        ("batchlane.pdf.survey", "import pypdfium2\n"),
        ("batchlane.batch.collect", "from batchlane.ports import LaneRepository\ndef f(svc):\n    return svc.uow().lanes\n"),
        ("batchlane.handlers", "from batchlane.db.uow import PgUnitOfWork\n"),
        ("batchlane.api.app", "from batchlane.runtime import services\n"),
        ("batchlane.batch.collect", "from batchlane.ports import Services\n"),
    ],
)
def test_allowed_imports_break_no_rule(module: str, source: str) -> None:
    assert broken_rules(module, imported_modules(source, module), source) == set()


SQL_STARTS = ("SELECT ", "UPDATE ", "INSERT INTO", "DELETE FROM")
SQL_ALLOWED = ("batchlane.db",)


def sql_strings(source: str) -> list[str]:
    """String constants (f-string parts included) that start like SQL; docstrings are prose, not SQL."""
    tree = ast.parse(source)
    scopes = [node for node in ast.walk(tree) if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
    docstrings = {id(scope.body[0].value) for scope in scopes if scope.body and isinstance(scope.body[0], ast.Expr)}
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings and node.value.lstrip().startswith(SQL_STARTS)
    ]


def sql_outside_db(module: str, source: str) -> bool:
    return not module.startswith(SQL_ALLOWED) and bool(sql_strings(source))


def test_sql_lives_in_db_only() -> None:
    offenders = sorted(
        module
        for path in RUNTIME.rglob("*.py")
        if sql_outside_db(module := ".".join(path.relative_to(RUNTIME.parent).with_suffix("").parts), path.read_text(encoding="utf-8"))
    )
    assert offenders == []


@pytest.mark.parametrize(
    "source",
    [
        'ROWS = "SELECT * FROM chunk_jobs"\n',
        'def f(db):\n    return db.run("""\n        UPDATE files SET status = :s""")\n',
        'def f(db, t):\n    return db.run(f"INSERT INTO {t} VALUES (1)")\n',
        'def f(db):\n    db.run("DELETE FROM ondemand_leases")\n',
    ],
)
def test_the_sql_rule_fails_on_a_planted_violation(source: str) -> None:
    assert sql_outside_db("batchlane.batch.collect", source)
    assert not sql_outside_db("batchlane.db.lanes", source)


def test_prose_that_mentions_sql_breaks_no_rule() -> None:
    source = '"""Guarded UPDATE ... WHERE status = ANY(...)."""\n\ndef f():\n    """SELECT ... FOR UPDATE serialises."""\n    return "Update the hold"\n'
    assert not sql_outside_db("batchlane.operations.cancel", source)


# --- No cycles (issue 23.1): between modules, between packages, and no import in a function to hide one ---
# An import inside a function of the runtime package, of another runtime module, is allowed only if listed
# here with the reason (empty: imports sit at the top, where a cycle shows). Third-party lazy imports
# (pypdfium2, PIL: heavy, loaded by the few functions that use them) cannot close a cycle and are not counted.
FUNCTION_IMPORTS_ALLOWED: dict[tuple[str, str], str] = {}


def module_names(root: Path) -> dict[str, Path]:
    """Dotted module names under ``root`` (a package's ``__init__`` is the package's own name)."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def module_edges(module: str, source: str, known: set[str], *, is_package: bool = False) -> tuple[set[str], set[str]]:
    """(runtime modules ``module`` imports, those imported inside a function); ``from p import m`` counts as ``p.m``."""
    package = module if is_package else module.rpartition(".")[0]
    tree = ast.parse(source)
    in_function = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(f)}
    edges: set[str] = set()
    hidden: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                prefix = ".".join(parts[: len(parts) - (node.level - 1)])
                base = f"{prefix}.{node.module}" if node.module else prefix
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        for name in targets:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                edges.add(name)
                if id(node) in in_function:
                    hidden.add(name)
    return edges, hidden


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def package_of(module: str) -> str:
    """``batchlane.batch.packer`` → ``batchlane.batch``; a top-level module is its own node."""
    return ".".join(module.split(".")[:2])


def cycle_report(root: Path) -> dict[str, list]:
    names = module_names(root)
    graph: dict[str, set[str]] = {}
    hidden: list[tuple[str, str]] = []
    for module, path in names.items():
        edges, inner = module_edges(module, path.read_text(encoding="utf-8"), set(names), is_package=path.name == "__init__.py")
        graph[module] = edges
        hidden += [(module, target) for target in sorted(inner) if (module, target) not in FUNCTION_IMPORTS_ALLOWED]
    packages: dict[str, set[str]] = {}
    for module, edges in graph.items():
        packages.setdefault(package_of(module), set()).update(package_of(t) for t in edges if package_of(t) != package_of(module))
    return {"module_cycles": cycles(graph), "package_cycles": cycles(packages), "function_imports": hidden}


def test_the_runtime_package_has_no_import_cycles() -> None:
    assert len(module_names(RUNTIME)) > 50
    assert cycle_report(RUNTIME) == {"module_cycles": [], "package_cycles": [], "function_imports": []}


def _plant(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "batchlane"
    for name, source in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    return root


def test_the_cycle_rule_fails_on_a_planted_module_cycle(tmp_path: Path) -> None:
    root = _plant(tmp_path, {"a/__init__.py": "", "a/x.py": "from batchlane.a import y\n", "a/y.py": "from .x import f\n"})
    assert cycle_report(root)["module_cycles"] == [["batchlane.a.x", "batchlane.a.y"]]


def test_the_cycle_rule_fails_on_a_planted_package_cycle(tmp_path: Path) -> None:
    root = _plant(
        tmp_path, {"a/__init__.py": "", "a/x.py": "from batchlane.b.y import g\n", "b/__init__.py": "", "b/y.py": "", "b/z.py": "from batchlane.a import x\n"}
    )
    report = cycle_report(root)
    assert report["module_cycles"] == [] and report["package_cycles"] == [["batchlane.a", "batchlane.b"]]


def test_the_cycle_rule_fails_on_an_import_hidden_in_a_function(tmp_path: Path) -> None:
    root = _plant(tmp_path, {"a.py": "def f():\n    from batchlane.b import g\n    return g\n", "b.py": "import pypdfium2\n\ndef g():\n    import PIL\n"})
    assert cycle_report(root)["function_imports"] == [("batchlane.a", "batchlane.b")]


def test_the_fakes_have_no_import_cycles() -> None:
    """The in-memory fakes beside the tests (tests/fakes) keep the same rule: no loop, no import hidden in a function."""
    fakes = ROOT / "tests" / "fakes"
    assert len(module_names(fakes)) > 10
    assert cycle_report(fakes) == {"module_cycles": [], "package_cycles": [], "function_imports": []}


def reach_outside_the_ports(module: str, graph: dict[str, set[str]]) -> list[str] | None:
    """The import path from ``module`` to an adapter or the composition root through the layer's modules; None when none."""
    came_from: dict[str, str | None] = {module: None}
    queue = [module]
    while queue:
        current = queue.pop(0)
        if outside_the_ports(current):
            path = [current]
            while (previous := came_from[path[-1]]) is not None:
                path.append(previous)
            return path[::-1]
        for nxt in sorted(graph.get(current, ())):
            if nxt not in came_from:
                came_from[nxt] = current
                queue.append(nxt)
    return None


def layer_graph(root: Path) -> dict[str, set[str]]:
    names = module_names(root)
    return {
        module: module_edges(module, path.read_text(encoding="utf-8"), set(names), is_package=path.name == "__init__.py")[0] for module, path in names.items()
    }


def test_no_use_case_reaches_an_adapter_or_the_composition_root() -> None:
    """Ports only, inward (issue 44.1): not even through another module (the on-demand engine, a shared helper)."""
    graph = layer_graph(RUNTIME)
    use_cases = [module for module in graph if is_use_case(module)]
    assert len(use_cases) > 40
    found = {module: " -> ".join(path) for module in use_cases if (path := reach_outside_the_ports(module, graph))}
    assert found == {}


def test_the_reach_rule_fails_on_a_planted_path() -> None:
    graph = {
        "batchlane.batch.collect": {"batchlane.ports", "batchlane.ondemand"},
        "batchlane.ondemand": {"batchlane.ondemand.limiter"},
        "batchlane.ondemand.limiter": {"batchlane.db.connection"},
        "batchlane.api.app": {"batchlane.runtime"},
    }
    assert reach_outside_the_ports("batchlane.batch.collect", graph) == [
        "batchlane.batch.collect",
        "batchlane.ondemand",
        "batchlane.ondemand.limiter",
        "batchlane.db.connection",
    ]
    assert not is_use_case("batchlane.api.app") and reach_outside_the_ports("batchlane.ports", graph) is None
