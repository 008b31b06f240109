"""Deterministic Bedrock job names and client tokens: a retried submit adopts the job it made."""

from __future__ import annotations

import re

_JOB_NAME = re.compile(r"^[a-zA-Z0-9]{1,63}(-*[a-zA-Z0-9\+\-\.]){0,63}$")


def bedrock_job_name(lane_id: str) -> str:
    name = f"batchlane-{lane_id}"
    assert _JOB_NAME.match(name), name
    return name


def client_request_token(lane_id: str) -> str:
    return f"batchlane-{lane_id}"


def job_id_from_arn(arn: str) -> str:
    """The Bedrock job id: the last segment of its ARN (also the output folder's name)."""
    return arn.rpartition("/")[2]
