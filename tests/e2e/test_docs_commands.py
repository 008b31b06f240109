"""Every offline command block of README.md and docs/operations.md, run exactly as written (issue 24).

The blocks are read from the documents themselves: a command added, removed or changed there changes
what runs here, and a command this test does not know how to sequence fails it (so the docs and this
test move together). Each line runs in a shell, in a fresh folder that plays the new user's clone
(``big.pdf``, ``book.pdf``), through the installed ``batchlane`` entry point, against the stack that
the block's own ``batchlane local up`` starts. Only the placeholders ``JOB`` / ``<job>`` are replaced,
by the id the block's ``convert --detach`` printed. The environment (not the commands) makes the demo
small: a 40-page batch threshold, and the emulator refusing page 2 so there is a failed page to list
and retry.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from batchlane_dev.local.pdfgen import make_pdf

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
OPERATIONS = ROOT / "docs" / "operations.md"


def code_block_after(path: Path, heading: str) -> list[str]:
    """The command lines (comments dropped) of the first fenced block under ``heading``."""
    text = path.read_text()
    start = text.index(heading)
    fence = text.index("```", start)
    body = text[text.index("\n", fence) + 1 : text.index("```", fence + 3)]
    return [re.sub(r"\s+#\s.*$", "", line).strip() for line in body.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def readme_operator_flow() -> list[str]:
    """The inline commands of README's "Try the operator flow offline" paragraph, in order."""
    text = README.read_text()
    start = text.index("Try the operator flow offline")
    paragraph = text[start : text.index("\n\n", start)]
    return re.findall(r"`(batchlane [^`]+)`", paragraph)


@pytest.fixture
def clone(tmp_path):  # type: ignore[no-untyped-def]
    """A new user's folder with the documents' example PDFs, and the environment a shell there has."""
    home = tmp_path / "clone"
    home.mkdir()
    (home / "big.pdf").write_bytes(make_pdf(60, blank_every=15))
    (home / "book.pdf").write_bytes(make_pdf(6))
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "BATCHLANE_API_URL", "BATCHLANE_LOCAL_WORKDIR", "BATCHLANE_LOCAL_USER")}
    env.update(
        {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            "BATCHLANE_STATE_HOME": str(tmp_path / "state"),  # this user's own per-user state file
            "BATCH_CONVERSION_MIN_PAGES": "40",
            "BATCH_CONVERSION_MIN_RECORDS": "10",
            "BATCHLANE_PAGES_PER_CHUNK": "20",
            "BATCHLANE_EMULATOR_FAULTS": "refuse_pages=2",
        }
    )
    yield home, env
    subprocess.run(["batchlane", "local", "down"], cwd=home, env=env, capture_output=True, timeout=120, check=False)


def sh(command: str, cwd: Path, env: dict[str, str], *, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def ok(result: subprocess.CompletedProcess[str], *codes: int) -> str:
    assert result.returncode in (codes or (0,)), f"{result.args}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


OPERATOR_FLOW = [
    "batchlane local up",
    "batchlane convert big.pdf --detach",
    "batchlane jobs status <job> --watch",
    "batchlane process-now <job>",
    "batchlane cancel <job>",
    "batchlane local down",
]


def test_the_operator_flow_of_operations_md_and_the_readme_runs_as_written(clone):  # type: ignore[no-untyped-def]
    home, env = clone
    block = code_block_after(OPERATIONS, "## Trying it offline")
    assert block == OPERATOR_FLOW, "docs/operations.md changed: sequence the new block here"
    assert [c.replace("JOB", "<job>") for c in readme_operator_flow()] == OPERATOR_FLOW, "the README's operator flow and operations.md's differ"

    up, convert, watch, process_now, cancel, down = block
    assert "offline stack up" in ok(sh(up, home, env))

    # From any other directory the CLI finds the stack `local up` started here (issue 24.3).
    elsewhere = home.parent / "elsewhere"
    elsewhere.mkdir()
    assert "running (pid" in ok(sh("batchlane local status", elsewhere, env))

    job = ok(sh(convert, home, env)).strip()
    uuid.UUID(job)
    watching = subprocess.Popen(
        ["bash", "-c", watch.replace("<job>", job)], cwd=home, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        # "… or leave the lane now": as the default offline user, as written (issue 24.1)
        moved = ok(sh(process_now.replace("<job>", job), home, env))
        assert "on-demand" in moved
        out, err = watching.communicate(timeout=600)
    finally:
        watching.kill()
    assert watching.returncode == 3, (out, err)  # completed, page 2 refused: the documented exit code 3
    assert "completed with 1 failed page" in out

    # "or cancel": a job of its own that waits for its batch
    second = ok(sh(convert, home, env)).strip()
    cancelled = sh(cancel.replace("<job>", second), home, env)
    assert "cancelled" in ok(cancelled)
    assert "stopped" in ok(sh(down, home, env))
    gone = sh("batchlane local status", elsewhere, env)
    assert gone.returncode == 1 and "not running (looked at" in gone.stdout and str(home.parent / "state") in gone.stdout


GETTING_THE_MARKDOWN = [
    "batchlane convert book.pdf",
    "batchlane convert book.pdf -o out/book.md",
    "batchlane jobs download JOB -o copy.md",
    "batchlane jobs pages JOB --status failed",
    "batchlane retry JOB -o book.md --force",
]


def test_getting_the_markdown_in_the_readme_runs_as_written(clone):  # type: ignore[no-untyped-def]
    home, env = clone
    block = code_block_after(README, "### Getting the Markdown")
    assert block == GETTING_THE_MARKDOWN, "README's 'Getting the Markdown' changed: sequence the new block here"
    ok(sh("batchlane local up", home, env))

    first = sh(block[0], home, env)
    ok(first, 3)  # completed, page 2 refused: exit 3, "marked in the Markdown"
    assert (home / "book.md").read_text().count("> **Page 2 was not converted**") == 1
    ok(sh(block[1], home, env), 3)
    assert (home / "out" / "book.md").exists()
    listed = ok(sh("batchlane jobs list --json", home, env))
    job = __import__("json").loads(listed)["jobs"][0]["conversion"]["jobId"]

    assert "copy.md" in ok(sh(block[2].replace("JOB", job), home, env))
    assert (home / "copy.md").read_text() == (home / "out" / "book.md").read_text()
    pages = ok(sh(block[3].replace("JOB", job), home, env))
    assert "stop_reason=refusal" in pages
    retried = sh(block[4].replace("JOB", job), home, env)
    ok(retried, 3)  # the refusal stays: the retry said so before it charged
    assert "at most $" in retried.stderr and "a retry most likely fails the same way" in retried.stderr
