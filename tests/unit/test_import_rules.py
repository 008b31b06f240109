"""Who may import what (docs/architecture.md, "The map"): read from the source with ``ast``, no import executed.

- ``batchlane.domain`` imports the standard library and itself only;
- boto3 / botocore only under ``batchlane.aws``;
- pg8000 only under ``batchlane.db``;
- pypdfium2 only under ``batchlane.pdf``, where every pdfium call holds ``PDFIUM_LOCK`` (tests/unit/test_pdfium_lock.py);
- the runtime package (the Lambda layer) never imports the developer tooling (``batchlane_dev``);
- SQL (a string constant starting ``SELECT ``, ``UPDATE ``, ``INSERT INTO``, ``DELETE FROM``) sits only under
  ``batchlane.db``, and in the on-demand limiter, which keeps its lease SQL behind the ``Limiter`` protocol.

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


def broken_rules(module: str, imports: set[str]) -> set[str]:
    """The rules ``module`` (a dotted name under ``batchlane``) breaks with ``imports``."""
    broken = set()
    tops = {_top(name) for name in imports}
    if module.startswith("batchlane.domain"):
        outside = {name for name in imports if _top(name) not in sys.stdlib_module_names and not name.startswith("batchlane.domain")}
        if outside:
            broken.add("domain-stdlib-only")
    if tops & {"boto3", "botocore"} and not module.startswith("batchlane.aws"):
        broken.add("boto3-only-in-aws")
    if "pg8000" in tops and not module.startswith("batchlane.db"):
        broken.add("pg8000-only-in-db")
    if "pypdfium2" in tops and not module.startswith("batchlane.pdf"):
        broken.add("pdfium-only-in-pdf")
    if "batchlane_dev" in tops:
        broken.add("runtime-not-dev")
    return broken


def runtime_modules() -> dict[str, set[str]]:
    modules = {}
    for path in sorted(RUNTIME.rglob("*.py")):
        rel = path.relative_to(RUNTIME.parent).with_suffix("")
        module = ".".join(rel.parts)
        modules[module] = imported_modules(path.read_text(encoding="utf-8"), module)
    return modules


def test_the_runtime_package_keeps_the_import_rules() -> None:
    modules = runtime_modules()
    assert len(modules) > 50, "the runtime package was not found"
    found = {module: ",".join(sorted(rules)) for module, imports in modules.items() if (rules := broken_rules(module, imports))}
    assert found == KNOWN_VIOLATIONS


@pytest.mark.parametrize(
    ("module", "source", "rule"),
    [
        ("batchlane.domain.cost", "import pydantic\n", "domain-stdlib-only"),
        ("batchlane.domain.cost", "from batchlane.db import jobs\n", "domain-stdlib-only"),
        ("batchlane.domain.cost", "from ..config import Settings\n", "domain-stdlib-only"),
        ("batchlane.batch.submit", "import boto3\n", "boto3-only-in-aws"),
        ("batchlane.api.uploads", "from botocore.exceptions import ClientError\n", "boto3-only-in-aws"),
        ("batchlane.conversion.chunk", "import pg8000.native\n", "pg8000-only-in-db"),
        ("batchlane.runtime", "from batchlane_dev.local import stack\n", "runtime-not-dev"),
        ("batchlane.conversion.dryrun", "import pypdfium2\n", "pdfium-only-in-pdf"),
    ],
)
def test_each_rule_fails_on_a_planted_violation(module: str, source: str, rule: str) -> None:
    assert rule in broken_rules(module, imported_modules(source, module))


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("batchlane.domain.cost", "import decimal\nfrom .prices import PRICES\n"),
        ("batchlane.aws.s3", "import boto3\nfrom botocore.exceptions import ClientError\n"),
        ("batchlane.db.connection", "import pg8000.native\n"),
        ("batchlane.pdf.survey", "import pypdfium2\n"),
    ],
)
def test_allowed_imports_break_no_rule(module: str, source: str) -> None:
    assert broken_rules(module, imported_modules(source, module)) == set()


SQL_STARTS = ("SELECT ", "UPDATE ", "INSERT INTO", "DELETE FROM")
SQL_ALLOWED = ("batchlane.db", "batchlane.ondemand.limiter")


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
    assert not sql_outside_db("batchlane.db.batch_rows", source)


def test_prose_that_mentions_sql_breaks_no_rule() -> None:
    source = '"""Guarded UPDATE ... WHERE status = ANY(...)."""\n\ndef f():\n    """SELECT ... FOR UPDATE serialises."""\n    return "Update the hold"\n'
    assert not sql_outside_db("batchlane.operations.cancel", source)
