"""The `batchlane` command: every subcommand has a --help that says what it does."""

from __future__ import annotations

import click
from click.testing import CliRunner

from batchlane_dev.cli.main import main


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [prefix]
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found.extend(_commands(command, (*prefix, name)))
        else:
            found.append((*prefix, name))
    return found


def test_every_subcommand_has_a_helpful_help():
    runner = CliRunner()
    commands = _commands(main)
    assert ("demo",) in commands and ("local", "up") in commands and ("db", "migrate") in commands
    for path in commands:
        result = runner.invoke(main, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "Usage:" in result.output
        summary = result.output.split("\n\n", 2)[1].strip()
        assert len(summary) > 15, f"`batchlane {' '.join(path)} --help` says too little: {summary!r}"


def test_demo_rejects_bad_page_counts():
    result = CliRunner().invoke(main, ["demo", "--pages", "0"])
    assert result.exit_code == 2 and "0 is not in the range" in result.output
