"""Every Lambda task in every state machine retries the Lambda service errors AWS says to handle.

AWS Step Functions guide, "Handle Lambda service exceptions": retry
Lambda.ServiceException, Lambda.AWSLambdaException, Lambda.SdkClientException and
Lambda.ClientExecutionTimeoutException; unhandled errors, out-of-memory and function
timeouts among them, surface as Lambda.Unknown; a throttled invoke as
Lambda.TooManyRequestsException.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from batchlane.topology import STATEMACHINES_DIR
from batchlane_dev.asl_format import formatted

LAMBDA_SERVICE_ERRORS = (
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.ClientExecutionTimeoutException",
    "Lambda.Unknown",
)
CATCH_ALLS = ("States.ALL", "States.TaskFailed")
PLACEHOLDER = re.compile(r"\$\{(\w+)\}")
SENTINEL_BASE = 900_000  # substituted values are sentinels, so a number can be traced to its ${name}


def _load(path: Path) -> tuple[dict[str, Any], dict[int, str]]:
    names: dict[int, str] = {}

    def sentinel(match: re.Match[str]) -> str:
        value = SENTINEL_BASE + len(names)
        names[value] = match.group(1)
        return str(value)

    return json.loads(PLACEHOLDER.sub(sentinel, path.read_text())), names


def _states(machine: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, state in machine["States"].items():
        yield name, state
        inner = state.get("ItemProcessor") or state.get("Iterator")
        if inner:
            yield from _states(inner)
        for branch in state.get("Branches", []):
            yield from _states(branch)


def _lambda_tasks(path: Path) -> list[tuple[str, dict[str, Any]]]:
    machine, _ = _load(path)
    return [(n, s) for n, s in _states(machine) if s["Type"] == "Task" and ":lambda:" in s["Resource"]]


MACHINES = sorted(STATEMACHINES_DIR.glob("*.asl.json"))


def test_there_are_lambda_tasks_to_check() -> None:
    assert MACHINES and all(_lambda_tasks(path) for path in MACHINES)


@pytest.mark.parametrize("path", MACHINES, ids=lambda p: p.name)
def test_every_lambda_task_retries_every_lambda_service_error(path: Path) -> None:
    missing = {}
    for name, state in _lambda_tasks(path):
        covered: set[str] = set()
        for retrier in state.get("Retry", []):
            errors = retrier["ErrorEquals"]
            covered |= set(LAMBDA_SERVICE_ERRORS) if any(e in CATCH_ALLS for e in errors) else set(errors)
        if gaps := [e for e in LAMBDA_SERVICE_ERRORS if e not in covered]:
            missing[name] = gaps
    assert not missing, f"{path.name}: Lambda service errors not retried: {missing}"


@pytest.mark.parametrize("path", MACHINES, ids=lambda p: p.name)
def test_those_retries_back_off_with_full_jitter_from_a_substituted_interval(path: Path) -> None:
    _, names = _load(path)
    for name, state in _lambda_tasks(path):
        for retrier in state.get("Retry", []):
            errors = retrier["ErrorEquals"]
            if not any(e in LAMBDA_SERVICE_ERRORS or e in CATCH_ALLS for e in errors):
                continue
            where = f"{path.name} {name} {errors}"
            assert retrier.get("JitterStrategy") == "FULL", where
            assert retrier.get("BackoffRate", 1.0) >= 1.5, where
            # ${...}: CDK puts the AWS value from topology.py, the offline stack shrinks it
            assert retrier.get("IntervalSeconds") in names, where


@pytest.mark.parametrize("path", MACHINES, ids=lambda p: p.name)
def test_every_file_has_the_one_layout(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert "\\u" not in text, f"{path.name}: write characters, not \\u escapes"
    assert text == formatted(text), f"{path.name}: run python -m batchlane_dev.asl_format"
