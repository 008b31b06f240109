"""What a folder job writes where the user (or their receiver) reads it never carries internals (issue 21, point 7)."""

from __future__ import annotations

from batchlane.folders.finish import loop_failure, redacted_spec
from batchlane.folders.spec import parse_spec

CAUSE = '{"errorMessage": "cannot connect to batchlane_app@db.internal.example:5432/batchlane", "stackTrace": ["  File \\"/var/task/x.py\\""]}'


def test_a_failed_loop_is_stored_as_a_clean_id_and_message_never_its_cause() -> None:
    error_id, message = loop_failure({"Error": "StoreUnavailable", "Cause": CAUSE})
    assert error_id == "FOLDER_JOB_FAILED" and "StoreUnavailable" in message
    assert "db.internal" not in message and "batchlane_app" not in message and "stackTrace" not in message
    assert loop_failure({"Error": "States.Timeout", "Cause": CAUSE})[0] == "FOLDER_JOB_TIMED_OUT"
    assert "unknown" in loop_failure({"Error": "x\n" + CAUSE})[1]  # an odd name is not echoed either
    assert loop_failure(None)[0] == "FOLDER_JOB_FAILED"


def test_the_manifest_spec_keeps_header_names_and_drops_their_values() -> None:
    spec = parse_spec(
        {
            "input": {"folder": "s3://docs/in/"},
            "options": {"callbackUrl": "https://example.com/file", "callbackHeaders": {"Authorization": "Bearer file-secret"}},
            "notifications": {"callbackUrl": "https://example.com/hook", "callbackHeaders": {"X-Api-Key": "folder-secret"}},
        }
    ).model_dump(mode="json")
    shown = redacted_spec(spec)
    assert shown["notifications"]["callback_headers"] == {"X-Api-Key": "(redacted)"}
    assert shown["options"]["callbackHeaders"] == {"Authorization": "(redacted)"}
    assert "secret" not in str(shown) and spec["notifications"]["callback_headers"] == {"X-Api-Key": "folder-secret"}  # the stored spec is kept


def test_a_failed_loops_message_names_the_error_only_when_it_is_a_plain_name_of_at_most_64_characters() -> None:
    assert loop_failure({"Error": "States.Timeout"}) == ("FOLDER_JOB_TIMED_OUT", "The folder job's loop timed out; retry the job to go on where it stopped.")
    assert loop_failure({"Error": "Lambda.ServiceException"}) == (
        "FOLDER_JOB_FAILED",
        "The folder job's loop failed after its retries (Lambda.ServiceException); retry the job to go on where it stopped.",
    )
    longest = "E" + "x" * 63
    assert f"({longest})" in loop_failure({"Error": longest})[1]
    for odd in ("E" + "x" * 64, "1Error", "", "Error name"):
        assert "(unknown)" in loop_failure({"Error": odd})[1]
    assert "(unknown)" in loop_failure({})[1]
