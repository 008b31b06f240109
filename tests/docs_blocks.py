"""The fenced blocks of README.md and docs/operations.md, and which test accounts for each (issue 24).

A block's language says what it is: ``bash`` a block of commands (run, or checked against the CLI
when it is a synopsis with ``[options]``), ``python`` code that runs, ``text`` / ``json`` a sample of
output or of a body. Every ``bash`` and ``python`` block is in ``ACCOUNTED``: the test that runs it, the
lines that test runs (so the document and the test move together), and the lines it leaves out, each
with its reason. tests/unit/test_docs_blocks.py keeps this complete without the stack;
tests/e2e/test_docs_commands.py runs the blocks against it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", "docs/operations.md")
COMMAND_LANGUAGES = ("bash", "python")  # what runs; every other block is a sample
SAMPLE_LANGUAGES = ("text", "json")


@dataclass(frozen=True)
class Block:
    document: str  # relative to the repository
    heading: str  # the nearest heading above it, as written ("### Getting the Markdown")
    language: str  # "" for a bare fence
    body: str
    line: int  # 1-based line of the opening fence

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.document, self.heading, self.language)

    @property
    def commands(self) -> list[str]:
        """The command lines, comments (``# …`` after two spaces or at the start) dropped."""
        return command_lines(self.body)


def command_lines(body: str) -> list[str]:
    return [re.sub(r"\s+#\s.*$", "", line).strip() for line in body.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def fenced_blocks(document: str) -> list[Block]:
    """Every fenced block of ``document``, in order, with the heading it sits under."""
    blocks: list[Block] = []
    heading = ""
    opened: tuple[str, int, list[str]] | None = None
    for number, line in enumerate((ROOT / document).read_text().splitlines(), start=1):
        if opened is None:
            if line.startswith("```"):
                opened = (line[3:].strip(), number, [])
            elif re.match(r"#{1,6} ", line):
                heading = line.strip()
        elif line.startswith("```"):
            language, start, body = opened
            blocks.append(Block(document, heading, language, "\n".join(body) + "\n", start))
            opened = None
        else:
            opened[2].append(line)
    assert opened is None, f"{document}:{opened[1] if opened else 0}: a fence that never closes"
    return blocks


def block(document: str, heading: str, language: str = "bash") -> Block:
    """The one ``language`` block under ``heading``."""
    found = [b for b in fenced_blocks(document) if b.key == (document, heading, language)]
    assert len(found) == 1, f"{document}: {len(found)} {language} blocks under {heading!r}"
    return found[0]


@dataclass(frozen=True)
class Accounted:
    test: str  # "path::function" of the test that runs (or checks) the block
    runs: tuple[str, ...] = ()  # its command lines that test runs, in order (a python block: empty, it runs whole)
    left_out: dict[str, str] = field(default_factory=dict)  # command line -> why no test runs it
    synopsis: bool = False  # a usage summary (``[--opt]``, ``a | b``): every line's commands and options are checked against the CLI
    evidence: str = ""  # what the test's source names to read this block (default: the block's heading)


DOCS_TEST = "tests/e2e/test_docs_commands.py"

OPERATOR_FLOW = (
    "batchlane local up",
    "batchlane convert big.pdf --detach",
    "batchlane jobs status <job> --watch",
    "batchlane process-now <job>",
    "batchlane cancel <job>",
    "batchlane local down",
)

GETTING_THE_MARKDOWN = (
    "batchlane convert book.pdf",
    "batchlane convert book.pdf -o out/book.md",
    "batchlane jobs download JOB -o copy.md",
    "batchlane jobs pages JOB --status failed",
    "batchlane retry JOB -o book.md --force",
)

A_WHOLE_FOLDER = (
    "batchlane convert s3://my-bucket/contracts/ --dry-run",
    "batchlane convert s3://my-bucket/contracts/",
    "batchlane convert ./contracts/",
    "batchlane jobs files fj-… --status failed",
    "batchlane retry fj-… --error-id PDF_ENCRYPTED",
    "batchlane demo --folder ./papers --json",
)

# The documents' placeholders and what the offline tests put in their place. ``s3://my-bucket/contracts/``
# is "a folder granted to you": offline, the default user's own home in the folder bucket.
PLACEHOLDERS = {
    "JOB": "a job id the block's own commands created",
    "<job>": "a job id the block's own commands created",
    "fj-…": "a folder job id the block's own commands created",
    "s3://my-bucket/contracts/": "s3://batchlane-offline-folders/users/local-user/contracts/",
}


SYNOPSIS_TEST = f"{DOCS_TEST}::test_the_command_synopses_name_commands_and_options_the_cli_has"

ACCOUNTED: dict[tuple[str, str, str], Accounted] = {
    ("README.md", "# batchlane", "bash"): Accounted(
        f"{DOCS_TEST}::test_make_demo_in_the_readme_runs_as_written",
        ("make demo", ". .venv/bin/activate"),
        {"make test": "the whole suite, which CI runs; this test is one of its tests"},
    ),
    ("README.md", "## The command line", "bash"): Accounted(SYNOPSIS_TEST, synopsis=True, evidence="SYNOPSES"),
    ("README.md", "### Getting the Markdown", "bash"): Accounted(f"{DOCS_TEST}::test_getting_the_markdown_in_the_readme_runs_as_written", GETTING_THE_MARKDOWN),
    ("README.md", "### A whole folder", "bash"): Accounted(f"{DOCS_TEST}::test_a_whole_folder_in_the_readme_runs_as_written", A_WHOLE_FOLDER),
    ("README.md", "## Webhooks: verifying a delivery", "python"): Accounted(
        "tests/integration/test_webhooks.py::test_a_converted_job_posts_signed_webhooks_and_publishes_its_event", evidence="readme_verify"
    ),
    ("docs/operations.md", "## The CLI", "bash"): Accounted(SYNOPSIS_TEST, synopsis=True, evidence="SYNOPSES"),
    ("docs/operations.md", "## Trying it offline", "bash"): Accounted(
        f"{DOCS_TEST}::test_the_operator_flow_of_operations_md_and_the_readme_runs_as_written", OPERATOR_FLOW
    ),
    ("docs/operations.md", "### CLI", "bash"): Accounted(SYNOPSIS_TEST, synopsis=True, evidence="SYNOPSES"),
}

SYNOPSES = [key for key, accounted in ACCOUNTED.items() if accounted.synopsis]

# Lines of a synopsis block that are plain commands as well (placeholders aside): a test runs them as written too.
ALSO_RUN: dict[tuple[str, str, str], Accounted] = {
    ("docs/operations.md", "### CLI", "bash"): Accounted(
        f"{DOCS_TEST}::test_a_whole_folder_in_the_readme_runs_as_written",
        ("batchlane jobs status fj-… --watch", "batchlane jobs report fj-… > report.jsonl"),
    ),
}
