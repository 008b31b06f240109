"""The chunk processor's decision, one outcome at a time (domain/chunk_outcome.py)."""

from __future__ import annotations

from dataclasses import replace

from batchlane.domain.chunk_outcome import ChunkDecision, ChunkFacts, ChunkOutcome, decide_chunk

PAGES = tuple(range(1, 11))
ALL_DONE = ChunkFacts(
    page_numbers=PAGES, settled=set(PAGES), retryable_failures=0, aborted=False, out_of_time=False, attempts=1, continuations=0, max_attempts=3
)


def test_every_page_settled_completes() -> None:
    assert decide_chunk(ALL_DONE) == ChunkDecision(ChunkOutcome.COMPLETE)


def test_a_chunk_that_is_no_longer_ours_is_aborted_whatever_else_happened() -> None:
    facts = replace(ALL_DONE, aborted=True, out_of_time=True, settled={1}, retryable_failures=2)
    assert decide_chunk(facts).outcome is ChunkOutcome.ABORTED


def test_out_of_time_with_pages_left_continues_and_says_how_many() -> None:
    facts = replace(ALL_DONE, out_of_time=True, settled={1, 2, 3}, retryable_failures=1)
    assert decide_chunk(facts) == ChunkDecision(ChunkOutcome.CONTINUE, pages_left=7)


def test_out_of_time_with_nothing_left_completes() -> None:
    assert decide_chunk(replace(ALL_DONE, out_of_time=True)).outcome is ChunkOutcome.COMPLETE


def test_retryable_failures_are_retried_later_while_attempts_remain() -> None:
    facts = replace(ALL_DONE, settled=set(PAGES) - {4, 5}, retryable_failures=2, attempts=2)
    assert decide_chunk(facts) == ChunkDecision(ChunkOutcome.RETRY_LATER, pages_to_retry=2)


def test_on_the_last_attempt_retryable_failures_are_final_and_the_chunk_completes() -> None:
    facts = replace(ALL_DONE, settled=set(PAGES) - {4}, retryable_failures=1, attempts=3)
    assert decide_chunk(facts).outcome is ChunkOutcome.COMPLETE  # page 4 is marked failed, never dropped


def test_continuations_do_not_use_up_the_retry_attempts() -> None:
    facts = replace(ALL_DONE, settled=set(PAGES) - {4}, retryable_failures=1, attempts=7, continuations=5)
    assert decide_chunk(facts).outcome is ChunkOutcome.RETRY_LATER
