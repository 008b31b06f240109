"""Every error a handler raises for a passing reason is retried by every Lambda task, by its own name.

Step Functions matches the error name the task raised, the class's own name: a subclass of a
retried exception is not matched by its parent's name (AWS Step Functions guide, "Handling
errors in Step Functions workflows", error names). So a DatabaseAuthFailed raised while a secret
rotation is half done would fail the job although StoreUnavailable is retried.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import pkgutil
import re
from collections.abc import Iterator
from typing import Any

import pytest

import batchlane
from batchlane.domain.errors import StoreUnavailable
from deployment.topology import FUNCTIONS_DIR, STATE_MACHINES, StateMachineSpec, load_definition

# Roots of the errors that mean "try again later": every subclass, found by walking the tree.
PASSING_ROOTS: tuple[type[BaseException], ...] = (StoreUnavailable,)
CATCH_ALLS = ("States.ALL", "States.TaskFailed")
PLACEHOLDER = re.compile(r"\$\{(\w+)\}")


def _import_everything_a_handler_can_raise() -> None:
    """Import the whole package and every handler, so every exception class is defined."""
    for info in pkgutil.walk_packages(batchlane.__path__, "batchlane."):
        if ".local" not in info.name:
            importlib.import_module(info.name)
    for path in sorted(FUNCTIONS_DIR.glob("*/handler.py")):
        spec = importlib.util.spec_from_file_location(f"_handler_{path.parent.name}", path)
        assert spec and spec.loader
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


def _subclasses(cls: type[BaseException]) -> Iterator[type[BaseException]]:
    yield cls
    for sub in cls.__subclasses__():
        yield from _subclasses(sub)


def passing_error_names() -> set[str]:
    _import_everything_a_handler_can_raise()
    return {cls.__name__ for root in PASSING_ROOTS for cls in _subclasses(root)}


def _states(machine: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, state in machine["States"].items():
        yield name, state
        inner = state.get("ItemProcessor") or state.get("Iterator")
        if inner:
            yield from _states(inner)
        for branch in state.get("Branches", []):
            yield from _states(branch)


def test_the_walk_finds_the_database_subclasses() -> None:
    # The class tree the issue names; the walk must reach them or the check below proves nothing.
    assert {"StoreUnavailable", "DatabaseAuthFailed", "DatabaseTlsError"} <= passing_error_names()


@pytest.mark.parametrize("spec", STATE_MACHINES, ids=lambda s: s.name)
def test_every_lambda_task_retries_every_passing_error_by_its_own_name(spec: StateMachineSpec) -> None:
    names = passing_error_names()
    machine = json.loads(PLACEHOLDER.sub("1", load_definition(spec)))  # what CDK and the offline stack get
    missing: dict[str, list[str]] = {}
    for state_name, state in _states(machine):
        if state["Type"] != "Task" or ":lambda:" not in state["Resource"]:
            continue
        retried: set[str] = set()
        for retrier in state.get("Retry", []):
            errors = retrier["ErrorEquals"]
            retried |= names if any(e in CATCH_ALLS for e in errors) else set(errors)
        if gaps := sorted(names - retried):
            missing[state_name] = gaps
    assert not missing, f"{spec.name}: errors raised for a passing reason that no retrier names: {missing}"
