"""domain/advice.py: the error object and the next step a user reads (API, console, CLI), word for word."""

from __future__ import annotations

import pytest

from batchlane.domain.advice import INPUT_ERROR_IDS, error_object, is_input_error, next_step, page_next_step

SERVICE = "Not caused by your file: convert it again; if it fails again, give the operator the job id."


def test_an_error_object_carries_the_code_the_message_and_the_next_step_for_that_code() -> None:
    assert error_object("PDF_ENCRYPTED", "The PDF is encrypted.") == {
        "code": "PDF_ENCRYPTED",
        "message": "The PDF is encrypted.",
        "nextStep": "Remove the password (for example: qpdf --decrypt in.pdf out.pdf), then convert the new file.",
    }


def test_an_error_object_without_a_message_has_an_empty_one_and_an_unknown_code_the_services_step() -> None:
    assert error_object("CHUNK_FAILED", None) == {"code": "CHUNK_FAILED", "message": "", "nextStep": SERVICE}


@pytest.mark.parametrize("error_id", [None, ""])
def test_no_error_id_is_no_error_object(error_id: str | None) -> None:
    assert error_object(error_id, "a message with no code") is None


@pytest.mark.parametrize("error_id", [None, "", "SOMETHING_ELSE", "pdf_empty"])
def test_an_id_with_no_sentence_of_its_own_gets_the_services_step(error_id: str | None) -> None:
    assert next_step(error_id) == SERVICE


def test_a_known_id_gets_its_own_sentence() -> None:
    assert next_step("BUDGET_EXCEEDED") == "Your budget for this month does not cover it: wait for next month, or ask an administrator to raise it."


def test_only_the_files_own_faults_are_input_errors() -> None:
    assert all(is_input_error(error_id) for error_id in INPUT_ERROR_IDS) and "PDF_ENCRYPTED" in INPUT_ERROR_IDS
    assert not any(is_input_error(error_id) for error_id in (None, "", "PAGES_FAILED", "BUDGET_EXCEEDED", "CHUNK_FAILED"))


def test_a_failed_pages_next_step_says_whether_a_retry_is_likely_to_help() -> None:
    assert page_next_step(True) == "A retry (on-demand, charged again) is likely to convert it."
    assert page_next_step(False) == "Refused for what the page contains: a retry most likely fails the same way and is charged again."
