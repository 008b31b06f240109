"""Bad input, one exit code (issue 41.4): a job the split refused for its file exits 2, as a file refused before upload
does; a folder that is the user's mistake (FOLDER_EMPTY, FOLDER_NO_PDF) too. Anything else that failed exits 1."""

from __future__ import annotations

from typing import Any

import pytest

from batchlane.domain.advice import INPUT_ERROR_IDS, next_step
from batchlane_dev.cli import folder_commands
from batchlane_dev.cli.jobs_commands import exit_code_for


def job(status: str, error: str | None = None, failed: int = 0) -> dict[str, Any]:
    return {"status": status, "pages": {"failed": failed}, "error": {"code": error, "message": "m", "nextStep": next_step(error)} if error else None}


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        (job("completed"), 0),
        (job("completed", "PAGES_FAILED", failed=1), 3),
        (job("failed", "PDF_ENCRYPTED"), 2),  # found by the split after upload: as PDF_EMPTY before it
        (job("failed", "PDF_CORRUPT"), 2),
        (job("failed", "PDF_TOO_COMPLEX"), 2),
        (job("failed", "WORKFLOW_FAILED"), 1),  # not the user's input
        (job("failed", "BUDGET_EXCEEDED"), 1),
        (job("cancelled"), 1),
    ],
)
def test_a_jobs_exit_code_says_whether_its_input_was_refused(answer: dict[str, Any], code: int) -> None:
    assert exit_code_for(answer) == code


@pytest.mark.parametrize(
    ("status", "error", "code"), [("completed", None, 0), ("completed_with_failures", None, 3), ("error", "FOLDER_EMPTY", 2), ("error", "FOLDER_JOB_FAILED", 1)]
)
def test_a_folder_jobs_exit_code_says_whether_the_folder_was_the_users_mistake(status: str, error: str | None, code: int) -> None:
    assert folder_commands.exit_code({"status": status, "error": {"code": error} if error else None}) == code


def test_every_input_error_says_what_to_do_in_its_own_words() -> None:
    generic = next_step("SOMETHING_ELSE")
    assert all(next_step(error_id) != generic for error_id in INPUT_ERROR_IDS)


def test_a_path_that_is_not_there_is_a_usage_error_before_any_stack_is_looked_for(tmp_path: Any) -> None:
    """A typo in the path said "the offline stack is not running" (exit 4); it is the user's input: exit 2, named."""
    from click.testing import CliRunner

    from batchlane_dev.cli.main import main

    missing = tmp_path / "no-such.pdf"
    nowhere = {"BATCHLANE_STATE_HOME": str(tmp_path), "BATCHLANE_API_URL": ""}
    plain = CliRunner().invoke(main, ["convert", str(missing)], env=nowhere)
    assert plain.exit_code == 2 and "no such file or folder" in plain.output, plain.output
    assert "UNREACHABLE" not in plain.output
