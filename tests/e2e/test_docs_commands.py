"""Every offline command block of README.md and docs/operations.md, run exactly as written (issue 24).

The blocks are read from the documents themselves (tests/docs_blocks.py, which
tests/unit/test_docs_blocks.py keeps complete): a command added, removed or changed there changes
what runs here, and a command this test does not know how to sequence fails it (so the docs and this
test move together). Each line runs in a shell, in a fresh folder that plays the new user's clone
(``big.pdf``, ``book.pdf``, ``contracts/``, ``papers/``), through the installed ``batchlane`` entry
point, against the stack that ``batchlane local up`` starts. Only the documents' placeholders
(``docs_blocks.PLACEHOLDERS``: ``JOB`` / ``<job>`` / ``fj-…`` by the id the block's own commands
created, ``s3://my-bucket/contracts/`` by the default user's own folder in the offline bucket) are
replaced. The environment (not the commands) makes the runs small: a 40-page batch threshold, and
the emulator refusing page 2 so there is a failed page to list and retry. The synopsis blocks
(``[--option]``, ``a | b``) are checked against the CLI itself: every command and option they name
exists.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import click
import pytest

from batchlane_dev.cli.folder_commands import offline_s3
from batchlane_dev.local.pdfgen import encrypted_pdf, make_pdf
from tests.docs_blocks import A_WHOLE_FOLDER, ACCOUNTED, ALSO_RUN, GETTING_THE_MARKDOWN, OPERATOR_FLOW, PLACEHOLDERS, ROOT, SYNOPSES, block

README = ROOT / "README.md"


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
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",  # as the README's `. .venv/bin/activate` leaves it
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


def test_the_operator_flow_of_operations_md_and_the_readme_runs_as_written(clone):  # type: ignore[no-untyped-def]
    home, env = clone
    lines = block("docs/operations.md", "## Trying it offline").commands
    assert tuple(lines) == OPERATOR_FLOW, "docs/operations.md changed: sequence the new block here and in tests/docs_blocks.py"
    assert tuple(c.replace("JOB", "<job>") for c in readme_operator_flow()) == OPERATOR_FLOW, "the README's operator flow and operations.md's differ"

    up, convert, watch, process_now, cancel, down = lines
    assert "offline stack up" in ok(sh(up, home, env))

    # From any other directory the CLI finds the stack `local up` started here (issue 24.3).
    elsewhere = home.parent / "elsewhere"
    elsewhere.mkdir()
    assert "running (pid" in ok(sh("batchlane local status", elsewhere, env))

    job = ok(sh(convert, home, env)).strip()
    uuid.UUID(job)
    watching = subprocess.Popen(["bash", "-c", watch.replace("<job>", job)], cwd=home, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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


def test_getting_the_markdown_in_the_readme_runs_as_written(clone):  # type: ignore[no-untyped-def]
    home, env = clone
    lines = block("README.md", "### Getting the Markdown").commands
    assert tuple(lines) == GETTING_THE_MARKDOWN, "README's 'Getting the Markdown' changed: sequence the new block here and in tests/docs_blocks.py"
    ok(sh("batchlane local up", home, env))

    first = sh(lines[0], home, env)
    ok(first, 3)  # completed, page 2 refused: exit 3, "marked in the Markdown"
    assert (home / "book.md").read_text().count("> **Page 2 was not converted**") == 1
    ok(sh(lines[1], home, env), 3)
    assert (home / "out" / "book.md").exists()
    listed = ok(sh("batchlane jobs list --json", home, env))
    job = json.loads(listed)["jobs"][0]["conversion"]["jobId"]

    assert "copy.md" in ok(sh(lines[2].replace("JOB", job), home, env))
    assert (home / "copy.md").read_text() == (home / "out" / "book.md").read_text()
    pages = ok(sh(lines[3].replace("JOB", job), home, env))
    assert "stop_reason=refusal" in pages
    retried = sh(lines[4].replace("JOB", job), home, env)
    ok(retried, 3)  # the refusal stays: the retry said so before it charged
    assert "at most $" in retried.stderr and "a retry most likely fails the same way" in retried.stderr


def fill(line: str, values: dict[str, str]) -> str:
    """``line`` with the documents' placeholders (and only those) replaced."""
    assert set(values) <= set(PLACEHOLDERS), f"not a documented placeholder: {set(values) - set(PLACEHOLDERS)}"
    for placeholder, value in values.items():
        line = line.replace(placeholder, value)
    return line


OFFLINE_CONTRACTS = PLACEHOLDERS["s3://my-bucket/contracts/"]


def test_a_whole_folder_in_the_readme_runs_as_written(clone):  # type: ignore[no-untyped-def]
    """The README's folder block: an S3 folder granted to the user, a local folder, the failures, a retry once fixed, the folder demo;
    and the plain lines of operations.md's folder "### CLI" (status --watch's exit codes, the report to a file)."""
    home, env = clone
    env["BATCHLANE_EMULATOR_FAULTS"] = ""  # no refused page: the failure here is the file's own (a password)
    env["BATCH_POOL_WINDOW_MINUTES"] = "0"  # a few pages do not wait for a fuller Bedrock job: on-demand at once
    lines = block("README.md", "### A whole folder").commands
    assert tuple(lines) == A_WHOLE_FOLDER, "README's 'A whole folder' changed: sequence the new block here and in tests/docs_blocks.py"
    dry_run, convert_s3, convert_local, files_failed, retry, demo_folder = lines
    operations_cli = ("docs/operations.md", "### CLI", "bash")
    assert set(ALSO_RUN[operations_cli].runs) <= set(block(*operations_cli).commands)
    status_watch, report_to_file = ALSO_RUN[operations_cli].runs
    locked = encrypted_pdf(make_pdf(2), "pw")
    for folder in (home / "contracts", home / "papers" / "2024"):
        folder.mkdir(parents=True)
    (home / "contracts" / "doc.pdf").write_bytes(make_pdf(2))
    (home / "contracts" / "locked.pdf").write_bytes(locked)
    (home / "papers" / "a.pdf").write_bytes(make_pdf(2))
    (home / "papers" / "2024" / "b.pdf").write_bytes(make_pdf(3))

    ok(sh("batchlane local up", home, env))
    # The user's own bucket folder: offline, their home in the folder bucket, filled as they would fill theirs.
    s3 = offline_s3(json.loads(ok(sh("batchlane local status --json", home, env)).splitlines()[-1])["env"])
    bucket, _, prefix = OFFLINE_CONTRACTS.removeprefix("s3://").partition("/")
    s3.put_object(Bucket=bucket, Key=f"{prefix}doc.pdf", Body=make_pdf(2))
    s3.put_object(Bucket=bucket, Key=f"{prefix}locked.pdf", Body=locked)
    in_bucket = {"s3://my-bucket/contracts/": OFFLINE_CONTRACTS}

    def folder_jobs() -> list[str]:
        return [j["id"] for j in json.loads(ok(sh("batchlane jobs list --json", home, env)))["folderJobs"]]

    # "files, pages, cost, time; nothing created"
    estimate = ok(sh(fill(dry_run, in_bucket), home, env))
    assert "2 .pdf" in estimate and "locked.pdf: PDF_ENCRYPTED" in estimate and "cost" in estimate and "time" in estimate
    assert folder_jobs() == []

    # "a folder job: doc.pdf -> doc.md next to it" (the password-protected one fails: exit 3)
    converted = sh(fill(convert_s3, in_bucket), home, env)
    ok(converted, 3)
    job = re.search(r"folder job (fj-\S+):", converted.stdout)
    assert job, converted.stdout
    fj = job.group(1)
    assert s3.get_object(Bucket=bucket, Key=f"{prefix}doc.md")["Body"].read().decode().startswith("<!-- Page 1 -->")
    assert folder_jobs() == [fj]

    # "offline: the same, and doc.md lands next to ./contracts/doc.pdf"
    ok(sh(convert_local, home, env), 3)
    assert (home / "contracts" / "doc.md").read_text().startswith("<!-- Page 1 -->")
    assert not (home / "contracts" / "locked.md").exists()

    # "what failed, with error ids"
    failed = ok(sh(fill(files_failed, {"fj-…": fj}), home, env))
    assert f"{prefix}locked.pdf" in failed and "PDF_ENCRYPTED" in failed and f"{prefix}doc.pdf" not in failed

    # operations.md: "exit 0 completed, 3 completed with failures, 1 otherwise"; the report, one line per file
    assert "completed_with_failures" in ok(sh(fill(status_watch, {"fj-…": fj}), home, env), 3)
    ok(sh(fill(report_to_file, {"fj-…": fj}), home, env))
    reported = {row["key"]: (row["error"] or {}).get("code") for row in map(json.loads, (home / "report.jsonl").read_text().splitlines())}
    assert reported == {f"{prefix}doc.pdf": None, f"{prefix}locked.pdf": "PDF_ENCRYPTED"}

    # "only those again, once fixed": the password removed in the bucket, then the retry
    s3.put_object(Bucket=bucket, Key=f"{prefix}locked.pdf", Body=make_pdf(2))
    ok(sh(fill(retry, {"fj-…": fj}), home, env))
    assert s3.get_object(Bucket=bucket, Key=f"{prefix}locked.md")["Body"].read().decode().startswith("<!-- Page 1 -->")
    attempts = {f["key"]: f["attempts"] for f in json.loads(ok(sh(f"batchlane jobs files {fj} --json", home, env)))["files"]}
    assert attempts == {f"{prefix}doc.pdf": 1, f"{prefix}locked.pdf": 2}  # doc.pdf was not converted again
    assert "completed " in ok(sh(fill(status_watch, {"fj-…": fj}), home, env))

    # "offline, end to end: out/papers/" (on the stack `local up` started)
    demo = sh(demo_folder, home, env)
    report = json.loads(ok(demo).splitlines()[-1])
    assert "using the offline stack of `batchlane local up`" in demo.stderr
    assert report["status"] == "completed" and report["files"]["completed"] == 2 and report["pages"]["total"] == 5
    assert (home / "out" / "papers" / "a.md").is_file() and (home / "out" / "papers" / "2024" / "b.md").is_file()


def test_make_demo_in_the_readme_runs_as_written(tmp_path):  # type: ignore[no-untyped-def]
    """README's first block, `make demo`, in a checkout of its own: the 1,200-page job, out/demo-1200-pages.md, a report, nothing left running."""
    lines = block("README.md", "# batchlane").commands
    accounted = ACCOUNTED[("README.md", "# batchlane", "bash")]
    assert [line for line in lines if line not in accounted.left_out] == list(accounted.runs) == ["make demo", ". .venv/bin/activate"]
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in ("Makefile", "pyproject.toml", "requirements.lock", ".venv", "console"):  # the repository's own, unchanged
        (checkout / name).symlink_to(ROOT / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "BATCH", "DATABASE_URL", "CONVERSION_"))}
    env.update({"BATCHLANE_STATE_HOME": str(tmp_path / "state"), "COLUMNS": "200"})
    # `make demo` sets up .venv and the console when they are stale (the README's "plus about a minute the first
    # time"); `make test` has just done so, and a test must not reinstall the checkout's .venv from a copy of it.
    fresh = subprocess.run(["make", "-q", ".venv/.stamp", "console/dist/index.html"], cwd=checkout, env=env, capture_output=True, timeout=60, check=False)
    assert fresh.returncode == 0, "the checkout's .venv or console is out of date: `make venv console` first (make test does)"

    demo = sh(lines[0], checkout, env, timeout=600)  # output captured: a process left behind holding it would hang this call
    ok(demo)
    markdown = checkout / "out" / "demo-1200-pages.md"
    assert all(f"<!-- Page {n} -->" in markdown.read_text() for n in (1, 600, 1200))
    report = demo.stderr
    assert "offline stack up" in report and "not a model" in report
    assert "│ status     │ completed" in report and "1200 (1200 converted, 0 failed, 48 blank)" in report
    assert re.search(r"1152 pages served, \$[\d.]+ · 1152 records: 1152 accepted, 0 fallback · Bedrock Completed", report)
    assert re.search(r"saving 4[7-9]\.\d+%", report) and "out/demo-1200-pages.md" in report
    # issue 41.5: the README's commands say `batchlane …`; its next line puts it on a PATH that lacks it
    bare = {**env, "PATH": os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if Path(p).resolve() != Path(sys.executable).parent.resolve())}
    assert sh("batchlane --version", checkout, bare, timeout=60).returncode == 127, "the test's PATH must not hold batchlane already"
    ok(sh(f"{accounted.runs[1]} && batchlane --version", checkout, bare, timeout=60))


def synopsis_commands(line: str) -> list[tuple[list[str], str]]:
    """The commands one synopsis line names: (command path, the rest of its words), ``a | b`` and ``x · y`` expanded."""
    from batchlane_dev.cli.main import main

    found: list[tuple[list[str], str]] = []
    for part in line.split(" · "):
        words = part.split()
        assert words[0] in ("batchlane", ".venv/bin/batchlane"), part
        path: list[str] = []
        command: click.Command = main
        rest = words[1:]
        while isinstance(command, click.Group) and rest and rest[0] in command.commands and rest[1:2] != ["|"]:
            command = command.commands[rest[0]]
            path.append(rest.pop(0))
        if isinstance(command, click.Group) and "|" in rest:
            found += [(path + alternative.split()[:1], " ".join(alternative.split()[1:])) for alternative in " ".join(rest).split(" | ")]
        else:
            found.append((path, " ".join(rest)))
    return found


def test_the_command_synopses_name_commands_and_options_the_cli_has():  # type: ignore[no-untyped-def]
    """README "The command line", operations.md "The CLI" and "### CLI": every command and option they name exists."""
    from batchlane_dev.cli.main import main

    helped = sh(".venv/bin/batchlane --help", ROOT, dict(os.environ))  # the README block's first line, in the checkout
    assert "convert" in ok(helped) and "7  not authorised" in helped.stdout  # "(also at the end of `batchlane --help`)"
    checked = 0
    for key in SYNOPSES:
        for line in block(key[0], key[1]).commands:
            for path, rest in synopsis_commands(line):
                command: click.Command = main
                for name in path:
                    assert isinstance(command, click.Group) and name in command.commands, f"{key}: {line!r}: no command {' '.join(path)!r}"
                    command = command.commands[name]
                names = {"--help", "-h"} | {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)}
                named = re.findall(r"(?<![\w/.-])(--?[a-zA-Z][\w-]*)", rest)
                assert set(named) <= names, f"{key}: {line!r}: `batchlane {' '.join(path)}` has no {sorted(set(named) - names)}"
                assert not isinstance(command, click.Group) or not rest or rest.startswith("-"), f"{key}: {line!r}: no command {rest.split()[0]!r}"
                checked += 1
    assert checked >= 40
