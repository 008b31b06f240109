"""`batchlane local up | status | down` say what a person needs (issue 41.5): where the stack is (no "@None" in its
database URL), that `down` wipes its jobs, and one JSON object each (LocalStack, LocalStopped in docs/api/openapi.yaml).
The daemon itself is started in tests/e2e/test_docs_commands.py; here its functions are stood in for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from batchlane_dev.cli import main as cli_main
from batchlane_dev.cli.main import _shown, main
from batchlane_dev.contract import component_errors
from batchlane_dev.local import daemon

SOCKET_URL = "postgresql://batchlane_app:s3cret@/postgres?host=/tmp/wd/pgdata"
STATE = {
    "pid": 4242,
    "status": "ready",
    "started_at": "2026-12-06T06:41:45Z",
    "env": {"BATCHLANE_API_URL": "http://127.0.0.1:4000", "BATCHLANE_CONSOLE_URL": "http://127.0.0.1:4000/", "AWS_ENDPOINT_URL": "http://127.0.0.1:4001",
            "AWS_ENDPOINT_URL_BEDROCK": "http://127.0.0.1:4002", "DATABASE_URL": SOCKET_URL},
    "forgottenRows": {},
}  # fmt: skip


def test_a_database_on_a_unix_socket_is_shown_without_its_password_and_without_a_none_host():
    assert _shown("DATABASE_URL", SOCKET_URL) == "postgresql://batchlane_app:***@/postgres?host=/tmp/wd/pgdata"
    assert _shown("DATABASE_URL", "postgresql://u:p@db.example:5432/x") == "postgresql://u:***@db.example:5432/x"


@pytest.fixture
def running(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[Any]:
    stopped: list[Any] = []
    monkeypatch.setattr(daemon, "find_stack", lambda workdir: (STATE, tmp_path, [tmp_path / "state.json"]))
    monkeypatch.setattr(daemon, "stop_daemon", lambda workdir: stopped.append(workdir) or True)
    monkeypatch.setattr(cli_main, "count_jobs", lambda state: 3)
    return stopped


def test_local_up_shows_the_database_host_as_it_is_and_says_down_wipes_the_jobs(running):
    shown = CliRunner().invoke(main, ["local", "up"]).output
    assert "@None" not in shown and "DATABASE_URL=postgresql://batchlane_app:***@/postgres?host=/tmp/wd/pgdata" in shown
    assert "`batchlane local down` stops it and wipes its jobs" in shown


def test_local_up_and_status_json_are_one_object_as_described(running, tmp_path):
    up = CliRunner().invoke(main, ["local", "up", "--json"])
    assert up.exit_code == 0, up.output
    answer = json.loads(up.stdout)
    assert component_errors(answer, "LocalStack") == [] and (answer["running"], answer["started"], answer["apiUrl"]) == (True, False, "http://127.0.0.1:4000")
    status = CliRunner().invoke(main, ["local", "status", "--json"])
    assert component_errors(json.loads(status.stdout), "LocalStack") == []


def test_local_down_says_it_wiped_the_stacks_jobs(running, tmp_path):
    said = CliRunner().invoke(main, ["local", "down"])
    assert said.exit_code == 0 and running == [tmp_path]
    assert "its 3 job(s) and stored files are gone: the next `batchlane local up` starts empty" in said.output
    as_json = json.loads(CliRunner().invoke(main, ["local", "down", "--json"]).stdout)
    assert component_errors(as_json, "LocalStopped") == [] and as_json["jobsWiped"] == 3
    assert "download any Markdown you want to keep first" in " ".join(CliRunner().invoke(main, ["local", "down", "--help"]).output.split())
