"""Offline, handler logs go to a file under the workdir (and stderr with --verbose), never to stdout (issue 23, point 9).

stdout is the command's own output: the demo's report, `make bench`'s JSON lines. A handler's
Powertools line there breaks a reader parsing it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from batchlane_dev.local.stack import OfflineStack, StackOptions
from tests.conftest import forget_everything

# batch_callback logs this warning for an aws.bedrock event without arn or status (batch/callback.py).
MESSAGE = "batch event without arn or status ignored"
EVENT = {"source": "aws.bedrock", "detail-type": "Batch Inference Job State Change", "detail": {}}


def _log_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("in_worker", [False, True], ids=["in-process", "worker-process"])
def test_a_handler_warning_goes_to_the_log_file_not_stdout(stack_factory, capfd, in_worker):
    stack = stack_factory(schedules=False, process_functions=frozenset({"batch_callback"}) if in_worker else frozenset())
    capfd.readouterr()  # what the start printed is not under test
    result = stack.registry.invoke("batch_callback", EVENT)
    assert result.error_type is None, result
    out, err = capfd.readouterr()
    assert MESSAGE not in out and MESSAGE not in err
    assert stack.log_path.parent.parent == stack.options.workdir
    lines = [line for line in _log_lines(stack.log_path) if line.get("message") == MESSAGE]
    assert lines and lines[0]["level"] == "WARNING", stack.log_path.read_text()[-2000:]


def test_verbose_copies_handler_logs_to_stderr_and_stdout_stays_clean(migrated_url, capfd):
    forget_everything(migrated_url)
    with tempfile.TemporaryDirectory(prefix="batchlane-test-logs-") as workdir:
        options = StackOptions(workdir=Path(workdir), faults="time_scale=36000", database_url=migrated_url, verbose=True)
        options.schedule_speedup = 1e-6
        with OfflineStack(options) as stack:
            capfd.readouterr()
            stack.registry.invoke("batch_callback", EVENT)
            out, err = capfd.readouterr()
            assert MESSAGE in err and MESSAGE not in out
            assert any(line.get("message") == MESSAGE for line in _log_lines(stack.log_path))


_IN_A_PROCESS = r"""
import sys, tempfile
from pathlib import Path
from batchlane_dev.local.stack import OfflineStack, StackOptions
options = StackOptions(workdir=Path(sys.argv[1]), faults="time_scale=36000", database_url=sys.argv[2], verbose=sys.argv[3] == "1")
options.schedule_speedup = 1e-6
with OfflineStack(options) as stack:
    stack.registry.invoke("batch_callback", EVENT)
print("the command's own output")
""".replace("EVENT", repr(EVENT))


@pytest.mark.parametrize("verbose", [False, True], ids=["quiet", "verbose"])
def test_a_process_running_the_stack_prints_only_its_own_output_on_stdout(migrated_url, tmp_path, verbose):
    """Through the real file descriptors (pytest's capture would hide a handler bound to the old sys.stdout)."""
    forget_everything(migrated_url)
    done = subprocess.run(
        [sys.executable, "-c", _IN_A_PROCESS, str(tmp_path), migrated_url, "1" if verbose else "0"], capture_output=True, text=True, check=True, env=os.environ
    )
    assert done.stdout.splitlines() == ["the command's own output"], done.stdout[-2000:]
    assert (MESSAGE in done.stderr) is verbose
    assert any(line.get("message") == MESSAGE for line in _log_lines(tmp_path / "logs" / "handlers.log"))
