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

from batchlane_dev.asl_format import formatted
from deployment.topology import DEFINITION_BLOCKS, DEFINITION_CONSTANTS, LAMBDA_SERVICE_ERRORS, STATE_MACHINES, STATEMACHINES_DIR, load_definition

# The six errors AWS names (above), spelled here too: the test must not trust the list it checks.
SIX_ERRORS = (
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

    spec = next(s for s in STATE_MACHINES if s.path == path)
    return json.loads(PLACEHOLDER.sub(sentinel, load_definition(spec))), names  # what CDK and the offline stack get


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
            covered |= set(SIX_ERRORS) if any(e in CATCH_ALLS for e in errors) else set(errors)
        if gaps := [e for e in SIX_ERRORS if e not in covered]:
            missing[name] = gaps
    assert not missing, f"{path.name}: Lambda service errors not retried: {missing}"


@pytest.mark.parametrize("path", MACHINES, ids=lambda p: p.name)
def test_those_retries_back_off_with_full_jitter_from_a_substituted_interval(path: Path) -> None:
    _, names = _load(path)
    for name, state in _lambda_tasks(path):
        for retrier in state.get("Retry", []):
            errors = retrier["ErrorEquals"]
            if not any(e in SIX_ERRORS or e in CATCH_ALLS for e in errors):
                continue
            where = f"{path.name} {name} {errors}"
            assert retrier.get("JitterStrategy") == "FULL", where
            assert retrier.get("BackoffRate", 1.0) >= 1.5, where
            # ${...}: CDK puts the AWS value from topology.py, the offline stack shrinks it
            assert retrier.get("IntervalSeconds") in names, where


@pytest.mark.parametrize("path", MACHINES, ids=lambda p: p.name)
def test_a_throttle_waits_minutes_on_every_lambda_task_before_any_other_retrier_sees_it(path: Path) -> None:
    """Issue 21: Lambda.TooManyRequestsException is the function's concurrency being full, a wait. Step
    Functions uses the FIRST retrier that names an error: so the throttle's ladder comes first on every
    task (never the 4 attempts of a shared block, ~14 s, or a States.ALL), and on AWS it lasts half an hour:
    15 tries (~11 min on AWS, ~20 s offline) ran out under one owner's flood on a limited account
    (tests/e2e/test_tenant_isolation.py), failing jobs SPLIT_FAILED and the folder job FOLDER_JOB_FAILED."""
    _, names = _load(path)
    spec = next(s for s in STATE_MACHINES if s.path == path)
    short = []
    for name, state in _lambda_tasks(path):
        first = state["Retry"][0]
        if first["ErrorEquals"] != ["Lambda.TooManyRequestsException"]:
            short.append(name)
            continue
        interval = float(spec.settings[names[first["IntervalSeconds"]]])
        cap = float(spec.settings[names[first["MaxDelaySeconds"]]])
        waits = [min(cap, interval * first["BackoffRate"] ** n) for n in range(first["MaxAttempts"])]
        assert sum(waits) >= 1_800, f"{path.name} {name}: a throttle waits {sum(waits)} s at most"
        assert first["JitterStrategy"] == "FULL"
    assert not short, f"{path.name}: a throttle reaches another retrier first in {short}"


@pytest.mark.parametrize("path", MACHINES, ids=lambda p: p.name)
def test_every_file_has_the_one_layout(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert "\\u" not in text, f"{path.name}: write characters, not \\u escapes"
    assert text == formatted(text), f"{path.name}: run python -m batchlane_dev.asl_format"


def test_the_shared_list_is_the_six_errors_aws_names() -> None:
    assert LAMBDA_SERVICE_ERRORS == SIX_ERRORS


def _raw_retriers(path: Path) -> Iterator[Any]:
    """Every retrier as written in the file (a block placeholder is a string)."""
    raw = json.loads(PLACEHOLDER.sub("0", path.read_text(encoding="utf-8")).replace('"0"', '"x"'))
    for _, state in _states(raw):
        yield from state.get("Retry", [])


@pytest.mark.parametrize("path", MACHINES, ids=lambda p: p.name)
def test_no_file_writes_the_shared_retry_block_out_by_hand(path: Path) -> None:
    # A hand copy drifts; the file names the block ("${LambdaServiceRetry}") and topology.py writes it in.
    copies = [r for r in _raw_retriers(path) if isinstance(r, dict) and set(SIX_ERRORS) <= set(r["ErrorEquals"])]
    assert not copies, f"{path.name}: use a block from topology.DEFINITION_BLOCKS instead of {copies}"


@pytest.mark.parametrize("spec", STATE_MACHINES, ids=lambda s: s.name)
def test_loading_leaves_no_block_or_count_unwritten(spec: Any) -> None:
    text = load_definition(spec)
    left = {name for name in PLACEHOLDER.findall(text) if name in DEFINITION_BLOCKS or name in DEFINITION_CONSTANTS}
    assert not left, f"{spec.name}: {left}"
