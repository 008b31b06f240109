"""batch_collect's /tmp holds the largest lane it may spool: every record accepted at the answer cap.

collect spools each accepted answer to /tmp (batch/collect.py) before writing the results; with
Lambda's default 512 MB, a lane of 50,000 long answers ran out of disk ("No space left on device")
and the lane failed to on-demand at full price after Bedrock had billed it.
"""

from __future__ import annotations

import json

import pytest
from aws_cdk import App
from infra_testlib import Synth, camel, context_of_cdk_json

from batchlane.claude import PrimedResult
from batchlane.config import Settings
from deployment import topology
from infra.config import InfraConfig, load

MIB = 1024 * 1024
COLLECT = topology.function("batch_collect")


def _worst_spooled_line(max_tokens: int) -> int:
    """Bytes of collect's spool line for an answer at the cap, in the text that escapes the worst:
    one non-ASCII character a token (CJK), each written as \\uXXXX."""
    answer = PrimedResult("m12c199p9999", "global.anthropic.claude-sonnet-4-5-20250929-v1:0", "f" * 64, "漢" * max_tokens, "end_turn", 99_999, max_tokens)
    return len((json.dumps(answer.to_json()) + "\n").encode())


def _config(**context: object) -> InfraConfig:
    return load(App(context=context).node)


@pytest.mark.parametrize("max_records", [1_000, 20_000, 50_000])
def test_collects_storage_holds_a_lane_of_max_records_answers_at_the_cap(max_records: int) -> None:
    max_tokens = Settings().batchlane_max_tokens
    config = _config(quotas={"maxRecords": max_records})

    mb = config.ephemeral_storage_mb(COLLECT)

    spool_mb = max_records * _worst_spooled_line(max_tokens) / MIB
    assert mb >= spool_mb + 256, f"{max_records} answers of {max_tokens} tokens spool {spool_mb:.0f} MB; /tmp is {mb} MB"
    assert mb <= 10_240, "Lambda's ceiling"


def test_a_lane_too_large_for_lambdas_disk_fails_the_synth() -> None:
    with pytest.raises(ValueError, match=r"Lambda allows \d+ MB"):
        _config(quotas={"maxRecords": 500_000}).ephemeral_storage_mb(COLLECT)


def test_the_deployed_collect_function_gets_that_storage(synth: Synth) -> None:
    props = synth.resources[synth.logical_id(f"Compute/{camel('batch_collect')}")]["Properties"]
    max_records = int(context_of_cdk_json()["quotas"]["maxRecords"])
    spool_mb = max_records * _worst_spooled_line(Settings().batchlane_max_tokens) / MIB

    assert props["EphemeralStorage"]["Size"] >= spool_mb + 256
