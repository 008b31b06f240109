"""What a chunk run comes to: complete, continue in a fresh invocation, retry later, or aborted.

A pure function of what the run found (docs/architecture.md, "The chunk processor decides, then acts");
the chunk processor carries out the decision (book, keep the partial file, write the result).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import Enum


class ChunkOutcome(Enum):
    COMPLETE = "complete"  # every page has its final result (converted, or failed with a marker)
    CONTINUE = "continue"  # the invocation's time ran out with pages left: a fresh invocation carries on
    RETRY_LATER = "retry_later"  # pages failed for a reason that may pass (throttling): Step Functions retries the chunk
    ABORTED = "aborted"  # the chunk is no longer ours (job cancelled, another attempt took over)


@dataclass(frozen=True)
class ChunkFacts:
    page_numbers: Sequence[int]  # the chunk's pages
    settled: Collection[int]  # pages with a final result, kept from before or from this run
    retryable_failures: int  # pages of this run that failed for a retryable reason
    aborted: bool
    out_of_time: bool
    attempts: int  # claims of the chunk so far, continuations included
    continuations: int  # of those, fresh invocations after running out of time
    max_attempts: int  # throttling attempts a chunk gets (continuations do not count)


@dataclass(frozen=True)
class ChunkDecision:
    outcome: ChunkOutcome
    pages_left: int = 0  # CONTINUE: pages without a final result
    pages_to_retry: int = 0  # RETRY_LATER: pages that failed for a retryable reason


def decide_chunk(facts: ChunkFacts) -> ChunkDecision:
    """Aborted wins; then out of time with pages left; then retryable failures while attempts remain; else complete.

    On the last attempt, retryable failures are final: those pages are marked failed, never dropped.
    """
    if facts.aborted:
        return ChunkDecision(ChunkOutcome.ABORTED)
    left = sum(1 for n in facts.page_numbers if n not in facts.settled)
    if facts.out_of_time and left:
        return ChunkDecision(ChunkOutcome.CONTINUE, pages_left=left)
    if facts.retryable_failures and facts.attempts - facts.continuations < facts.max_attempts:
        return ChunkDecision(ChunkOutcome.RETRY_LATER, pages_to_retry=facts.retryable_failures)
    return ChunkDecision(ChunkOutcome.COMPLETE)
