"""The offline stack itself: same files, same handlers, rules routed, lifecycle commands."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import boto3

from deployment.topology import STATE_MACHINES

BATCHLANE = Path(sys.executable).with_name("batchlane")


def test_state_machines_are_the_repository_files_with_only_substitutions(stack_factory):
    stack = stack_factory(schedules=False)
    sfn = stack._client("stepfunctions", stack.env["AWS_ENDPOINT_URL"])
    for spec in STATE_MACHINES:
        deployed = json.loads(sfn.describe_state_machine(stateMachineArn=stack.state_machine_arns[spec.name])["definition"])
        assert deployed == json.loads(stack.definition(spec.name))
        assert "${" not in json.dumps(deployed)
        assert set(deployed["States"]) == set(json.loads(stack.definition(spec.name))["States"])


def test_eventbridge_rules_route_matching_events_to_the_handlers(stack_factory):
    stack = stack_factory(schedules=False)
    events = boto3.client("events")
    before = dict(stack.registry.calls)
    events.put_events(
        Entries=[
            {
                "Source": "aws.bedrock",
                "DetailType": "Batch Inference Job State Change",
                "Detail": json.dumps({"batchJobArn": "arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/unknown", "status": "Completed"}),
            }
        ]
    )
    events.put_events(
        Entries=[{"Source": "batchlane", "DetailType": "Conversion Job Parked", "Detail": json.dumps({"jobId": "00000000-0000-0000-0000-000000000000"})}]
    )
    events.put_events(Entries=[{"Source": "somebody.else", "DetailType": "Batch Inference Job State Change", "Detail": "{}"}])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (
        stack.registry.calls.get("batch_callback", 0) > before.get("batch_callback", 0)
        and stack.registry.calls.get("batch_packer", 0) > before.get("batch_packer", 0)
    ):
        time.sleep(0.1)
    assert stack.registry.calls.get("batch_callback", 0) == before.get("batch_callback", 0) + 1, "only the aws.bedrock event matches"
    assert stack.registry.calls.get("batch_packer", 0) == before.get("batch_packer", 0) + 1


def test_local_up_status_down(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "BATCH", "DATABASE_URL"))}
    workdir = str(tmp_path / "stack")
    up = subprocess.run([str(BATCHLANE), "local", "up", "--workdir", workdir], capture_output=True, text=True, env=env, timeout=180)
    try:
        assert up.returncode == 0, up.stderr[-2000:]
        assert "AWS_ENDPOINT_URL=http://127.0.0.1:" in up.stdout
        assert "starting from empty tables" in up.stdout, "says what a restart keeps: nothing"
        status = subprocess.run([str(BATCHLANE), "local", "status", "--workdir", workdir], capture_output=True, text=True, env=env, timeout=60)
        assert status.returncode == 0 and "running" in status.stdout
        state = json.loads((tmp_path / "stack" / "state.json").read_text())
        password = urlsplit(state["env"]["DATABASE_URL"]).password
        assert password and password not in up.stdout + status.stdout, "a terminal never shows the database password"
        assert "DATABASE_URL=postgresql://" in up.stdout and ":***@" in up.stdout
        assert stat.S_IMODE((tmp_path / "stack" / "state.json").stat().st_mode) == 0o600, "state.json holds it: owner only"
        s3 = boto3.client("s3", endpoint_url=state["env"]["AWS_ENDPOINT_URL"], region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
        assert "batchlane-offline" in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    finally:
        down = subprocess.run([str(BATCHLANE), "local", "down", "--workdir", workdir], capture_output=True, text=True, env=env, timeout=60)
    assert down.returncode == 0 and "stopped" in down.stdout
    after = subprocess.run([str(BATCHLANE), "local", "status", "--workdir", workdir], capture_output=True, text=True, env=env, timeout=60)
    assert after.returncode == 1 and "not running" in after.stdout
