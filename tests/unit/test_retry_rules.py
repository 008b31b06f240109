"""Which failed pages a retry's ``errorIds`` select, and how attempts are counted per run."""

from __future__ import annotations

from batchlane.filejob.retry import _attempts_by_chunk, reason_matches


def test_error_ids_match_the_reason_its_short_form_or_an_alias() -> None:
    assert reason_matches("stop_reason=max_tokens", "stop_reason=max_tokens")
    assert reason_matches("stop_reason=max_tokens", "max_tokens")
    assert reason_matches("ThrottlingException", "throttled") and reason_matches("LeaseWaitTimeout", "throttled")
    assert reason_matches("PAGE_TOO_LARGE", "PAGE_TOO_LARGE")
    assert not reason_matches("empty_text", "max_tokens") and not reason_matches("PAGE_TOO_LARGE", "throttled")


def test_attempts_are_counted_per_run_from_the_retry_snapshots_and_the_live_rows() -> None:
    # chunk 0: 3 attempts in the conversion, retried twice (2 attempts, then 1 live); chunk 1 never retried (1 attempt)
    live = {0: 1, 1: 1}  # chunk index → attempts on the live row
    snapshots = [(1, [{"chunkIndex": 0, "attempts": 3}]), (2, [{"chunkIndex": 0, "attempts": 2}])]  # (retry, chunks before it)
    runs = _attempts_by_chunk(live, snapshots)
    assert runs == {(0, 0): 3, (0, 1): 2, (0, 2): 1, (1, 0): 1}
