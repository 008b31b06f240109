"""Every command block of README.md and docs/operations.md is run (or checked) by a test, or left out with a reason.

Fast and without the stack: the blocks are read from the documents, and each one's entry in
tests/docs_blocks.py must name a test that exists and reads that block, with the block's lines as
that test runs them. A block added to a document with no entry fails here.
"""

from __future__ import annotations

import ast

import pytest

from tests.docs_blocks import ACCOUNTED, ALSO_RUN, COMMAND_LANGUAGES, DOCUMENTS, ROOT, SAMPLE_LANGUAGES, fenced_blocks

BLOCKS = [b for document in DOCUMENTS for b in fenced_blocks(document)]
COMMANDS = [b for b in BLOCKS if b.language in COMMAND_LANGUAGES]


def test_every_fence_says_whether_it_holds_commands_or_a_sample() -> None:
    untagged = [f"{b.document}:{b.line} ({b.language or 'bare'})" for b in BLOCKS if b.language not in COMMAND_LANGUAGES + SAMPLE_LANGUAGES]
    assert untagged == [], "tag each fence: ```bash for commands, ```python for code, ```text / ```json for a sample"


def test_the_documents_have_the_blocks_counted_here() -> None:
    # Not vacuous: 7 bash blocks and the webhook snippet; 7 samples (the demo's report, the flow, 3 JSON bodies, a real
    # book's Markdown and its pages.jsonl line: tests/integration/test_one_document_corpus.py checks those two).
    assert [b.language for b in COMMANDS].count("bash") == 7
    assert [b.language for b in COMMANDS].count("python") == 1
    assert len(BLOCKS) - len(COMMANDS) == 7


def test_every_command_block_is_accounted_for_and_nothing_else() -> None:
    keys = [b.key for b in COMMANDS]
    assert len(keys) == len(set(keys)), "two command blocks under one heading: give each a heading of its own"
    assert sorted(set(keys) - set(ACCOUNTED)) == [], "a command block no test runs: add it to tests/docs_blocks.py ACCOUNTED (a test, or left_out with why)"
    assert sorted(set(ACCOUNTED) - set(keys)) == [], "ACCOUNTED names a block the documents no longer have"


@pytest.mark.parametrize("block", [b for b in COMMANDS if b.key in ACCOUNTED], ids=lambda b: f"{b.document}:{b.heading}")
def test_each_block_s_lines_are_the_ones_its_test_runs(block) -> None:  # type: ignore[no-untyped-def]
    accounted = ACCOUNTED[block.key]
    if block.language == "python" or accounted.synopsis:
        assert not accounted.runs and not accounted.left_out
        return
    assert set(accounted.left_out) <= set(block.commands), "a left-out line the block does not have"
    assert all(why.strip() for why in accounted.left_out.values())
    run = [line for line in block.commands if line not in accounted.left_out]
    assert run == list(accounted.runs), f"{block.document} {block.heading!r} changed: update its test and tests/docs_blocks.py"


@pytest.mark.parametrize("block", [b for b in COMMANDS if b.key in ACCOUNTED and ACCOUNTED[b.key].synopsis], ids=lambda b: f"{b.document}:{b.heading}")
def test_a_synopsis_block_is_only_batchlane_commands(block) -> None:  # type: ignore[no-untyped-def]
    for line in block.commands:
        for part in line.split(" · "):
            assert part.split()[0] in ("batchlane", ".venv/bin/batchlane"), f"{block.document}:{block.line}: {part!r}"


@pytest.mark.parametrize("key", sorted(ALSO_RUN), ids=lambda k: f"{k[0]}:{k[1]}")
def test_a_synopsis_line_also_run_is_one_the_block_has(key) -> None:  # type: ignore[no-untyped-def]
    assert ACCOUNTED[key].synopsis
    (block,) = [b for b in COMMANDS if b.key == key]
    assert set(ALSO_RUN[key].runs) <= set(block.commands), f"{block.document} {block.heading!r} changed: update ALSO_RUN and its test"


@pytest.mark.parametrize(
    "key, accounted", [*ACCOUNTED.items(), *ALSO_RUN.items()], ids=lambda v: f"{v[0]}:{v[1]}" if isinstance(v, tuple) else v.test.split("::")[1]
)
def test_the_test_named_for_a_block_exists_and_reads_it(key, accounted) -> None:  # type: ignore[no-untyped-def]
    path, _, name = accounted.test.partition("::")
    source = (ROOT / path).read_text()
    functions = {node.name: node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.FunctionDef)}
    assert name in functions, f"{accounted.test} does not exist"
    body = ast.get_source_segment(source, functions[name]) or ""
    assert (accounted.evidence or key[1]) in body, f"{accounted.test} does not read {key[1]!r}"
