"""batch_collect's /tmp, sized from the largest lane (batchlane.domain.limits): what infra gives the function."""

from __future__ import annotations

import pytest

from batchlane.domain.limits import (
    LAMBDA_EPHEMERAL_MB,
    SPOOL_BYTES_PER_ANSWER_TOKEN,
    SPOOL_HEADROOM_MB,
    SPOOL_RECORD_OVERHEAD_BYTES,
    collect_ephemeral_mb,
    collect_spool_bytes,
)

MB = 1024 * 1024


def test_the_spool_holds_every_record_at_the_answer_cap() -> None:
    assert collect_spool_bytes(1, 1) == SPOOL_BYTES_PER_ANSWER_TOKEN + SPOOL_RECORD_OVERHEAD_BYTES
    assert collect_spool_bytes(50_000, 8_192) == 50_000 * (8_192 * SPOOL_BYTES_PER_ANSWER_TOKEN + SPOOL_RECORD_OVERHEAD_BYTES)


def test_the_function_gets_its_spool_rounded_up_to_a_megabyte_plus_headroom() -> None:
    # 512 tokens an answer: 4,096 bytes a record, so 256 records spool exactly 1 MB.
    assert collect_spool_bytes(256, 512) == MB
    assert collect_ephemeral_mb(256, 512) == 1 + SPOOL_HEADROOM_MB
    assert collect_ephemeral_mb(257, 512) == 2 + SPOOL_HEADROOM_MB  # a byte past is a whole megabyte more
    assert collect_ephemeral_mb(0, 512) == max(LAMBDA_EPHEMERAL_MB[0], SPOOL_HEADROOM_MB)  # never under Lambda's default
    spool = collect_spool_bytes(50_000, 8_192)
    assert collect_ephemeral_mb(50_000, 8_192) == -(-spool // MB) + SPOOL_HEADROOM_MB


def test_a_lane_whose_spool_lambda_cannot_hold_is_refused_naming_the_limit() -> None:
    high = LAMBDA_EPHEMERAL_MB[1]
    records = (high - SPOOL_HEADROOM_MB) * MB // (8_192 * SPOOL_BYTES_PER_ANSWER_TOKEN + SPOOL_RECORD_OVERHEAD_BYTES)
    assert collect_ephemeral_mb(records, 8_192) <= high
    with pytest.raises(ValueError, match=f"Lambda allows {high} MB of /tmp"):
        collect_ephemeral_mb(records * 2, 8_192)
