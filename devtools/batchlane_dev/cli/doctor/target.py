"""What the doctor checks: the deployed stack's outputs (CloudFormation), or the offline stack's.

A deployed stack is found by name (``--stack-name``) with the caller's credentials; the
offline stack publishes the same output keys in ``<workdir>/state.json`` (no CloudFormation
offline), so every check runs the same code against either.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

REQUIRED_OUTPUTS = ("BucketName", "ServiceRoleArn", "Region", "BatchEventRuleName", "MigrateFunctionName", "LaneSettings")


@dataclass(frozen=True)
class Target:
    name: str
    outputs: dict[str, str]
    offline: bool

    @cached_property
    def lane(self) -> dict[str, str]:
        """The functions' model and batch-lane settings (output LaneSettings)."""
        return dict(json.loads(self.outputs.get("LaneSettings") or "{}"))

    @property
    def model_ids(self) -> list[str]:
        ids = self.lane.get("BATCHLANE_MODEL_IDS") or self.lane.get("BATCHLANE_MODEL_ID") or ""
        return [m for m in ids.split(",") if m]

    @property
    def model_id(self) -> str:
        return self.lane.get("BATCHLANE_MODEL_ID") or self.model_ids[0]

    def setting(self, key: str, default: int) -> int:
        return int(float(self.lane.get(key, default)))

    def missing_outputs(self) -> list[str]:
        return [key for key in REQUIRED_OUTPUTS if not self.outputs.get(key)]


class StackNotFound(Exception):
    pass


def from_cloudformation(cloudformation: Any, stack_name: str) -> Target:
    """DescribeStacks → the outputs (ValidationError when no such stack in this account and region)."""
    from botocore.exceptions import ClientError

    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as exc:
        raise StackNotFound(f"stack {stack_name!r}: {exc.response.get('Error', {}).get('Message', exc)}") from exc
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}
    return Target(name=stack_name, outputs=outputs, offline=False)


def from_offline_state(state: dict[str, Any]) -> Target:
    return Target(name="offline", outputs=dict(state.get("outputs") or {}), offline=True)
