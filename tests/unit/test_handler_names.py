"""Each function's handler names its use-case module (docs/architecture.md, "The map"), read with ``ast``.

The rule: function ``<area>_<step>`` imports its use case from ``batchlane/<package>/<step>.py``, the
package by area: ``batch`` → batch/, ``conversion`` and ``job`` → filejob/, ``folder`` → folders/,
``webhook`` → webhooks/. The functions without an area prefix are in :data:`UNPREFIXED`, one line each.
Besides that module a handler imports only the shared plumbing (:data:`PLUMBING`): no second use case.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = ROOT / "functions"
RUNTIME = ROOT / "layers" / "batchlane" / "batchlane"

AREAS = {"batch": "batch", "conversion": "filejob", "job": "filejob", "folder": "folders", "webhook": "webhooks"}
UNPREFIXED = {
    "api": "batchlane.api.app",  # the HTTP routes over the API's use cases
    "assemble": "batchlane.filejob.assemble",
    "chunk_processor": "batchlane.filejob.chunk",  # admission slot, then the chunk's pages
    "estimate": "batchlane.api.estimates",  # the API's dry runs, answered by their own worker
    "migrate": "batchlane.db.migrate",
    "recovery": "batchlane.operations.recovery",  # resumes stranded jobs (batch/), ends jobs whose workflow ended, fails stalled splits
    "settle": "batchlane.filejob.settle",
}
# What every handler may import besides its use case: the decorator and event models, the wiring, the logger.
PLUMBING = {"batchlane.handlers", "batchlane.runtime", "batchlane.observability", "batchlane.folders.refs"}
# The doctor's two record actions ride on migrate, the one function signed in as the master user.
# recovery also ends folder jobs whose run ended without their end (folders/ sits above operations/).
EXTRA = {"migrate": {"batchlane.db.page_forms", "batchlane.db.service_tiers"}, "recovery": {"batchlane.folders.recovery"}}


def use_case_module(function: str) -> str:
    """The module ``function``'s handler must import its use case from."""
    if function in UNPREFIXED:
        return UNPREFIXED[function]
    area, _, step = function.partition("_")
    if area not in AREAS or not step:
        raise KeyError(f"functions/{function}: no area prefix and not in UNPREFIXED")
    return f"batchlane.{AREAS[area]}.{step}"


def batchlane_imports(source: str) -> set[str]:
    """The ``batchlane`` modules a handler imports (``from batchlane.x import y`` counts as ``batchlane.x.y`` when that is a module)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "batchlane":
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                names.add(candidate if _is_module(candidate) else node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names if alias.name.split(".")[0] == "batchlane")
    return names


def _is_module(name: str) -> bool:
    path = RUNTIME.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def misnamed(function: str, source: str) -> list[str]:
    """What is wrong with ``function``'s handler ``source``: its use-case module missing, or another use case imported."""
    expected = use_case_module(function)
    if not _is_module(expected):
        return [f"{expected} does not exist"]
    imports = batchlane_imports(source)
    problems = [] if expected in imports else [f"does not import {expected}"]
    problems += [f"also imports {name}" for name in sorted(imports - PLUMBING - EXTRA.get(function, set()) - {expected})]
    return problems


def handlers() -> list[Path]:
    return sorted(FUNCTIONS.glob("*/handler.py"))


def test_every_handler_imports_its_use_case_from_the_module_its_name_says() -> None:
    found = {path.parent.name: problems for path in handlers() if (problems := misnamed(path.parent.name, path.read_text(encoding="utf-8")))}
    assert len(handlers()) > 20, "functions/ was not found"
    assert found == {}


def test_the_table_names_only_functions_that_exist() -> None:
    assert set(UNPREFIXED) <= {path.parent.name for path in handlers()}


@pytest.mark.parametrize(
    ("function", "source", "problem"),
    [
        ("batch_claimer", "from batchlane.batch.packer import pack_pool\n", "batchlane.batch.claimer does not exist"),
        ("folder_record", "from batchlane.folders import finish\n", "batchlane.folders.record does not exist"),
        ("folder_advance", "from batchlane.folders.progress import advance\n", "does not import batchlane.folders.advance"),
        ("job_split", "from batchlane.filejob.create import split_job\n", "does not import batchlane.filejob.split"),
        (
            "chunk_processor",
            "from batchlane.filejob.admission import admitted_chunk\nfrom batchlane.filejob.chunk import process_chunk\n",
            "also imports batchlane.filejob.admission",
        ),
        (
            "recovery",
            "from batchlane.batch.resume import resume_stranded\nfrom batchlane.operations.recovery import recover\n",
            "also imports batchlane.batch.resume",
        ),
    ],
)
def test_the_rule_fails_on_a_planted_misname(function: str, source: str, problem: str) -> None:
    assert problem in misnamed(function, source)


def test_a_function_without_an_area_or_a_table_line_fails() -> None:
    with pytest.raises(KeyError):
        use_case_module("reindex")
